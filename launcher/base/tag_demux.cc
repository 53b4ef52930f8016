#include "launcher/base/tag_demux.h"

#include <cctype>

namespace gpulaunch {
namespace {

// Length of a tag "[J,R]<stdout>:" at s[pos], with R in *rank; 0 if none.
size_t MatchTag(const std::string& s, size_t pos, int* rank) {
  size_t i = pos;
  if (i >= s.size() || s[i] != '[') return 0;
  ++i;
  const size_t job_start = i;
  while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == job_start || i >= s.size() || s[i] != ',') return 0;
  const size_t rank_start = ++i;
  while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == rank_start || i >= s.size() || s[i] != ']') return 0;
  const std::string digits = s.substr(rank_start, i - rank_start);
  ++i;
  for (const char* stream : {"<stdout>:", "<stderr>:", "<stddiag>:"}) {
    const std::string st = stream;
    if (s.compare(i, st.size(), st) == 0) {
      *rank = digits.size() > 9 ? -1 : std::stoi(digits);
      return *rank < 0 ? 0 : i + st.size() - pos;
    }
  }
  return 0;
}

// Could s[pos..] still grow into a tag once more bytes arrive?
bool MaybeTagPrefix(const std::string& s, size_t pos) {
  if (s.size() - pos >= 40) return false;
  for (size_t i = pos; i < s.size(); ++i) {
    const char c = s[i];
    if (!(isdigit(static_cast<unsigned char>(c)) || c == '[' || c == ',' || c == ']' || c == '<' || c == '>' ||
          c == ':' || isalpha(static_cast<unsigned char>(c)))) {
      return false;
    }
  }
  return s[pos] == '[';
}

}  // namespace

TagDemux::TagDemux(Emit emit) : emit_(std::move(emit)) {}

void TagDemux::Feed(const char* data, size_t size) {
  pending_.append(data, size);
  size_t text_start = 0;
  size_t i = 0;
  while (i < pending_.size()) {
    if (pending_[i] == '[') {
      int rank = -1;
      if (const size_t len = MatchTag(pending_, i, &rank)) {
        Append(pending_.substr(text_start, i - text_start));
        current_ = rank;
        i += len;
        text_start = i;
        continue;
      }
      if (MaybeTagPrefix(pending_, i)) break;  // wait for the rest of a possible tag
    }
    ++i;
  }
  Append(pending_.substr(text_start, i - text_start));
  pending_.erase(0, i);
}

void TagDemux::Append(const std::string& text) {
  for (char c : text) {
    std::string& line = partial_[current_];
    if (c != '\n') {
      line.push_back(c);
      continue;
    }
    emit_(current_, line);
    line.clear();
    // mpirun tags every line it forwards, so text after a rank's newline
    // that carries no tag is mpirun's own.
    current_ = -1;
  }
}

void TagDemux::Finish() {
  Append(pending_);
  pending_.clear();
  for (auto& [rank, buf] : partial_) {
    if (!buf.empty()) emit_(rank, buf);
    buf.clear();
  }
}

}  // namespace gpulaunch
