// SPDX-License-Identifier: MIT
// A child process driven over its stdin/stdout, one line per message, for
// tests that need a real second process.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace xpv::test {

class Subprocess {
 public:
  Subprocess() = default;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    if (in_ >= 0) ::close(in_);
    if (out_ >= 0) ::close(out_);
  }

  // Starts argv[0] with the given arguments; stderr is inherited.
  // XPV_TEST_EXEC_WRAPPER (words separated by spaces) goes in front of argv:
  // the arm64 tests run under qemu-user without binfmt_misc, so a child that
  // is itself an arm64 program is started as `qemu-aarch64 -L SYSROOT prog`.
  bool start(const std::vector<std::string>& argv_in) {
    std::vector<std::string> argv;
    if (const char* w = std::getenv("XPV_TEST_EXEC_WRAPPER")) {
      std::istringstream words(w);
      for (std::string word; words >> word;)
        argv.push_back(word);
    }
    argv.insert(argv.end(), argv_in.begin(), argv_in.end());
    int to_child[2], from_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0) return false;
    std::vector<char*> args;
    for (auto& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      ::dup2(to_child[0], 0);
      ::dup2(from_child[1], 1);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    in_ = to_child[1];
    out_ = from_child[0];
    return true;
  }

  bool send(const std::string& line) {
    std::string l = line + "\n";
    return ::write(in_, l.data(), l.size()) == static_cast<ssize_t>(l.size());
  }

  // One line of the child's stdout, or nullopt after `timeout_ms` or at EOF.
  std::optional<std::string> read_line(int timeout_ms = 20000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string l = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return l;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) return std::nullopt;
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char tmp[4096];
      ssize_t n = ::read(out_, tmp, sizeof tmp);
      if (n <= 0) return std::nullopt;
      buf_.append(tmp, static_cast<size_t>(n));
    }
  }

  // Sends a command and returns the child's answer line.
  std::string ask(const std::string& cmd, int timeout_ms = 20000) {
    if (!send(cmd)) return "<send failed>";
    auto l = read_line(timeout_ms);
    return l ? *l : "<no answer>";
  }

  void kill(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // Waits for exit; returns the wait status.
  int wait() {
    int st = 0;
    if (pid_ > 0) {
      ::waitpid(pid_, &st, 0);
      pid_ = -1;
    }
    return st;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  std::string buf_;
};

}  // namespace xpv::test
