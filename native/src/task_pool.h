// Threads the addon owns for blocking PJRT work (compile, transfers, execute + await).
//
// Why not the libuv pool: it is shared with fs, dns, zlib and crypto and has four threads by
// default, so long device waits there would stall unrelated I/O. Results come back to the JS
// thread through one ThreadSafeFunction (see addon_data.h).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hlo {

class TaskPool {
 public:
  explicit TaskPool(size_t threads);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  void Post(std::function<void()> task);
  // Stops accepting work, runs what is queued, joins the threads.
  void Shutdown();

 private:
  void Loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

}  // namespace hlo
