// Reassembles whole lines per rank from Open MPI's --tag-output stream.
//
// mpirun tags what it forwards per chunk it read from a rank, and a chunk can
// end in the middle of a line: "[1,0]<stdout>:half a li[1,1]<stdout>:other\n
// [1,0]<stdout>:ne\n". Every tag therefore switches the current rank; text
// is collected per rank and emitted only as complete lines, prefixed
// "[rank@host]: ". Untagged text (mpirun's own messages) passes through by
// line. A job that prints something shaped exactly like a tag confuses it.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace gpulaunch {

class TagDemux {
 public:
  using Emit = std::function<void(const std::string& line_with_newline)>;
  TagDemux(std::function<std::string(int rank)> host_of_rank, Emit emit);

  void Feed(const char* data, size_t size);
  void Finish();  // flushes unterminated text at end of stream

 private:
  void Append(const std::string& text);
  void EmitLine(int rank, const std::string& line);

  std::function<std::string(int)> host_of_rank_;
  Emit emit_;
  std::string pending_;   // raw bytes not yet parsed (may hold a partial tag)
  int current_ = -1;      // rank of the text being read, -1 untagged
  std::map<int, std::string> partial_;  // unfinished line per rank
};

}  // namespace gpulaunch
