// The shared libraries a program needs, read from its ELF dynamic section
// (DT_NEEDED) and followed through the libraries themselves, found the way
// the dynamic loader finds them: DT_RPATH, LD_LIBRARY_PATH, DT_RUNPATH (with
// $ORIGIN), the directories of /etc/ld.so.conf, then the system's own.
// Nothing is loaded or run: a program is only read.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpulaunch {

// What one ELF file's dynamic section says. A file that is not ELF (a
// script), or has no dynamic section (a static program), needs nothing.
struct ElfDynamic {
  bool is_elf = false;
  std::vector<std::string> needed;   // DT_NEEDED, in order
  std::vector<std::string> rpath;    // DT_RPATH, split at ':'
  std::vector<std::string> runpath;  // DT_RUNPATH, split at ':'
};

// Parses `bytes`, the whole file. A truncated or inconsistent ELF file is an
// error naming what is wrong; every offset is checked against the bytes.
StatusOr<ElfDynamic> ParseElfDynamic(std::string_view bytes);

// One library found on the way, and the object that needs it.
struct NeededLibrary {
  std::string name;                 // as DT_NEEDED says it: "libmpi.so.40"
  std::filesystem::path path;       // where it was found; empty when not found
  std::filesystem::path needed_by;  // the program, or the library that needs it
};

// Walks the program's libraries breadth-first (its own DT_NEEDED first),
// each library once, calling `visit` for each until it returns true (then
// that library is returned) or `max_libraries` were seen. nullopt when none
// matched. `program` must be a readable path.
StatusOr<std::optional<NeededLibrary>> FindNeededLibrary(const std::filesystem::path& program,
                                                         const std::function<bool(const NeededLibrary&)>& visit,
                                                         int max_libraries = 512);

// The default directories the loader searches after the paths a file names:
// /etc/ld.so.conf's (with its includes), then the system's library folders.
std::vector<std::filesystem::path> LoaderDefaultDirectories();

}  // namespace gpulaunch
