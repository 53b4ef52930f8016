#include "launcher/check/storage_probe.h"

#include "common/env.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "launcher/base/fd_io.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

constexpr size_t kChunk = 1 << 20;

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

uint64_t Fnv(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

// The bytes of chunk `index` of `host`'s file for this token.
void FillChunk(const std::string& token, const std::string& host, uint64_t index, char* out, size_t n) {
  uint64_t x = Fnv(token + "/" + host) ^ (index * 0x9e3779b97f4a7c15ULL);
  if (x == 0) x = 1;
  for (size_t i = 0; i < n; i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(out + i, &x, std::min<size_t>(8, n - i));
  }
}

std::string FileOf(const std::string& path, const std::string& token, const std::string& host) {
  return StorageScratchDir(path, token) + "/" + host + ".dat";
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// Reads the whole file and compares it with what `writer` wrote:
// "ok", "missing" or "different".
std::string Verify(const std::string& file, const std::string& token, const std::string& writer, uint64_t bytes) {
  const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return errno == ENOENT ? "missing" : "unreadable";
  std::vector<char> got(kChunk), want(kChunk);
  std::string verdict = "ok";
  for (uint64_t at = 0, index = 0; at < bytes && verdict == "ok"; at += kChunk, ++index) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, bytes - at));
    size_t have = 0;
    while (have < n) {
      const ssize_t r = read(fd, got.data() + have, n - have);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      have += static_cast<size_t>(r);
    }
    FillChunk(token, writer, index, want.data(), n);
    if (have != n || std::memcmp(got.data(), want.data(), n) != 0) verdict = "different";
  }
  char extra;
  if (verdict == "ok" && read(fd, &extra, 1) > 0) verdict = "different";  // longer than written
  close(fd);
  return verdict;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::map<std::string, std::string> Fields(const std::string& line) {
  std::map<std::string, std::string> kv;
  std::istringstream in(line);
  std::string word;
  in >> word;  // the kind
  while (in >> word) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos) continue;
    if (word.substr(0, eq) == "error") {  // free text to the end of the line
      std::string rest;
      std::getline(in, rest);
      kv["error"] = word.substr(eq + 1) + rest;
      break;
    }
    kv[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return kv;
}

// The probe's line among whatever else the engine printed.
StatusOr<std::string> FindLine(const std::string& output, const std::string& kind) {
  for (const std::string& line : Split(output, '\n')) {
    if (line.rfind(kind + " ", 0) == 0) return line;
  }
  return InvalidArgument("no '" + kind + "' line in the probe's output");
}

double Num(const std::map<std::string, std::string>& kv, const std::string& key) {
  auto it = kv.find(key);
  return it == kv.end() ? 0 : std::strtod(it->second.c_str(), nullptr);
}

std::string OneLine(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

// Writes `host`'s file (fsynced), then reads it back from the storage, not
// from the page cache: the MiB/s of each into `r`, or its error.
void TimeWriteAndReadBack(const std::string& path, const std::string& token, const std::string& host, uint64_t bytes,
                          StorageWriteResult& r) {
  const std::string file = FileOf(path, token, host);
  std::vector<char> chunk(kChunk);
  auto start = Clock::now();
  // New, never a file or link that was there before (docs/security.md).
  int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    r.error = Errno("cannot create " + file);
    return;
  }
  for (uint64_t at = 0, index = 0; at < bytes; at += kChunk, ++index) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, bytes - at));
    FillChunk(token, host, index, chunk.data(), n);
    if (!WriteAll(fd, chunk.data(), n)) {
      r.error = Errno("cannot write " + file);
      close(fd);
      return;
    }
  }
  if (fsync(fd) != 0) {
    r.error = Errno("fsync of " + file + " failed");
    close(fd);
    return;
  }
  const double write_s = Since(start);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  start = Clock::now();
  const std::string back = Verify(file, token, host, bytes);
  const double read_s = Since(start);
  if (back != "ok") {
    r.error = "reading back " + file + " right after writing it: " + back;
    return;
  }
  const double mib = static_cast<double>(bytes) / (1 << 20);
  r.write_mibs = mib / std::max(write_s, 1e-9);
  r.read_mibs = mib / std::max(read_s, 1e-9);
}

// The median time of a create, a stat and an unlink of `files` empty files
// in `dir`, into `r`, or its error.
void TimeMetadata(const std::string& dir, const std::string& host, int files, StorageWriteResult& r) {
  std::vector<double> create_us, stat_us, unlink_us;
  for (int i = 0; i < files; ++i) {
    const std::string name = dir + "/meta-" + host + "-" + std::to_string(i);
    auto t = Clock::now();
    const int m = open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (m < 0) {
      r.error = Errno("cannot create " + name);
      return;
    }
    close(m);
    create_us.push_back(Since(t) * 1e6);
    struct stat st {};
    t = Clock::now();
    if (stat(name.c_str(), &st) != 0) {
      r.error = Errno("cannot stat " + name);
      return;
    }
    stat_us.push_back(Since(t) * 1e6);
    t = Clock::now();
    if (unlink(name.c_str()) != 0) {
      r.error = Errno("cannot unlink " + name);
      return;
    }
    unlink_us.push_back(Since(t) * 1e6);
  }
  r.create_us = Median(create_us);
  r.stat_us = Median(stat_us);
  r.unlink_us = Median(unlink_us);
}

}  // namespace

std::string StorageScratchDir(const std::string& path, const std::string& token) {
  return path + "/.gpulaunch-storage-" + token;
}

StorageWriteResult StorageWrite(const std::string& path, const std::string& token, const std::string& host,
                                uint64_t bytes, int metadata_files) {
  StorageWriteResult r;
  r.host = host;
  const std::string dir = StorageScratchDir(path, token);
  if (mkdir(dir.c_str(), 0700) != 0) {
    // Another host of this run may have made it on a shared filesystem: then
    // it is a real folder of this user's that only this user can write (the
    // token is random and not in any argv). Anything else was not made by
    // this run and is refused.
    struct stat about {};
    if (errno != EEXIST) {
      r.error = Errno("cannot create " + dir);
      return r;
    }
    if (lstat(dir.c_str(), &about) != 0 || !S_ISDIR(about.st_mode) || about.st_uid != geteuid() ||
        (about.st_mode & 022) != 0) {
      r.error = dir + " already exists and is not this check's own folder (a link, another user's, or writable by "
                      "others): refusing to write there";
      return r;
    }
  }
  TimeWriteAndReadBack(path, token, host, bytes, r);
  if (r.error.empty()) TimeMetadata(dir, host, metadata_files, r);
  return r;
}

StorageReadResult StorageRead(const std::string& path, const std::string& token, const std::string& host,
                              const std::vector<std::string>& writers, uint64_t bytes) {
  StorageReadResult r;
  r.host = host;
  for (const std::string& w : writers) r.seen[w] = Verify(FileOf(path, token, w), token, w, bytes);
  return r;
}

Status StorageClean(const std::string& path, const std::string& token, const std::string& host) {
  const std::string file = FileOf(path, token, host);
  if (unlink(file.c_str()) != 0 && errno != ENOENT) return FailedPrecondition(Errno("cannot remove " + file));
  rmdir(StorageScratchDir(path, token).c_str());  // fails while other hosts' files remain: fine
  return Status::Ok();
}

std::string FormatStorageLine(const StorageWriteResult& r) {
  if (!r.error.empty()) return "storage-write host=" + r.host + " error=" + OneLine(r.error);
  char buf[256];
  std::snprintf(buf, sizeof buf, " write_mibs=%.1f read_mibs=%.1f create_us=%.1f stat_us=%.1f unlink_us=%.1f",
                r.write_mibs, r.read_mibs, r.create_us, r.stat_us, r.unlink_us);
  return "storage-write host=" + r.host + buf;
}

std::string FormatStorageLine(const StorageReadResult& r) {
  if (!r.error.empty()) return "storage-read host=" + r.host + " error=" + OneLine(r.error);
  std::vector<std::string> seen;
  for (const auto& [writer, verdict] : r.seen) seen.push_back(writer + ":" + verdict);
  return "storage-read host=" + r.host + " seen=" + Join(seen, ",");
}

StatusOr<StorageWriteResult> ParseStorageWriteLine(const std::string& output) {
  GL_ASSIGN_OR_RETURN(std::string line, FindLine(output, "storage-write"));
  auto kv = Fields(line);
  StorageWriteResult r;
  r.host = kv["host"];
  r.error = kv["error"];
  r.write_mibs = Num(kv, "write_mibs");
  r.read_mibs = Num(kv, "read_mibs");
  r.create_us = Num(kv, "create_us");
  r.stat_us = Num(kv, "stat_us");
  r.unlink_us = Num(kv, "unlink_us");
  return r;
}

StatusOr<StorageReadResult> ParseStorageReadLine(const std::string& output) {
  GL_ASSIGN_OR_RETURN(std::string line, FindLine(output, "storage-read"));
  auto kv = Fields(line);
  StorageReadResult r;
  r.host = kv["host"];
  r.error = kv["error"];
  for (const std::string& entry : Split(kv["seen"], ',')) {
    const size_t colon = entry.rfind(':');
    if (colon != std::string::npos) r.seen[entry.substr(0, colon)] = entry.substr(colon + 1);
  }
  return r;
}

int RunStorageProbe(const std::vector<std::string>& args) {
  // write PATH HOST BYTES | read PATH HOST BYTES WRITER,... | clean PATH HOST, the token in
  // kStorageTokenEnv: it names the scratch folder, so it stays out of argv (ps shows argv to all).
  const std::optional<std::string> token = GetEnv(kStorageTokenEnv);
  if (!token || token->size() < 16 || token->find_first_not_of("0123456789abcdef") != std::string::npos) {
    std::cerr << "gpulaunch-probe storage: " << kStorageTokenEnv << " is not set (started by gpulaunch check --storage)\n";
    return 2;
  }
  std::vector<std::string> a = args;
  if (a.size() >= 2) a.insert(a.begin() + 2, *token);  // where the steps below take it
  const auto bytes = a.size() >= 5 ? ParseInt(a[4]) : std::nullopt;
  if (a.size() >= 5 && a[0] == "write" && bytes && *bytes > 0) {
    std::cout << FormatStorageLine(StorageWrite(a[1], a[2], a[3], static_cast<uint64_t>(*bytes))) << "\n";
    return 0;
  }
  if (a.size() == 6 && a[0] == "read" && bytes && *bytes > 0) {
    std::cout << FormatStorageLine(StorageRead(a[1], a[2], a[3], Split(a[5], ','), static_cast<uint64_t>(*bytes)))
              << "\n";
    return 0;
  }
  if (a.size() == 4 && a[0] == "clean") {
    const Status s = StorageClean(a[1], a[2], a[3]);
    std::cout << "storage-clean host=" << a[3] << (s.ok() ? "" : " error=" + OneLine(s.message())) << "\n";
    return 0;
  }
  std::cerr << "usage: gpulaunch-probe storage write PATH HOST BYTES | read PATH HOST BYTES HOSTS | "
               "clean PATH HOST (with " << kStorageTokenEnv << " set)\n";
  return 2;
}

}  // namespace gpulaunch
