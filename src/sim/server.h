// SPDX-License-Identifier: MIT
// Serves the simulated hypervisor on a unix socket: each accepted connection
// is a new guest domain; when the socket closes (the frontend exited or died)
// the domain is destroyed. One thread does all socket I/O.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "sim/hypervisor.h"
#include "util/fd.h"

namespace xpv::sim {

class Server {
 public:
  // Binds PATH (replacing a stale socket file nobody listens on; refusing
  // one a live backend serves) and starts serving.
  static Result<std::unique_ptr<Server>> start(Hypervisor& hv, std::string path);
  ~Server();  // stops, disconnects every domain, removes the socket file
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  const std::string& path() const { return path_; }
  uint32_t connections() const { return nconns_.load(); }

 private:
  struct Conn;
  Server(Hypervisor& hv, std::string path) : hv_(hv), path_(std::move(path)) {}
  void run();

  Hypervisor& hv_;
  std::string path_;
  UniqueFd listen_;
  UniqueFd wake_;
  std::atomic<bool> stop_{false};
  std::atomic<uint32_t> nconns_{0};
  std::thread thread_;
};

}  // namespace xpv::sim
