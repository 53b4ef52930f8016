#include "common/file_write.h"

#include <filesystem>
#include <fstream>
#include <random>

namespace gpulaunch {

Status WriteFileAtomically(const std::string& path, const std::string& bytes) {
  std::random_device rd;  // a private temporary name, even for concurrent writers of one path
  const std::string tmp = path + ".tmp." + std::to_string(rd()) + std::to_string(rd());
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) {
      out.close();
      std::filesystem::remove(tmp, ec);
      return Unavailable("cannot write " + path + " (disk full or not writable?)");
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    return Unavailable("cannot rename " + tmp + " to " + path + ": " + why);
  }
  return Status::Ok();
}

}  // namespace gpulaunch
