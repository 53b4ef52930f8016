#include "common/strings.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>

namespace gpulaunch {

std::string_view Trim(std::string_view s) {
  const char* ws = " \t\r\n";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::vector<std::string> SplitOutsideBrackets(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == sep && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::optional<int64_t> ParseInt(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s[0] == '+') return std::nullopt;
  return v;
}

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

std::optional<std::string_view> Words::Next() {
  while (at_ < text_.size() && IsSpace(text_[at_])) ++at_;
  if (at_ == text_.size()) return std::nullopt;
  const size_t start = at_;
  while (at_ < text_.size() && !IsSpace(text_[at_])) ++at_;
  return text_.substr(start, at_ - start);
}

std::string_view Words::RestOfLine() {
  if (at_ < text_.size() && text_[at_] == ' ') ++at_;
  const size_t end = std::min(text_.find('\n', at_), text_.size());
  const std::string_view rest = text_.substr(at_, end - at_);
  at_ = end < text_.size() ? end + 1 : end;
  return rest;
}

std::string FormatIdList(const std::vector<int>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ids[i]);
    if (j > i) out += '-' + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

std::optional<std::vector<int>> ParseIdList(std::string_view s) {
  std::vector<int> ids;
  if (Trim(s).empty()) return ids;
  for (const std::string& part : Split(s, ',')) {
    const auto dash = part.find('-');
    const auto lo = ParseInt(Trim(std::string_view(part).substr(0, dash)));
    const auto hi = dash == std::string::npos ? lo : ParseInt(Trim(std::string_view(part).substr(dash + 1)));
    if (!lo || !hi || *lo < 0 || *hi < *lo || *hi > kMaxListedId) return std::nullopt;
    if (ids.size() + static_cast<size_t>(*hi - *lo + 1) > static_cast<size_t>(kMaxListedId) + 1) return std::nullopt;
    for (int64_t v = *lo; v <= *hi; ++v) ids.push_back(static_cast<int>(v));
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::string ShellQuote(const std::string& s) {
  // Braces are literal to bash unless they hold a list or a sequence
  // ("{a,b}", "{1..3}"), so "{job_dir}/rankfile" may stay bare.
  const bool brace_expansion = s.find('{') != std::string::npos && s.find('}') != std::string::npos &&
                               (s.find(',') != std::string::npos || s.find("..") != std::string::npos);
  if (!s.empty() && !brace_expansion &&
      s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=@,+-{}") ==
          std::string::npos) {
    return s;
  }
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

Status ForEachConfigLine(std::string_view text, std::string_view origin,
                         const std::function<Status(int, std::string_view)>& fn) {
  int line_no = 0;
  for (const std::string& raw : Split(text, '\n')) {
    ++line_no;
    if (raw.size() > kMaxTextLineBytes) {
      return InvalidArgument(std::string(origin) + ":" + std::to_string(line_no) + ": a line of " +
                             std::to_string(raw.size()) + " bytes, longer than the " + std::to_string(kMaxTextLineBytes) +
                             " a line may hold (" + Excerpt(raw) + ")");
    }
    std::string_view line = raw;
    if (const auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = Trim(line);
    if (line.empty()) continue;
    GL_RETURN_IF_ERROR(fn(line_no, line));
  }
  return Status::Ok();
}

std::string Excerpt(std::string_view text, size_t max_bytes) {
  std::string out;
  size_t used = 0;
  for (; used < text.size() && out.size() < max_bytes; ++used) {
    const unsigned char c = static_cast<unsigned char>(text[used]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (used < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string EscapeControlBytes(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  const auto escape = [&out](unsigned char c) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    out += hex;
  };
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if ((c < 0x20 && !(keep_newlines && (c == '\n' || c == '\t'))) || c == 0x7f) {
        escape(c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, each continuation
    // 10xxxxxx, no overlong form, no surrogate, at most U+10FFFF.
    const size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool valid = len > 0 && i + len <= text.size();
    uint32_t cp = len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
    for (size_t k = 1; valid && k < len; ++k) {
      const unsigned char cc = static_cast<unsigned char>(text[i + k]);
      valid = (cc & 0xc0) == 0x80;
      cp = (cp << 6) | (cc & 0x3f);
    }
    valid = valid && !(len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) &&
            !(len == 4 && (cp < 0x10000 || cp > 0x10ffff));
    if (!valid) {
      escape(c);
      ++i;
    } else if (cp >= 0x80 && cp <= 0x9f) {  // C1 controls: CSI (U+009B) and OSC (U+009D) reach some terminals
      for (size_t k = 0; k < len; ++k) escape(static_cast<unsigned char>(text[i + k]));
      i += len;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

namespace {

// A file descriptor opened for reading, closed when it goes.
class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(const std::string& path) : fd_(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~ReadOnlyFile() {
    if (fd_ >= 0) close(fd_);
  }
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  bool is_open() const { return fd_ >= 0; }

  // The size of a regular file; 0 for anything else (a pipe, /proc).
  uint64_t RegularFileSize() const {
    struct stat about {};
    return fstat(fd_, &about) == 0 && S_ISREG(about.st_mode) ? static_cast<uint64_t>(about.st_size) : 0;
  }

  // Up to `size` bytes into `buffer`, retried when a signal interrupts:
  // 0 at the end of the file, -1 on an error.
  ssize_t Read(char* buffer, size_t size) {
    ssize_t got;
    do {
      got = read(fd_, buffer, size);
    } while (got < 0 && errno == EINTR);
    return got;
  }

  // Everything from here to the end, or up to `limit` bytes and one more
  // (so that the caller sees it was over); false when a read failed.
  bool ReadRest(std::string& out, uint64_t limit = kMaxTextFileBytes) {
    char block[1 << 16];
    while (out.size() <= limit) {
      const ssize_t got = Read(block, sizeof block);
      if (got < 0) return false;
      if (got == 0) return true;
      out.append(block, static_cast<size_t>(got));
    }
    return true;
  }

 private:
  int fd_;
};

// Checks that `path` names a readable file gpulaunch may read whole (without
// std::filesystem, which would bring the stream library into the shim):
// NotFound when it cannot be opened, InvalidArgument for a directory or a
// file over kMaxTextFileBytes. `file` is left open on it.
Status CheckTextFile(const std::string& path, const std::string& what, const ReadOnlyFile& file) {
  struct stat about {};
  if (stat(path.c_str(), &about) == 0 && S_ISDIR(about.st_mode)) {
    return InvalidArgument(what + " '" + path + "' is a directory; give the file in it");
  }
  if (!file.is_open()) return NotFound("cannot read " + what + " '" + path + "': check the path and its permissions");
  const uint64_t size = file.RegularFileSize();
  if (size > kMaxTextFileBytes) {
    return InvalidArgument(what + " '" + path + "' is " + std::to_string(size) + " bytes, over the " +
                           std::to_string(kMaxTextFileBytes) + " gpulaunch reads: is it the right file?");
  }
  return Status::Ok();
}

}  // namespace

namespace {

// Why a read stopped early: more than kMaxTextFileBytes, or a NUL byte on
// line `line`.
Status EndlessInput(const std::string& path, const std::string& what) {
  return InvalidArgument(what + " '" + path + "' holds more than the " + std::to_string(kMaxTextFileBytes) +
                         " bytes gpulaunch reads (a pipe or a device that never ends?): is it the right file?");
}
Status BinaryInput(const std::string& path, const std::string& what, size_t line) {
  return InvalidArgument(path + ":" + std::to_string(line) + ": a NUL byte, which no " + what +
                         " holds: is it a binary file or a device?");
}

}  // namespace

StatusOr<std::string> ReadTextFile(const std::string& path, const std::string& what) {
  ReadOnlyFile file(path);
  GL_RETURN_IF_ERROR(CheckTextFile(path, what, file));
  std::string text;
  char block[1 << 16];
  for (;;) {  // block by block, so that a NUL byte or an endless input stops the read early
    const ssize_t got = file.Read(block, sizeof block);
    if (got < 0) return NotFound("cannot read " + what + " '" + path + "': " + std::strerror(errno));
    if (got == 0) break;
    const std::string_view chunk(block, static_cast<size_t>(got));
    if (const size_t nul = chunk.find('\0'); nul != std::string_view::npos) {
      const auto lines_before = std::count(text.begin(), text.end(), '\n') +
                                std::count(chunk.begin(), chunk.begin() + static_cast<ptrdiff_t>(nul), '\n');
      return BinaryInput(path, what, 1 + static_cast<size_t>(lines_before));
    }
    if (text.size() + chunk.size() > kMaxTextFileBytes) return EndlessInput(path, what);
    text.append(chunk);
  }
  return text;
}

std::string ReadFileOrEmpty(const std::string& path) {
  ReadOnlyFile file(path);
  std::string text;
  if (!file.is_open() || !file.ReadRest(text)) return "";
  return text;
}

StatusOr<std::vector<std::string>> ReadTextLines(const std::string& path, const std::string& what,
                                                 size_t max_line_bytes) {
  ReadOnlyFile file(path);
  GL_RETURN_IF_ERROR(CheckTextFile(path, what, file));
  std::vector<std::string> lines(1);
  std::vector<char> block(1 << 20);
  uint64_t total = 0;
  for (;;) {
    const ssize_t read = file.Read(block.data(), block.size());
    if (read < 0) return NotFound("cannot read " + what + " '" + path + "': " + std::strerror(errno));
    if (read == 0) break;
    const size_t got = static_cast<size_t>(read);
    total += got;
    if (total > kMaxTextFileBytes) return EndlessInput(path, what);
    for (size_t i = 0; i < got; ++i) {
      if (block[i] == '\0') return BinaryInput(path, what, lines.size());
      if (block[i] == '\n') {
        if (!lines.back().empty() && lines.back().back() == '\r') lines.back().pop_back();
        lines.emplace_back();
        continue;
      }
      lines.back() += block[i];
      if (lines.back().size() > max_line_bytes) {
        return InvalidArgument(path + ":" + std::to_string(lines.size()) + ": a line longer than the " +
                               std::to_string(max_line_bytes) + " bytes a " + what + " line may hold (" +
                               Excerpt(lines.back()) + "): is it the right file?");
      }
    }
  }
  if (!lines.back().empty() && lines.back().back() == '\r') lines.back().pop_back();
  if (lines.back().empty()) lines.pop_back();
  return lines;
}

}  // namespace gpulaunch
