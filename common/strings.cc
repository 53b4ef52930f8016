#include "common/strings.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
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

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::optional<int64_t> ParseInt(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s[0] == '+') return std::nullopt;
  return v;
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

namespace {

// Opens `path` for reading: NotFound when it cannot be read, InvalidArgument
// for a directory or a file over kMaxTextFileBytes.
StatusOr<std::ifstream> OpenTextFile(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidArgument(what + " '" + path + "' is a directory; give the file in it");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + what + " '" + path + "': check the path and its permissions");
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxTextFileBytes) {
    return InvalidArgument(what + " '" + path + "' is " + std::to_string(size) + " bytes, over the " +
                           std::to_string(kMaxTextFileBytes) + " gpulaunch reads: is it the right file?");
  }
  return in;
}

}  // namespace

StatusOr<std::string> ReadTextFile(const std::string& path, const std::string& what) {
  GL_ASSIGN_OR_RETURN(std::ifstream in, OpenTextFile(path, what));
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

StatusOr<std::vector<std::string>> ReadTextLines(const std::string& path, const std::string& what,
                                                 size_t max_line_bytes) {
  GL_ASSIGN_OR_RETURN(std::ifstream in, OpenTextFile(path, what));
  std::vector<std::string> lines(1);
  std::vector<char> block(1 << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const size_t got = static_cast<size_t>(in.gcount());
    for (size_t i = 0; i < got; ++i) {
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
