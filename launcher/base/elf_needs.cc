#include "launcher/base/elf_needs.h"

#include <elf.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <cstdint>
#include <cstring>
#include <deque>
#include <fstream>
#include <set>
#include <sstream>

#include "common/env.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

// Reads fixed-size integers of either byte order from the file's bytes, each
// read checked against its end.
class ElfBytes {
 public:
  ElfBytes(std::string_view bytes, bool big_endian) : bytes_(bytes), big_endian_(big_endian) {}

  bool Has(uint64_t offset, uint64_t size) const { return offset <= bytes_.size() && size <= bytes_.size() - offset; }

  uint64_t Uint(uint64_t offset, int size) const {
    uint64_t v = 0;
    for (int i = 0; i < size; ++i) {
      const uint64_t byte = static_cast<unsigned char>(bytes_[offset + (big_endian_ ? i : size - 1 - i)]);
      v = (v << 8) | byte;
    }
    return v;
  }

  // The NUL-terminated string at `offset`, or nullopt when it runs off the end.
  std::optional<std::string> CString(uint64_t offset) const {
    if (offset >= bytes_.size()) return std::nullopt;
    const size_t end = bytes_.find('\0', offset);
    if (end == std::string_view::npos) return std::nullopt;
    return std::string(bytes_.substr(offset, end - offset));
  }

 private:
  std::string_view bytes_;
  bool big_endian_;
};

// Field sizes and offsets of the two ELF classes (elf.h's Elf32_*/Elf64_*).
struct ElfLayout {
  int word;  // address and offset size: 4 or 8
  uint64_t phoff_at, phentsize_at, phnum_at;
  uint64_t p_type, p_offset, p_vaddr, p_filesz;
  uint64_t dyn_size;
};
constexpr ElfLayout kElf32{4, 28, 42, 44, 0, 4, 8, 16, 8};
constexpr ElfLayout kElf64{8, 32, 54, 56, 0, 8, 16, 32, 16};

std::vector<std::string> SearchPath(const std::string& list) {
  std::vector<std::string> dirs = Split(list, ':');
  std::erase(dirs, std::string());
  return dirs;
}

Status Malformed(const std::string& what) { return InvalidArgument("malformed ELF file: " + what); }

}  // namespace

StatusOr<ElfDynamic> ParseElfDynamic(std::string_view bytes) {
  ElfDynamic out;
  if (bytes.size() < EI_NIDENT || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) return out;
  out.is_elf = true;
  const unsigned char elf_class = static_cast<unsigned char>(bytes[EI_CLASS]);
  const unsigned char data = static_cast<unsigned char>(bytes[EI_DATA]);
  if ((elf_class != ELFCLASS32 && elf_class != ELFCLASS64) || (data != ELFDATA2LSB && data != ELFDATA2MSB)) {
    return Malformed("unknown class or byte order");
  }
  const ElfLayout& l = elf_class == ELFCLASS64 ? kElf64 : kElf32;
  const ElfBytes b(bytes, data == ELFDATA2MSB);
  if (!b.Has(0, l.phnum_at + 2)) return Malformed("truncated header");
  const uint64_t phoff = b.Uint(l.phoff_at, l.word);
  const uint64_t phentsize = b.Uint(l.phentsize_at, 2);
  const uint64_t phnum = b.Uint(l.phnum_at, 2);
  if (phnum == 0) return out;
  if (phentsize < l.p_filesz + l.word || !b.Has(phoff, phentsize * phnum)) return Malformed("program headers out of range");

  // The dynamic segment, and the loaded segments that map DT_STRTAB's address to a file offset.
  struct Segment {
    uint64_t offset, vaddr, filesz;
  };
  std::vector<Segment> loads;
  std::optional<Segment> dynamic;
  for (uint64_t i = 0; i < phnum; ++i) {
    const uint64_t at = phoff + i * phentsize;
    const Segment s{b.Uint(at + l.p_offset, l.word), b.Uint(at + l.p_vaddr, l.word), b.Uint(at + l.p_filesz, l.word)};
    const uint64_t type = b.Uint(at + l.p_type, 4);
    if (type == PT_LOAD) loads.push_back(s);
    if (type == PT_DYNAMIC) dynamic = s;
  }
  if (!dynamic) return out;  // linked statically
  if (!b.Has(dynamic->offset, dynamic->filesz)) return Malformed("dynamic segment out of range");

  std::optional<uint64_t> strtab_addr;
  std::vector<std::pair<int64_t, uint64_t>> strings;  // (tag, string offset)
  for (uint64_t at = dynamic->offset; at + l.dyn_size <= dynamic->offset + dynamic->filesz; at += l.dyn_size) {
    const auto tag = static_cast<int64_t>(b.Uint(at, l.word));
    const uint64_t value = b.Uint(at + l.word, l.word);
    if (tag == DT_NULL) break;
    if (tag == DT_STRTAB) strtab_addr = value;
    if (tag == DT_NEEDED || tag == DT_RPATH || tag == DT_RUNPATH) strings.emplace_back(tag, value);
  }
  if (strings.empty()) return out;
  if (!strtab_addr) return Malformed("no string table (DT_STRTAB)");
  std::optional<uint64_t> strtab;
  for (const Segment& s : loads) {
    if (*strtab_addr >= s.vaddr && *strtab_addr - s.vaddr < s.filesz) strtab = s.offset + (*strtab_addr - s.vaddr);
  }
  if (!strtab) return Malformed("string table address outside every loaded segment");
  for (const auto& [tag, offset] : strings) {
    const auto text = offset <= UINT64_MAX - *strtab ? b.CString(*strtab + offset) : std::nullopt;
    if (!text) return Malformed("a dynamic entry's string runs off the file");
    if (tag == DT_NEEDED) out.needed.push_back(*text);
    if (tag == DT_RPATH) out.rpath = SearchPath(*text);
    if (tag == DT_RUNPATH) out.runpath = SearchPath(*text);
  }
  return out;
}

std::vector<std::filesystem::path> LoaderDefaultDirectories() {
  std::vector<std::filesystem::path> dirs;
  std::set<std::string> seen_files;
  // /etc/ld.so.conf: one directory a line, "include GLOB" lines, '#' comments.
  std::function<void(const std::string&, int)> read_conf = [&](const std::string& file, int depth) {
    if (depth > 8 || !seen_files.insert(file).second) return;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      line = Trim(line.substr(0, line.find('#')));
      if (line.empty()) continue;
      if (line.rfind("include", 0) == 0 && line.size() > 7 && std::isspace(static_cast<unsigned char>(line[7]))) {
        std::string pattern(Trim(line.substr(7)));
        if (!pattern.empty() && pattern[0] != '/') pattern = std::filesystem::path(file).parent_path() / pattern;
        glob_t g{};
        if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
          for (size_t i = 0; i < g.gl_pathc; ++i) read_conf(g.gl_pathv[i], depth + 1);
        }
        globfree(&g);
      } else if (line[0] == '/') {
        dirs.emplace_back(line);
      }
    }
  };
  read_conf("/etc/ld.so.conf", 0);
  for (const char* d : {"/lib64", "/usr/lib64", "/lib", "/usr/lib"}) dirs.emplace_back(d);
  return dirs;
}

namespace {

std::string WithOrigin(std::string dir, const std::filesystem::path& origin) {
  for (const std::string token : {"${ORIGIN}", "$ORIGIN"}) {
    for (size_t at; (at = dir.find(token)) != std::string::npos;) dir.replace(at, token.size(), origin.string());
  }
  return dir;
}

// Mapped, not read: only the pages of the headers and the dynamic section
// are touched, so a program of gigabytes costs what a small one does.
StatusOr<ElfDynamic> ReadElfDynamic(const std::filesystem::path& file) {
  const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound("cannot read " + file.string() + ": " + std::strerror(errno));
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return InvalidArgument(file.string() + " is not a regular file");
  }
  if (st.st_size == 0) {
    close(fd);
    return ElfDynamic{};
  }
  void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return NotFound("cannot map " + file.string() + ": " + std::strerror(errno));
  auto parsed = ParseElfDynamic(std::string_view(static_cast<const char*>(map), static_cast<size_t>(st.st_size)));
  munmap(map, static_cast<size_t>(st.st_size));
  if (!parsed.ok()) return InvalidArgument(file.string() + ": " + parsed.status().message());
  return parsed;
}

// Where the loader would find `name` for an object with `dynamic`, found at
// `object` (empty when nowhere).
std::filesystem::path Locate(const std::string& name, const ElfDynamic& dynamic, const std::filesystem::path& object,
                             const std::vector<std::filesystem::path>& defaults) {
  if (name.find('/') != std::string::npos) return std::filesystem::exists(name) ? std::filesystem::path(name) : std::filesystem::path();
  const std::filesystem::path origin = std::filesystem::absolute(object).parent_path();
  std::vector<std::string> dirs;
  if (dynamic.runpath.empty()) dirs.insert(dirs.end(), dynamic.rpath.begin(), dynamic.rpath.end());
  for (const std::string& d : SearchPath(EnvOr("LD_LIBRARY_PATH", ""))) dirs.push_back(d);
  dirs.insert(dirs.end(), dynamic.runpath.begin(), dynamic.runpath.end());
  for (const auto& d : defaults) dirs.push_back(d.string());
  for (const std::string& d : dirs) {
    const std::filesystem::path candidate = std::filesystem::path(WithOrigin(d, origin)) / name;
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return {};
}

}  // namespace

StatusOr<std::optional<NeededLibrary>> FindNeededLibrary(const std::filesystem::path& program,
                                                         const std::function<bool(const NeededLibrary&)>& visit,
                                                         int max_libraries) {
  GL_ASSIGN_OR_RETURN(ElfDynamic first, ReadElfDynamic(program));
  const std::vector<std::filesystem::path> defaults = LoaderDefaultDirectories();
  struct Pending {
    std::filesystem::path object;
    ElfDynamic dynamic;
  };
  std::deque<Pending> queue{{program, std::move(first)}};
  std::set<std::string> seen;
  int visited = 0;
  while (!queue.empty() && visited < max_libraries) {
    Pending p = std::move(queue.front());
    queue.pop_front();
    for (const std::string& name : p.dynamic.needed) {
      if (!seen.insert(name).second) continue;
      NeededLibrary lib{name, Locate(name, p.dynamic, p.object, defaults), p.object};
      if (visit(lib)) return std::optional<NeededLibrary>(lib);
      if (++visited >= max_libraries) break;
      if (lib.path.empty()) continue;
      // A library that cannot be read or parsed is only not followed: the
      // loader, not this walk, has the last word on it.
      if (auto dynamic = ReadElfDynamic(lib.path); dynamic.ok()) queue.push_back({lib.path, std::move(*dynamic)});
    }
  }
  return std::optional<NeededLibrary>();
}

}  // namespace gpulaunch
