#include "runtime/thread_communicator.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

namespace gpulaunch::rt {
namespace {

// Tags at or above this are the communicator's own (collectives).
constexpr int kInternalTag = 1 << 30;

}  // namespace

class ThreadWorld {
 public:
  explicit ThreadWorld(int n) : n_(n) {}
  int size() const { return n_; }

  void Post(int src, int dst, int tag, const void* data, size_t bytes) {
    std::vector<char> msg(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      boxes_[{src, dst, tag}].push_back(std::move(msg));
    }
    cv_.notify_all();
  }

  std::vector<char> Take(int src, int dst, int tag) {
    std::unique_lock<std::mutex> lock(mu_);
    auto& box = boxes_[{src, dst, tag}];
    cv_.wait(lock, [&] { return !box.empty(); });
    std::vector<char> msg = std::move(box.front());
    box.pop_front();
    return msg;
  }

  // The child world for split number `seq` and `color`, made by whoever asks first.
  std::shared_ptr<ThreadWorld> Child(int seq, int color, int n) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& w = children_[{seq, color}];
    if (!w) w = std::make_shared<ThreadWorld>(n);
    return w;
  }

 private:
  const int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::tuple<int, int, int>, std::deque<std::vector<char>>> boxes_;
  std::map<std::pair<int, int>, std::shared_ptr<ThreadWorld>> children_;
};

std::vector<std::unique_ptr<Communicator>> ThreadCommunicator::CreateWorld(int n) {
  auto world = std::make_shared<ThreadWorld>(n);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < n; ++r) comms.push_back(std::make_unique<ThreadCommunicator>(world, r));
  return comms;
}

ThreadCommunicator::ThreadCommunicator(std::shared_ptr<ThreadWorld> world, int rank)
    : world_(std::move(world)), rank_(rank) {}
ThreadCommunicator::~ThreadCommunicator() = default;

int ThreadCommunicator::size() const { return world_->size(); }
std::string ThreadCommunicator::Name() const { return "threads(" + std::to_string(size()) + ")"; }

Status ThreadCommunicator::Send(int dst, int tag, const void* data, size_t bytes) {
  if (dst < 0 || dst >= size()) return InvalidArgument("send to rank " + std::to_string(dst) + " of " + Name());
  world_->Post(rank_, dst, tag, data, bytes);
  return Status::Ok();
}

Status ThreadCommunicator::Recv(int src, int tag, void* data, size_t bytes) {
  if (src < 0 || src >= size()) return InvalidArgument("receive from rank " + std::to_string(src) + " of " + Name());
  const std::vector<char> msg = world_->Take(src, rank_, tag);
  if (msg.size() != bytes) {
    return Internal("message from rank " + std::to_string(src) + " has " + std::to_string(msg.size()) +
                    " bytes, expected " + std::to_string(bytes));
  }
  if (bytes) std::memcpy(data, msg.data(), bytes);
  return Status::Ok();
}

Status ThreadCommunicator::SendRecv(int dst, const void* send, size_t send_bytes, int src, void* recv,
                                    size_t recv_bytes, int tag) {
  GL_RETURN_IF_ERROR(Send(dst, tag, send, send_bytes));  // sends never block here
  return Recv(src, tag, recv, recv_bytes);
}

Status ThreadCommunicator::Barrier() {
  char token = 0;
  std::vector<char> all(size());
  return Allgather(&token, 1, all.data());
}

Status ThreadCommunicator::Allgather(const void* in, size_t bytes, void* out) {
  for (int r = 0; r < size(); ++r) GL_RETURN_IF_ERROR(Send(r, kInternalTag, in, bytes));
  for (int r = 0; r < size(); ++r) {
    GL_RETURN_IF_ERROR(Recv(r, kInternalTag, static_cast<char*>(out) + static_cast<size_t>(r) * bytes, bytes));
  }
  return Status::Ok();
}

Status ThreadCommunicator::Broadcast(void* data, size_t bytes, int root) {
  if (rank_ == root) {
    for (int r = 0; r < size(); ++r)
      if (r != root) GL_RETURN_IF_ERROR(Send(r, kInternalTag + 1, data, bytes));
    return Status::Ok();
  }
  return Recv(root, kInternalTag + 1, data, bytes);
}

StatusOr<std::unique_ptr<Communicator>> ThreadCommunicator::SplitImpl(int color, int key) {
  const int seq = splits_++;
  int mine[3] = {color, key, rank_};
  std::vector<int> all(3 * static_cast<size_t>(size()));
  GL_RETURN_IF_ERROR(Allgather(mine, sizeof mine, all.data()));
  if (color < 0) return std::unique_ptr<Communicator>();
  std::vector<std::pair<int, int>> members;  // (key, old rank)
  for (int r = 0; r < size(); ++r)
    if (all[3 * r] == color) members.push_back({all[3 * r + 1], all[3 * r + 2]});
  std::sort(members.begin(), members.end());
  const int new_rank = static_cast<int>(
      std::find(members.begin(), members.end(), std::make_pair(key, rank_)) - members.begin());
  auto child = world_->Child(seq, color, static_cast<int>(members.size()));
  return std::unique_ptr<Communicator>(std::make_unique<ThreadCommunicator>(child, new_rank));
}

void RunOnThreads(int n, const std::function<void(Communicator&)>& fn) {
  auto comms = ThreadCommunicator::CreateWorld(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { fn(*comms[r]); });
  for (auto& t : threads) t.join();
}

}  // namespace gpulaunch::rt
