// Small string helpers shared by every parser. All are pure and locale-free.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpulaunch {

std::string_view Trim(std::string_view s);
std::vector<std::string> Split(std::string_view s, char sep);
// Splits on `sep` only outside [...] brackets: "a[1,2],b" -> {"a[1,2]", "b"}.
std::vector<std::string> SplitOutsideBrackets(std::string_view s, char sep);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
// `v` with `digits` digits after the point ("%.*f").
std::string FormatFixed(double v, int digits);
bool StartsWith(std::string_view s, std::string_view prefix);
// ASCII letters lowered (config keys that are case-insensitive).
std::string AsciiLower(std::string_view s);

// Whole-string decimal parse; nullopt on any junk, sign or overflow.
std::optional<int64_t> ParseInt(std::string_view s);

// The words of a text one after another, as `>>` on a string stream reads
// them (separated by spaces, tabs and line ends), without the C++ stream
// library: the per-rank shim links no streams, whose locale set-up alone
// costs every process that links them about 20 page faults and a third of
// the shim's start (docs/benchmarks.md).
class Words {
 public:
  explicit Words(std::string_view text) : text_(text) {}

  // The next word; nullopt at the end of the text.
  std::optional<std::string_view> Next();

  // The next word as a whole decimal integer that fits T (ParseInt); nullopt
  // when there is none or it is not one (the word is consumed either way).
  template <typename T>
  std::optional<T> NextInt() {
    const std::optional<std::string_view> word = Next();
    if (!word) return std::nullopt;
    const std::optional<int64_t> v = ParseInt(*word);
    if (!v || *v < static_cast<int64_t>(std::numeric_limits<T>::min())) return std::nullopt;
    if (*v > 0 && static_cast<uint64_t>(*v) > static_cast<uint64_t>(std::numeric_limits<T>::max())) return std::nullopt;
    return static_cast<T>(*v);
  }

  // The rest of the current line after the last word read, less one
  // separating space (free text at the end of a line); moves to the next line.
  std::string_view RestOfLine();

 private:
  std::string_view text_;
  size_t at_ = 0;
};

// A word quoted for a POSIX shell, unchanged when it needs no quoting.
std::string ShellQuote(const std::string& word);

// Lines of a config file with '#' comments removed and whitespace trimmed;
// blank lines are skipped. `fn(line_number, line)` returns a Status; the
// first error stops the walk and is returned. A line over kMaxTextLineBytes
// is an error ("origin:N: ...") before `fn` sees it.
Status ForEachConfigLine(std::string_view text, std::string_view origin,
                         const std::function<Status(int, std::string_view)>& fn);

// How much of a user's input an error message quotes: one screen line, with
// every byte outside printable ASCII escaped ("\x00", "\n"), and the length
// of what was cut ("abc... (16777216 bytes)"). Binary input never reaches
// the terminal raw.
inline constexpr size_t kExcerptBytes = 60;
std::string Excerpt(std::string_view text, size_t max_bytes = kExcerptBytes);

// Text from a peer (a rank's stderr line, a refusal, a stack dump), made
// safe for a terminal and a file: every control byte (C0, DEL, and the C1
// range U+0080..U+009F), and every byte that is not part of valid UTF-8, is
// shown escaped ("\x1b"); printable text, UTF-8 included, is kept. With
// `keep_newlines` newlines and tabs stay as they are (multi-line text).
std::string EscapeControlBytes(std::string_view text, bool keep_newlines = false);

// Files gpulaunch reads whole (topologies, cluster files, policies) are at
// most this big; line-oriented files (traces, hostfiles) hold lines of at
// most kMaxTextLineBytes. Both are refused early, naming the limit.
// The limits hold while reading, so a pipe or a device (which stat reports
// as empty) is cut off too, and a NUL byte, which no text file holds, ends
// the read at once ("is it a binary file?"): /dev/zero and /dev/urandom fail
// within the first block.
inline constexpr uint64_t kMaxTextFileBytes = 256ull << 20;
// And in time: an input that sends nothing for this long (a FIFO whose
// writer never opens it or never writes, a device that does not answer)
// fails with path:line (common/text_file.cc).
inline constexpr int kInputSilenceMs = 3000;
inline constexpr size_t kMaxTextLineBytes = 1 << 16;

// The whole file, or an error naming what it is ("hostfile") and the path:
// NotFound when it cannot be read, InvalidArgument for a directory, a file
// over kMaxTextFileBytes, or one holding a NUL byte (path:line).
StatusOr<std::string> ReadTextFile(const std::string& path, const std::string& what);

// The whole file, or "" when it cannot be read: for /proc, /sys and cache
// entries, where a missing file is an answer, not an error.
std::string ReadFileOrEmpty(const std::string& path);

// The file's lines (without "\n" or a trailing "\r"), read in blocks so that
// a line over `max_line_bytes` is refused (path:line, its length so far)
// without reading the rest of it; otherwise as ReadTextFile.
StatusOr<std::vector<std::string>> ReadTextLines(const std::string& path, const std::string& what,
                                                 size_t max_line_bytes = kMaxTextLineBytes);

// CPU (or any id) lists in the Linux/hwloc list form "0-3,8,10-11". Ids
// above kMaxListedId, or more entries than that in all, are refused: no
// machine has that many CPUs or GPUs, and "0-2000000000" must not allocate
// gigabytes (found by the fuzzer).
inline constexpr int kMaxListedId = (1 << 20) - 1;
std::string FormatIdList(const std::vector<int>& sorted_ids);
std::optional<std::vector<int>> ParseIdList(std::string_view s);

}  // namespace gpulaunch
