// Reassembles whole lines per rank from Open MPI's --tag-output stream.
//
// mpirun tags what it forwards per chunk it read from a rank, and a chunk can
// end in the middle of a line: "[1,0]<stdout>:half a li[1,1]<stdout>:other\n
// [1,0]<stdout>:ne\n". Every tag therefore switches the current rank; text
// is collected per rank and handed on only as complete lines. Untagged text
// (mpirun's own messages) comes out line by line with rank -1. A job that prints something shaped exactly like a tag confuses it.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace gpulaunch {

class TagDemux {
 public:
  // One complete line (without its newline) of `rank`, -1 for untagged text.
  using Emit = std::function<void(int rank, const std::string& line)>;
  explicit TagDemux(Emit emit);

  void Feed(const char* data, size_t size);
  void Finish();  // flushes unterminated text at end of stream

 private:
  void Append(const std::string& text);
  Emit emit_;
  std::string pending_;   // raw bytes not yet parsed (may hold a partial tag)
  int current_ = -1;      // rank of the text being read, -1 untagged
  std::map<int, std::string> partial_;  // unfinished line per rank
};

}  // namespace gpulaunch
