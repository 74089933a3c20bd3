// SPDX-License-Identifier: MIT
#include "netback/rx_fifo.h"

namespace xpv::netback {

Status RxFifo::init(uint32_t bytes, uint32_t packets) {
  if (bytes < 65536 || packets == 0) return make_error(EINVAL, "RX queue too small");
  // new[] without value-initialisation: the pages are touched only when used.
  bytes_.reset(new uint8_t[bytes]);
  descs_.reset(new Packet[packets]);
  capacity_ = bytes;
  max_packets_ = packets;
  clear();
  return {};
}

void RxFifo::clear() {
  head_ = count_ = write_ = reserved_at_ = 0;
}

}  // namespace xpv::netback
