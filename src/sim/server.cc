// SPDX-License-Identifier: MIT
#include "sim/server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cstring>
#include <deque>
#include <list>
#include <mutex>

#include "util/log.h"

namespace xpv::sim {

struct Server::Conn {
  UniqueFd sock;
  std::shared_ptr<Hypervisor::Connection> hc;
  // Replies and watch events wait here until the socket takes them. The
  // hypervisor's event sink appends from whichever thread made the change.
  std::mutex out_mu;
  std::deque<Message> out;
  bool dead = false;
};

static Result<sockaddr_un> unix_address(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path) {
    return make_error(ENAMETOOLONG, format("socket path '%s' is empty or longer than %zu bytes",
                                           path.c_str(), sizeof a.sun_path - 1));
  }
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

Result<std::unique_ptr<Server>> Server::start(Hypervisor& hv, std::string path) {
  auto addr = unix_address(path);
  if (!addr) return addr.error();
  std::unique_ptr<Server> s(new Server(hv, path));
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return make_error(errno, "socket(AF_UNIX) failed: " + errno_string(errno));
  s->listen_.reset(fd);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&*addr), sizeof *addr) != 0) {
    int e = errno;
    if (e != EADDRINUSE) {
      return make_error(e, format("cannot bind %s: %s", path.c_str(), errno_string(e).c_str()));
    }
    // A socket file exists: refuse if someone serves it, else replace it.
    int probe = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    bool live =
        probe >= 0 && ::connect(probe, reinterpret_cast<sockaddr*>(&*addr), sizeof *addr) == 0;
    if (probe >= 0) ::close(probe);
    if (live) {
      return make_error(EADDRINUSE, format("another backend is already serving %s", path.c_str()));
    }
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
      return make_error(EEXIST,
                        format("%s exists and is not a socket; not replacing it", path.c_str()));
    }
    ::unlink(path.c_str());
    if (::bind(fd, reinterpret_cast<sockaddr*>(&*addr), sizeof *addr) != 0) {
      e = errno;
      return make_error(e, format("cannot bind %s: %s", path.c_str(), errno_string(e).c_str()));
    }
  }
  if (::listen(fd, 64) != 0) return make_error(errno, "listen failed: " + errno_string(errno));
  auto w = make_eventfd();
  if (!w) return w.error();
  s->wake_ = std::move(*w);
  s->thread_ = std::thread([p = s.get()] { p->run(); });
  return s;
}

Server::~Server() {
  stop_ = true;
  eventfd_signal(wake_.get());
  if (thread_.joinable()) thread_.join();
  ::unlink(path_.c_str());
}

void Server::run() {
  std::list<std::shared_ptr<Conn>> conns;
  std::vector<pollfd> pfds;
  std::vector<std::shared_ptr<Conn>> polled;
  auto flush = [](Conn& c) {
    std::lock_guard lk(c.out_mu);
    while (!c.out.empty() && !c.dead) {
      Status s = send_message(c.sock.get(), c.out.front(), /*nonblocking=*/true);
      if (s.failed()) {
        if (s.code() == EAGAIN || s.code() == EWOULDBLOCK) return;
        c.dead = true;  // the peer went away; the read side will notice too
        return;
      }
      c.out.pop_front();
    }
  };
  while (!stop_) {
    pfds.clear();
    polled.clear();
    pfds.push_back({wake_.get(), POLLIN, 0});
    pfds.push_back({listen_.get(), POLLIN, 0});
    for (auto& c : conns) {
      short ev = POLLIN;
      {
        std::lock_guard lk(c->out_mu);
        if (!c->out.empty()) ev |= POLLOUT;
      }
      pfds.push_back({c->sock.get(), ev, 0});
      polled.push_back(c);
    }
    int n = ::poll(pfds.data(), pfds.size(), 1000);
    if (n < 0 && errno != EINTR) {
      log_error("sim server: poll failed: %s", errno_string(errno).c_str());
      break;
    }
    if (pfds[0].revents) eventfd_drain(wake_.get());
    if (pfds[1].revents & POLLIN) {
      for (;;) {
        int cfd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0) break;
        // The domain is created when the peer sends its first request, so
        // that a mere connect (another server probing whether this socket
        // is alive) creates nothing.
        auto c = std::make_shared<Conn>();
        c->sock.reset(cfd);
        conns.push_back(std::move(c));
        ++nconns_;
      }
    }
    for (size_t i = 0; i < polled.size(); ++i) {
      Conn& c = *polled[i];
      short re = pfds[i + 2].revents;
      if (re & POLLIN) {
        for (;;) {
          auto m = recv_message(c.sock.get(), /*nonblocking=*/true);
          if (!m) {
            if (m.error().code != EAGAIN && m.error().code != EWOULDBLOCK) c.dead = true;
            break;
          }
          if (!c.hc) {
            std::weak_ptr<Conn> weak = polled[i];
            int wake = wake_.get();
            auto hc = hv_.connect_domain([weak, wake](Message ev) {
              if (auto cc = weak.lock()) {
                std::lock_guard lk(cc->out_mu);
                cc->out.push_back(std::move(ev));
              }
              eventfd_signal(wake);
            });
            if (!hc) {
              log_error("sim server: refusing a domain: %s", hc.error().message.c_str());
              c.dead = true;
              break;
            }
            c.hc = std::move(*hc);
          }
          Message reply = hv_.handle(*c.hc, std::move(*m));
          std::lock_guard lk(c.out_mu);
          c.out.push_back(std::move(reply));
        }
      } else if (re & (POLLHUP | POLLERR | POLLNVAL)) {
        c.dead = true;
      }
    }
    for (auto it = conns.begin(); it != conns.end();) {
      Conn& c = **it;
      if (!c.dead) flush(c);
      if (c.dead) {
        if (c.hc) hv_.disconnect(*c.hc);
        it = conns.erase(it);
        --nconns_;
      } else {
        ++it;
      }
    }
  }
  for (auto& c : conns) {
    if (c->hc) hv_.disconnect(*c->hc);
  }
  nconns_ = 0;
}

}  // namespace xpv::sim
