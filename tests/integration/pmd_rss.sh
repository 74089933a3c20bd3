#!/bin/bash
# RSS of net_xenpv over xpv-netback's control ring (netif.h), checked with
# testpmd's own commands and DPDK's rte_softrss (tests/softrss): 4 queues in
# loopback; testpmd's txonly packets come back on the queue
# reta[hash % 128] names with the hash rte_softrss computes; reta_update
# moves a flow; a new key, new hashes. Sourced by tests/integration/run.sh
# after pmd.sh (EAL, NETBACK, ts_start/ts_cmd/ts_quit).

SOFTRSS=$BUILD/tests/softrss
# DPDK's default key (the PMD's when the application gives none).
RSS_KEY=6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa
RSS_KEY2=0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728

# rss_burst: one tx_first burst per queue, rxonly; the packets testpmd
# printed as "HASH QUEUE" lines (hex hash, decimal queue) in RSS_SEEN.
rss_burst() {
  local from
  from=$(stat -c %s "$TS_LOG")
  ts_send "start tx_first"  # its prompt may be split by the packets printed
  sleep 1
  ts_cmd "stop"
  RSS_SEEN=$(tail -c +$((from + 1)) "$TS_LOG" | grep -o "RSS hash=0x[0-9a-f]* .*Receive queue=0x[0-9a-f]*" |
    sed -E 's/RSS hash=0x([0-9a-f]+) .*Receive queue=0x([0-9a-f]+)/\1 \2/' |
    while read -r h q; do printf '0x%08x %d\n' "0x$h" "0x$q"; done)
}

# rss_reta_ok RETA_FILE: every packet of RSS_SEEN on the queue its entry names.
rss_reta_ok() {
  local h q
  while read -r h q; do
    [[ -z $h ]] && continue
    (($(sed -n "$((h % 128 + 1))p" "$1") == q)) || { echo "hash $h on queue $q"; return 1; }
  done <<<"$RSS_SEEN"
}

check_pmd_rss() {
  local name=pmd-rss
  [[ -x $SOFTRSS ]] || { fail $name "$SOFTRSS missing"; return; }
  nb_start rss || { fail $name "netback did not start"; return; }
  local nb=$NB_PID reta=$RUN/rss.reta i
  for ((i = 0; i < 128; i++)); do echo $((i % 4)); done >"$reta"  # DPDK's default RETA

  # Many flows (--txonly-multi-flow): each packet on reta[hash % 128].
  if ! ts_start tp-rss-multi "net_xenpv0,backend=sim:$RUN/rss.sock" --rxq=4 --txq=4 \
    --txonly-multi-flow; then
    fail $name "testpmd did not start"; nb_stop $nb; return
  fi
  ts_cmd "show port info 0"
  local info=$TS_OUT
  ts_cmd "show port 0 rss-hash key"
  local key
  key=$(grep -A1 "RSS key:" <<<"$TS_OUT" | tail -1 | tr -d ' \r' | tr 'A-F' 'a-f')
  ts_cmd "set fwd rxonly"
  ts_cmd "set verbose 1"
  rss_burst
  local multi=$RSS_SEEN why
  why=$(rss_reta_ok "$reta")
  local multi_ok=$?
  ts_quit
  local flows queues
  flows=$(awk '{print $1}' <<<"$multi" | sort -u | grep -c .)
  queues=$(awk '{print $2}' <<<"$multi" | sort -u | grep -c .)
  if ! grep -q "Redirection table size: 128" <<<"$info" ||
    ! grep -q "Hash key size in bytes: 40" <<<"$info" ||
    ! grep -A2 "Supported RSS offload flow types" <<<"$info" | tr '\n' ' ' |
    grep -q "ipv4 .*ipv4-tcp .*ipv6 .*ipv6-tcp"; then
    fail $name "show port info does not report the RSS capabilities (log $TS_LOG)"
    nb_stop $nb; return
  fi
  if [[ $key != "$RSS_KEY" ]]; then
    fail $name "show port 0 rss-hash key gave '$key', not DPDK's default key"
    nb_stop $nb; return
  fi
  if ((multi_ok != 0 || flows < 16 || queues < 2)); then
    fail $name "many flows: $flows hashes over $queues queues; $why (log $TS_LOG)"
    nb_stop $nb; return
  fi

  # One flow (198.18.0.1 -> 198.18.0.2, testpmd's txonly): rte_softrss's
  # hash; a RETA update moves it; a new key gives rte_softrss's new hash.
  ts_start tp-rss-one "net_xenpv0,backend=sim:$RUN/rss.sock" --rxq=4 --txq=4 ||
    { fail $name "testpmd did not start"; nb_stop $nb; return; }
  ts_cmd "set fwd rxonly"
  ts_cmd "set verbose 1"
  local want got_h got_q n
  want=$("$SOFTRSS" 198.18.0.1 198.18.0.2 9 9 0 "$RSS_KEY")
  rss_burst
  n=$(grep -c . <<<"$RSS_SEEN")
  got_h=$(awk '{print $1}' <<<"$RSS_SEEN" | sort -u | tr '\n' ' ')
  if [[ $got_h != "$want " ]] || ! rss_reta_ok "$reta" >/dev/null || ((n == 0)); then
    fail $name "one flow: hashes '$got_h' (rte_softrss: $want), $n packets (log $TS_LOG)"
    ts_quit; nb_stop $nb; return
  fi
  local entry=$((want % 128)) old moved
  old=$(sed -n "$((entry + 1))p" "$reta")
  moved=$(((old + 1) % 4))
  ts_cmd "port config 0 rss reta ($entry,$moved)"
  sed -i "$((entry + 1))s/.*/$moved/" "$reta"
  ts_cmd "show port 0 rss reta 128 (0xffffffffffffffff,0xffffffffffffffff)"
  local shown
  shown=$(grep -oE "hash index=$entry, queue=[0-9]+" <<<"$TS_OUT" | grep -oE "[0-9]+$")
  rss_burst
  got_q=$(awk '{print $2}' <<<"$RSS_SEEN" | sort -u | tr '\n' ' ')
  if [[ $shown != "$moved" || $got_q != "$moved " ]]; then
    fail $name "reta ($entry,$moved): show rss reta says '$shown', packets on queues '$got_q'"
    ts_quit; nb_stop $nb; return
  fi
  local key_hex2 want2
  key_hex2=$(tr 'a-f' 'A-F' <<<"$RSS_KEY2")
  ts_cmd "port config 0 rss-hash-key ipv4 $key_hex2"
  want2=$("$SOFTRSS" 198.18.0.1 198.18.0.2 9 9 0 "$RSS_KEY2")
  rss_burst
  got_h=$(awk '{print $1}' <<<"$RSS_SEEN" | sort -u | tr '\n' ' ')
  local reta_ok=0
  rss_reta_ok "$reta" >/dev/null || reta_ok=1
  ts_cmd "show port 0 rss-hash key"
  key=$(grep -A1 "RSS key:" <<<"$TS_OUT" | tail -1 | tr -d ' \r' | tr 'A-F' 'a-f')
  ts_quit
  nb_stop $nb
  if [[ $got_h != "$want2 " || $reta_ok != 0 || $key != "$RSS_KEY2" || $want2 == "$want" ]]; then
    fail $name "new key: hashes '$got_h' (rte_softrss: $want2), key shown '$key' (log $TS_LOG)"
    return
  fi
  pass $name "$flows flows over $queues queues each on reta[hash % 128]; flow 198.18.0.1 hash" \
    "$want = rte_softrss, moved by reta to queue $moved; new key: $want2 = rte_softrss"
}
