# RSS through Linux netback's control ring (netif.h feature-ctrl-ring; Linux netback's hash.c),
# sourced by domu.sh. dom0 re-creates vif 1 so that Linux netback serves 4 queues; testpmd with 4
# rx queues on it configures Toeplitz hashing (DPDK's default key) through net_xenpv, then
# replaces the RETA by one that is not the default (entry j -> queue 3 - j % 4: Linux netback's
# fallback without a mapping, hash % queues, would put each frame elsewhere) with reta_update
# while connected; dom0 sends many IPv4 flows into the vif; Linux netback picks each frame's queue
# from the mapping and hands the hash over in a XEN_NETIF_EXTRA_TYPE_HASH extra. Every frame must
# arrive on reta[hash % 128] (the RETA as the port reports it) with the hash DPDK's rte_softrss
# computes for its addresses ($BIN/softrss), and the per-queue counts must be the ones the RETA
# predicts.

RSS_QUEUES=4
RSS_FLOWS=64
RSS_PER_FLOW=4
RSS_DOM0_OLD=
RSS_OLD_LIMIT=
RSS_RETA=
tp_reta_summary() { head -n 8 <<<"${RSS_RETA:-?}" | tr '\n' ' '; }

RSS_AUTOPROBE=
rss_cleanup() {
    [[ -n ${TP_PID:-} ]] && kill -0 "$TP_PID" 2>/dev/null && tcp_testpmd_stop
    [[ -n $RSS_DOM0_OLD ]] && xpv_dom0 netback_queues_restore 1 "$RSS_DOM0_OLD" >/dev/null
    [[ -n $RSS_OLD_LIMIT ]] && echo "$RSS_OLD_LIMIT" >"$GNTALLOC_LIMIT"
    [[ -n $RSS_AUTOPROBE ]] && echo "$RSS_AUTOPROBE" >/sys/bus/xen/drivers_autoprobe
}

check_rss_linux_netback() {
    local be start=$SECONDS key info out want seen n q i
    TP_PID=
    trap rss_cleanup EXIT
    [[ -x $BIN/softrss ]] || fail "no $BIN/softrss in the payload"
    be=$(xenstore-read device/vif/1/backend) || fail "no device/vif/1/backend"
    [[ $(xenstore-read "$be/feature-ctrl-ring" 2>/dev/null) == 1 ]] || fail "Linux netback offers no feature-ctrl-ring on $be"
    # dom0 re-creates vif 1 with Linux netback's max_queues raised (see action_netback_queues):
    # a kernel netfront loaded by an earlier check must not take the new vif.
    RSS_AUTOPROBE=$(</sys/bus/xen/drivers_autoprobe) || fail "no /sys/bus/xen/drivers_autoprobe"
    out=$("$XPV_BIND" --autoprobe off 2>&1) || fail "xpv-bind --autoprobe off: $out"
    out=$(xpv_dom0 netback_queues 1 "$RSS_QUEUES" "$VIF1_MAC") || fail "dom0: $out"
    RSS_DOM0_OLD=$out
    [[ $(xenstore-read "$be/multi-queue-max-queues" 2>/dev/null) == "$RSS_QUEUES" ]] ||
        fail "the re-created vif 1's backend offers $(xenstore-read "$be/multi-queue-max-queues" 2>&1) queues, not $RSS_QUEUES"
    # Each queue takes 514 grants (docs/net_xenpv.md): over gntalloc's default 1024.
    RSS_OLD_LIMIT=$(<"$GNTALLOC_LIMIT") || fail "no $GNTALLOC_LIMIT"
    ((RSS_OLD_LIMIT >= RSS_QUEUES * 514 + 64)) || echo $((RSS_QUEUES * 514 + 64)) >"$GNTALLOC_LIMIT" ||
        fail "cannot raise gntalloc's limit"

    TP_LOG=$XPV_RUN_DIR/testpmd-rss.log
    rm -f "$TP_FIFO"
    mkfifo "$TP_FIFO"
    exec 7<>"$TP_FIFO"
    stdbuf -oL -eL dpdk-testpmd --no-huge -m 256 --no-pci --no-shconf --file-prefix rss \
        --lcores=0@0,1@0 --vdev "net_xenpv0,vif=1" -- -i --rxq=$RSS_QUEUES --txq=$RSS_QUEUES \
        --total-num-mbufs=8192 <&7 >"$TP_LOG" 2>&1 &
    TP_PID=$!
    until (($(prompts) >= 1)); do
        kill -0 "$TP_PID" 2>/dev/null && ((SECONDS - start < 600)) ||
            fail "testpmd did not come up: $(tail -n 5 "$TP_LOG" | tr '\n' ' ')"
        sleep 1
    done
    grep -qE "Fail to start port|can not be set into started" "$TP_LOG" &&
        fail "the port did not start: $(grep -E 'net_xenpv|Fail|error' "$TP_LOG" | tail -n 4 | tr '\n' ' ')"
    info=$(tp "show port info 0")
    grep -q "Redirection table size: 128" <<<"$info" && grep -q "Hash key size in bytes: 40" <<<"$info" ||
        fail "show port info reports no RSS over Linux netback's control ring: $(grep -iE 'rss|redirection|hash' <<<"$info" | tr '\n' ' ')"
    key=$(tp "show port 0 rss-hash key" | grep -A1 "RSS key:" | tail -n 1 | tr -d ' \r' | tr 'A-F' 'a-f')
    [[ ${#key} == 80 ]] || fail "show port 0 rss-hash key gave '$key'"
    # The RETA replaced, 8 entries a command (testpmd takes the list as one token of at most
    # 128 characters).
    local j cmd
    for ((i = 0; i < 128; i += 8)); do
        cmd="port config 0 rss reta "
        for ((j = i; j < i + 8; j++)); do cmd+="($j,$((RSS_QUEUES - 1 - j % RSS_QUEUES))),"; done
        out=$(tp "${cmd%,}") || fail "$out"
        grep -qiE "fail|error|invalid|bad " <<<"$out" &&
            fail "${cmd%,}: $(grep -v '^testpmd> port config' <<<"$out" | tr '\n' ' '); the driver said: $(grep -E 'net_xenpv|RSS|xpv' "$TP_LOG" | tail -n 4 | tr '\n' ' ')"
    done
    RSS_RETA=$(tp "show port 0 rss reta 128 (0xffffffffffffffff,0xffffffffffffffff)" | grep -oE "hash index=[0-9]+, queue=[0-9]+")
    local -a reta=()
    while read -r j q; do reta[j]=$q; done < <(sed -E 's/hash index=([0-9]+), queue=([0-9]+)/\1 \2/' <<<"$RSS_RETA")
    ((${#reta[@]} == 128)) || fail "show port 0 rss reta gave ${#reta[@]} of 128 entries: $(head -n 4 <<<"$RSS_RETA" | tr '\n' ' ')"
    for ((j = 0; j < 128; j++)); do
        ((reta[j] == RSS_QUEUES - 1 - j % RSS_QUEUES)) || fail "after reta_update, entry $j is queue ${reta[j]}, not $((RSS_QUEUES - 1 - j % RSS_QUEUES))"
    done
    tp "set fwd rxonly" >/dev/null
    tp "set verbose 1" >/dev/null
    out=$(tp "start" 120 "packet forwarding - ports=") || fail "$out"
    out=$(xpv_dom0 send_flows 1 "$VIF1_MAC" "$RSS_FLOWS" "$RSS_PER_FLOW") || fail "dom0: $out"
    sleep 3
    tp "stop" >/dev/null
    # Static grants (netif.h GET_GREF_MAPPING_SIZE): Linux netback answers NOT_SUPPORTED, so every
    # queue runs on grant copies, as before the control ring, and the frames above still came.
    local xs sg=0 gc=0
    xs=$(tp "show port xstats 0")
    local name v
    for ((i = 0; i < RSS_QUEUES; i++)); do
        for name in static_grant grant_copy; do
            v=$(sed -nE "s/^ *q${i}_${name}_connections: +([0-9]+)\$/\1/p" <<<"$xs" | tail -n 1)
            [[ -n $v ]] || fail "show port xstats 0 has no q${i}_${name}_connections"
            if [[ $name == static_grant ]]; then sg=$((sg + v)); else
                ((v >= 1)) || fail "queue $i never connected on grant copies (q${i}_grant_copy_connections $v)"
                gc=$((gc + 1))
            fi
        done
    done
    ((sg == 0 && gc == RSS_QUEUES)) ||
        fail "over Linux netback (static grants NOT_SUPPORTED): $sg queue connections with static grants, $gc with grant copies; want 0 and $RSS_QUEUES"
    tcp_testpmd_stop

    # Our frames only (other traffic on xenbr0 reaches the vif too): "HASH QUEUE" per frame.
    seen=$(grep -io "src=02:00:00:00:00:01 .*type=0x0800 .*RSS hash=0x[0-9a-f]* .*Receive queue=0x[0-9a-f]*" "$TP_LOG" |
        sed -E 's/.*RSS hash=0x([0-9a-fA-F]+) .*Receive queue=0x([0-9a-fA-F]+)/\1 \2/' |
        while read -r h q; do printf '0x%08x %d\n' "0x$h" "0x$q"; done)
    n=$(grep -c . <<<"$seen")
    ((n == RSS_FLOWS * RSS_PER_FLOW)) ||
        fail "dom0 $out; testpmd printed $n of our frames with an RSS hash (log $TP_LOG)"
    # Toeplitz over the IPv4 addresses (testpmd asks for RTE_ETH_RSS_IP: netif's IPv4 and IPv6 types).
    want=$("$BIN/softrss" 10.99.1.0 10.99.0.3 0 0 0 "$key" "$RSS_FLOWS") || fail "softrss failed"
    local bad_q=0 h
    while read -r h q; do
        ((reta[h % 128] == q)) || bad_q=$((bad_q + 1))
    done <<<"$seen"
    ((bad_q == 0)) || fail "$bad_q of $n frames not on reta[hash % 128]; frames per queue: $(awk '{print $2}' <<<"$seen" | sort | uniq -c | tr -s ' \n' ' '); first (hash queue): $(head -n 8 <<<"$seen" | tr '\n' ','); rte_softrss's first: $(head -n 4 <<<"$want" | tr '\n' ','); reta shown: $(tp_reta_summary)"
    local seen_hashes want_hashes
    seen_hashes=$(awk '{print $1}' <<<"$seen" | sort | uniq -c | awk '{print $1, $2}')
    want_hashes=$(sort <<<"$want" | awk -v k="$RSS_PER_FLOW" '{print k, $1}')
    [[ $seen_hashes == "$want_hashes" ]] ||
        fail "the hashes of the frames are not rte_softrss's of their $RSS_FLOWS flows, $RSS_PER_FLOW each (log $TP_LOG)"
    local predicted="" got=""
    for ((i = 0; i < RSS_QUEUES; i++)); do
        predicted+=" $(($(while read -r h; do ((reta[h % 128] == i)) && echo "$h"; done <<<"$want" | grep -c .) * RSS_PER_FLOW))"
        got+=" $(awk -v q="$i" '$2 == q' <<<"$seen" | grep -c .)"
    done
    [[ $got == "$predicted" ]] || fail "frames per queue:$got, the RETA predicts$predicted"
    local spread
    spread=$(tr ' ' '\n' <<<"$got" | grep -c '[1-9]')
    ((spread >= 2)) || fail "all $n frames on one queue:$got"
    pass "Linux netback steered $n frames of $RSS_FLOWS IPv4 flows over $RSS_QUEUES queues:$got (the RETA set by reta_update, entry j -> queue 3 - j % 4, predicts$predicted), every hash = rte_softrss with the port's key; static grants refused (NOT_SUPPORTED), all $gc queues on grant copies"
}
