#include "launcher/engine/program_mpi.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/env.h"
#include "common/strings.h"
#include "launcher/base/elf_needs.h"

namespace gpulaunch {
namespace {

// "libmpi.so.40" -> "40"; "" when the name has no version after ".so.".
std::string_view SoMajor(std::string_view name) {
  const size_t so = name.find(".so.");
  if (so == std::string_view::npos) return {};
  std::string_view rest = name.substr(so + 4);
  return rest.substr(0, rest.find('.'));
}

// The path exec would run for `program`: as given when it names a folder,
// else the first executable of that name in PATH.
std::optional<std::filesystem::path> ExecutablePath(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    if (access(program.c_str(), R_OK) == 0) return std::filesystem::path(program);
    return std::nullopt;
  }
  for (const std::string& dir : Split(EnvOr("PATH", ""), ':')) {
    const std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : dir) / program;
    if (access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) return candidate;
  }
  return std::nullopt;
}

}  // namespace

std::string MpiFamilyName(MpiFamily family) {
  return family == MpiFamily::kOpenMpi ? "Open MPI" : "MPICH ABI (MPICH, Intel MPI, MVAPICH)";
}

std::optional<MpiFamily> MpiFamilyOfLibrary(std::string_view name) {
  // The MPICH ABI: libmpi.so.12 and its Fortran and C++ kin (MPICH 3.1 and
  // later, Intel MPI 5 and later, MVAPICH2), MPICH's own names, Cray's.
  if (StartsWith(name, "libmpich") || StartsWith(name, "libmpi_cray")) {
    return MpiFamily::kMpich;
  }
  const std::string_view major = SoMajor(name);
  for (std::string_view base : {"libmpi.so.", "libmpifort.so.", "libmpicxx.so."}) {
    if (StartsWith(name, base) && major == "12") return MpiFamily::kMpich;
  }
  // Open MPI: libmpi.so.40 (4.x, 5.x), .20 (2.x, 3.x), and the libraries
  // only it ships.
  if (StartsWith(name, "libmpi.so.") && !major.empty()) return MpiFamily::kOpenMpi;
  for (std::string_view ompi : {"libmpi_cxx.so", "libmpi_mpifh.so", "libmpi_usempi", "libopen-pal.so", "libopen-rte.so",
                                "libprrte.so"}) {
    if (StartsWith(name, ompi)) return MpiFamily::kOpenMpi;
  }
  return std::nullopt;
}

std::string ProgramMpi::Describe(const std::string& program) const {
  if (!family) return program + ": " + why_none;
  std::string text = program + " links " + library;
  if (!needed_by.empty()) text += " (through " + needed_by + ")";
  return text + ": " + MpiFamilyName(*family);
}

ProgramMpi ReadProgramMpi(const std::string& program) {
  ProgramMpi out;
  const auto path = ExecutablePath(program);
  if (!path) {
    out.why_none = "not found on this host, so no MPI read from it";
    return out;
  }
  {
    std::ifstream in(*path, std::ios::binary);
    char head[2] = {0, 0};
    in.read(head, 2);
    if (head[0] == '#' && head[1] == '!') {
      out.why_none = "a script, so no MPI preference";
      return out;
    }
  }
  auto found = FindNeededLibrary(*path, [](const NeededLibrary& lib) { return MpiFamilyOfLibrary(lib.name).has_value(); });
  if (!found.ok()) {
    out.why_none = "not read (" + found.status().message() + "), so no MPI preference";
    return out;
  }
  if (!*found) {
    out.why_none = "links no MPI library, so no MPI preference";
    return out;
  }
  out.family = MpiFamilyOfLibrary((*found)->name);
  out.library = (*found)->name;
  if ((*found)->needed_by != *path) out.needed_by = (*found)->needed_by.string();
  return out;
}

}  // namespace gpulaunch
