// Which MPI a program links, read from its ELF dynamic section and followed
// through its libraries (launcher/base/elf_needs.h): Open MPI, or the MPICH
// ABI shared by MPICH, Intel MPI, MVAPICH and Cray MPICH. An engine starts
// ranks that one MPI can join (Engine::StartsMpi); a program linking the
// other would run as N singletons.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpulaunch {

enum class MpiFamily { kOpenMpi, kMpich };

// "Open MPI", "MPICH ABI (MPICH, Intel MPI, MVAPICH)".
std::string MpiFamilyName(MpiFamily family);

// The family a library belongs to by its name as DT_NEEDED gives it:
// libmpi.so.40 (and libmpi.so.20, libopen-pal, libmpi_mpifh ...) is Open
// MPI; libmpi.so.12 and libmpich*, libmpifort.so.12, libmpi_cray are the
// MPICH ABI. nullopt for any other library.
std::optional<MpiFamily> MpiFamilyOfLibrary(std::string_view name);

struct ProgramMpi {
  std::optional<MpiFamily> family;  // nullopt: no preference
  std::string library;              // the MPI library found, e.g. "libmpich.so.12"
  std::string needed_by;            // the program, or the library of it that needs it
  std::string why_none;             // without a family: why (a script, links no MPI, not found here)

  // One line for --dry-run and errors: "./hello links libmpich.so.12 (MPICH ABI ...)".
  std::string Describe(const std::string& program) const;
};

// Reads `program` (a path, or a name looked up in PATH as exec does). Never
// fails: what cannot be read is no preference, with the reason.
ProgramMpi ReadProgramMpi(const std::string& program);

}  // namespace gpulaunch
