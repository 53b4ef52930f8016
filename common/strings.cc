#include "common/strings.h"

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

std::string FormatFixed(double v, int digits) {
  char buf[352];  // the largest double printed with digits <= 20
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace gpulaunch
