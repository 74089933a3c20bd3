// SPDX-License-Identifier: MIT
// sim-peer: the other process of cross-process tests of the simulated
// hypervisor. Driven by one command per stdin line; answers one line.
//
//   sim-peer backend SOCKET    own a hypervisor, serve it on SOCKET (as dom0)
//     verify DOM REF BYTE      map read-only; every byte must equal BYTE -> OK | FAIL ...
//     fill DOM REF BYTE        map writable and fill with BYTE -> OK | ERR ...
//     copyto DOM REF OFF LEN BYTE   grant-copy LEN bytes of BYTE into the grant -> STATUS n
//     copyfrom DOM REF OFF LEN      grant-copy out of the grant -> STATUS n SUM s
//     map DOM REF              keep a writable mapping -> OK | ERR
//     unmapall                 drop kept mappings -> OK
//     notify-bind DOM PORT     bind to the domain's unbound port and notify it -> OK
//     stats                    -> STATS domains grants maps ports handles conns zombies
//   sim-peer frontend SOCKET   connect as a guest domain -> prints "DOMID n"
//     share N W|R BYTE         share N pages filled with BYTE -> REFS r...
//     check I BYTE             page I of the last share is all BYTE -> OK | FAIL
//     port                     allocate an unbound port for dom0 -> PORT p
//     wait-event               wait up to 10 s for an event -> EVENT p | TIMEOUT
//     xswrite PATH VALUE       -> OK | ERR
//     watch PATH               -> OK
//   quit                       exit
#include <poll.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sim/client.h"
#include "sim/hypervisor.h"
#include "sim/server.h"

using namespace xpv;

namespace {

int backend(const std::string& path) {
  auto hv = sim::Hypervisor::create();
  if (!hv) {
    std::cout << "ERR " << hv.error().message << std::endl;
    return 1;
  }
  auto server = sim::Server::start(**hv, path);
  if (!server) {
    std::cout << "ERR " << server.error().message << std::endl;
    return 1;
  }
  auto plat = sim::local_platform(**hv, true);
  if (!plat) return 1;
  auto mapper = (*plat)->open_grant_mapper();
  auto evt = (*plat)->open_event_channel();
  if (!mapper || !evt) return 1;
  std::vector<GrantMapping> kept;
  std::cout << "READY" << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "quit") break;
    if (cmd == "verify" || cmd == "fill" || cmd == "map") {
      unsigned dom = 0, ref = 0, byte = 0;
      in >> dom >> ref >> byte;
      bool w = cmd != "verify";
      auto m = (*mapper)->map(static_cast<domid_t>(dom), ref, w);
      if (!m) {
        std::cout << "ERR " << m.error().message << std::endl;
        continue;
      }
      if (cmd == "fill") {
        std::memset(m->data(), static_cast<int>(byte), kPageSize);
        std::cout << "OK" << std::endl;
      } else if (cmd == "map") {
        kept.push_back(std::move(*m));
        std::cout << "OK" << std::endl;
      } else {
        size_t bad = kPageSize;
        for (size_t i = 0; i < kPageSize; ++i) {
          if (m->data()[i] != byte) {
            bad = i;
            break;
          }
        }
        if (bad == kPageSize) {
          std::cout << "OK" << std::endl;
        } else {
          std::cout << "FAIL byte " << bad << " is " << unsigned(m->data()[bad]) << std::endl;
        }
      }
    } else if (cmd == "unmapall") {
      kept.clear();
      std::cout << "OK" << std::endl;
    } else if (cmd == "copyto" || cmd == "copyfrom") {
      unsigned dom = 0, ref = 0, off = 0, len = 0, byte = 0;
      in >> dom >> ref >> off >> len >> byte;
      std::vector<uint8_t> local(8192, static_cast<uint8_t>(byte));
      GrantCopyOp op;
      GrantCopySegment g{true, static_cast<domid_t>(dom), ref, static_cast<uint16_t>(off), nullptr};
      GrantCopySegment l{false, 0, 0, 0, local.data()};
      op.source = cmd == "copyto" ? l : g;
      op.dest = cmd == "copyto" ? g : l;
      op.len = static_cast<uint16_t>(len);
      if (cmd == "copyfrom") std::fill(local.begin(), local.end(), 0);
      (void)(*mapper)->copy(std::span<GrantCopyOp>(&op, 1));
      if (cmd == "copyto") {
        std::cout << "STATUS " << op.status << std::endl;
      } else {
        unsigned long sum = 0;
        for (auto b : local)
          sum += b;
        std::cout << "STATUS " << op.status << " SUM " << sum << std::endl;
      }
    } else if (cmd == "notify-bind") {
      unsigned dom = 0, port = 0;
      in >> dom >> port;
      auto p = (*evt)->bind_interdomain(static_cast<domid_t>(dom), port);
      if (!p) {
        std::cout << "ERR " << p.error().message << std::endl;
        continue;
      }
      Status s = (*evt)->notify(*p);
      std::cout << (s ? "OK" : "ERR " + s.message()) << std::endl;
    } else if (cmd == "stats") {
      auto s = (*hv)->stats();
      std::cout << "STATS " << s.domains << ' ' << s.grants_active << ' ' << s.grant_maps << ' '
                << s.ports_bound << ' ' << s.evtchn_handles << ' ' << s.xs_connections << ' '
                << s.zombie_domains << std::endl;
    } else {
      std::cout << "ERR unknown command " << cmd << std::endl;
    }
  }
  return 0;
}

int frontend(const std::string& path) {
  auto plat = sim::connect_platform(path);
  if (!plat) {
    std::cout << "ERR " << plat.error().message << std::endl;
    return 1;
  }
  auto sharer = (*plat)->open_grant_sharer();
  auto evt = (*plat)->open_event_channel();
  auto xs = (*plat)->open_xenstore();
  if (!sharer || !evt || !xs) return 1;
  std::vector<SharedPages> shares;
  std::cout << "DOMID " << (*plat)->self_domid() << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "quit") break;
    if (cmd == "share") {
      unsigned n = 0, byte = 0;
      std::string w;
      in >> n >> w >> byte;
      auto s = (*sharer)->share(kDom0, n, w == "W");
      if (!s) {
        std::cout << "ERR " << s.error().message << std::endl;
        continue;
      }
      std::memset(s->data(), static_cast<int>(byte), s->bytes());
      std::cout << "REFS";
      for (auto r : s->refs())
        std::cout << ' ' << r;
      std::cout << std::endl;
      shares.push_back(std::move(*s));
    } else if (cmd == "check") {
      unsigned i = 0, byte = 0;
      in >> i >> byte;
      bool ok = !shares.empty() && i < shares.back().count();
      for (size_t k = 0; ok && k < kPageSize; ++k)
        ok = shares.back().page(i)[k] == byte;
      std::cout << (ok ? "OK" : "FAIL") << std::endl;
    } else if (cmd == "port") {
      auto p = (*evt)->alloc_unbound(kDom0);
      if (!p) {
        std::cout << "ERR " << p.error().message << std::endl;
      } else {
        std::cout << "PORT " << *p << std::endl;
      }
    } else if (cmd == "wait-event") {
      pollfd pf{(*evt)->fd(), POLLIN, 0};
      std::optional<evtchn_port_t> got;
      for (int i = 0; i < 100 && !got; ++i) {
        auto p = (*evt)->pending();
        if (p && *p) {
          got = **p;
          break;
        }
        ::poll(&pf, 1, 100);
      }
      if (got) {
        (void)(*evt)->unmask(*got);
        std::cout << "EVENT " << *got << std::endl;
      } else {
        std::cout << "TIMEOUT" << std::endl;
      }
    } else if (cmd == "xswrite") {
      std::string p, v;
      in >> p >> v;
      Status s = (*xs)->write(kXsNoTransaction, p, v);
      std::cout << (s ? "OK" : "ERR " + s.message()) << std::endl;
    } else if (cmd == "watch") {
      std::string p;
      in >> p;
      Status s = (*xs)->watch(p, "t");
      std::cout << (s ? "OK" : "ERR " + s.message()) << std::endl;
    } else {
      std::cout << "ERR unknown command " << cmd << std::endl;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s backend|frontend SOCKET\n", argv[0]);
    return 2;
  }
  std::string role = argv[1];
  if (role == "backend") return backend(argv[2]);
  if (role == "frontend") return frontend(argv[2]);
  std::fprintf(stderr, "sim-peer: unknown role '%s'\n", argv[1]);
  return 2;
}
