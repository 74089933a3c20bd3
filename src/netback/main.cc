// SPDX-License-Identifier: MIT
// xpv-netback: a userspace Xen netif backend on the simulated hypervisor.
// See `xpv-netback --help` and docs/xpv-netback.md.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "netback/backend.h"
#include "netback/cli.h"
#include "sim/hypervisor.h"
#include "sim/server.h"
#include "util/fd.h"
#include "util/log.h"

namespace {

using namespace xpv;

// Writes `text` to `path` atomically: a temporary file, then rename.
Status write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + format(".tmp.%d", static_cast<int>(::getpid()));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return make_error(errno,
                      format("cannot write %s: %s", tmp.c_str(), errno_string(errno).c_str()));
  }
  UniqueFd f(fd);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::unlink(tmp.c_str());
      return make_error(e, format("writing %s: %s", tmp.c_str(), errno_string(e).c_str()));
    }
    done += static_cast<size_t>(n);
  }
  f.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return make_error(
        e, format("renaming %s to %s: %s", tmp.c_str(), path.c_str(), errno_string(e).c_str()));
  }
  return {};
}

void write_stats(const netback::Backend& be, const std::string& path) {
  if (path.empty()) return;
  Status s = write_atomically(path, be.stats_json());
  if (s.failed()) log_error("%s", s.message().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  auto opts = netback::parse_cli(argc, argv);
  if (!opts) {
    std::fprintf(stderr, "xpv-netback: %s\n(see xpv-netback --help)\n",
                 opts.error().message.c_str());
    return 2;
  }
  if (opts->help) {
    std::fputs(netback::help_text(), stdout);
    return 0;
  }
  set_log_sink([](LogLevel level, std::string_view msg) {
    static const char* const kNames[] = {"error", "warning", "info", "debug"};
    std::fprintf(stderr, "xpv-netback: %s: %.*s\n", kNames[static_cast<int>(level)],
                 static_cast<int>(msg.size()), msg.data());
  });
  if (opts->verbose) set_log_level(LogLevel::kDebug);

  // Signals are taken synchronously by this thread; every thread started
  // below inherits the mask.
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  auto hv = sim::Hypervisor::create();
  if (!hv) {
    std::fprintf(stderr, "xpv-netback: %s\n", hv.error().message.c_str());
    return 1;
  }
  auto be = netback::Backend::create(**hv, opts->cfg);
  if (!be) {
    std::fprintf(stderr, "xpv-netback: %s\n", be.error().message.c_str());
    return 2;
  }
  if (Status s = (*be)->start(); s.failed()) {
    std::fprintf(stderr, "xpv-netback: starting the backend: %s\n", s.message().c_str());
    return 1;
  }
  auto server = sim::Server::start(**hv, opts->socket);
  if (!server) {
    std::fprintf(stderr, "xpv-netback: %s\n", server.error().message.c_str());
    (*be)->stop();
    return 1;
  }
  std::printf("xpv-netback: listening on %s\n", opts->socket.c_str());
  std::fflush(stdout);
  log_info("mode %s, fault %s, %u vif%s per domain, max %u queues", to_string(opts->cfg.mode),
           to_string(opts->cfg.fault), opts->cfg.vifs, opts->cfg.vifs == 1 ? "" : "s",
           opts->cfg.max_queues);

  const double interval = opts->stats_interval_s;
  for (;;) {
    siginfo_t info;
    int sig;
    if (interval > 0) {
      timespec ts;
      ts.tv_sec = static_cast<time_t>(interval);
      ts.tv_nsec = static_cast<long>((interval - std::floor(interval)) * 1e9);
      sig = ::sigtimedwait(&sigs, &info, &ts);
    } else {
      sig = ::sigwaitinfo(&sigs, &info);
    }
    if (sig < 0) {
      if (errno == EAGAIN) write_stats(**be, opts->stats_file);  // interval elapsed
      continue;
    }
    log_info("%s: shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
    break;
  }

  (*be)->stop();    // every vif Closing then Closed, every thread stopped
  server->reset();  // every domain disconnected, the socket file removed
  write_stats(**be, opts->stats_file);
  std::fputs((*be)->summary().c_str(), stdout);
  std::fflush(stdout);
  be->reset();
  return 0;
}
