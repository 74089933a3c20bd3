#!/usr/bin/env bash
# Real-Xen end-to-end run: Xen 4.17 in QEMU (TCG), Linux netback in dom0, one PV domU; the
# payload's check scripts run in both and report CHECK lines. See e2e/xen/README.md.
#
# Usage: e2e/xen/run.sh [--payload DIR] [--log FILE] [--timeout SECONDS] [--keep-work]
#
#   --payload DIR      files to put in the guests at /xpv (read-only). checks/ in it holds the
#                      check scripts; without one, e2e/xen/checks/ is used. Default: empty.
#   --log FILE         the CHECK lines (default: build/e2e-xen/e2e.log in the repo); the whole
#                      serial log goes next to it as <FILE without .log>-serial.log.
#   --timeout SECONDS  time limit of the QEMU run, boot to power-off (default 1500).
#   --keep-work        keep the per-run work directory (overlays, payload image).
#
# Exit status: 0 when there was at least one CHECK and none failed; 1 when a check failed;
# 2 when the run could not be set up (missing prerequisite, image build failure, bad option).
#
# Environment: XPV_E2E_CACHE (image cache, default /var/cache/xpv/e2e-xen),
#              XPV_E2E_WORKDIR (parent of the per-run work dir, default /var/tmp),
#              XPV_E2E_XEN_ARGS_EXTRA (more Xen command-line options),
#              XPV_E2E_TCG_THREAD (QEMU's TCG threading: multi, the default, or single).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

PAYLOAD=
LOG=$REPO/build/e2e-xen/e2e.log
TIMEOUT=1500
KEEP_WORK=0
CACHE_ROOT=${XPV_E2E_CACHE:-/var/cache/xpv/e2e-xen}
WORK_PARENT=${XPV_E2E_WORKDIR:-/var/tmp}
BUILD_TIMEOUT=2400   # seconds for a one-off image build
MIN_BUILD_SPACE_MB=8192
MIN_RUN_SPACE_MB=2048

HOST_PACKAGES=(qemu-system-x86 qemu-utils debootstrap e2fsprogs cpio gzip kmod util-linux coreutils)

QEMU_CPU=qemu64,+ssse3,+sse4.1,+sse4.2,+popcnt,+cx16,+svm,+npt  # reliable (README); SVM+NPT for PVH and HVM domUs
QEMU_MEM_MB=2048
XEN_ARGS="console=com1 com1=115200,8n1 dom0_mem=512M,max:512M loglvl=all guest_loglvl=all"
XEN_ARGS+=${XPV_E2E_XEN_ARGS_EXTRA:+ $XPV_E2E_XEN_ARGS_EXTRA}  # e.g. "asid=0" (scripts/e2e-xen-stress.sh)
DOM0_ARGS="root=/dev/vda rw console=hvc0 earlyprintk=xen net.ifnames=0 panic=10 log_buf_len=1M"
DOM0_ARGS+=" init=/usr/sbin/xpv-dom0-init xpv.domu_root=/dev/vdb xpv.payload=/dev/vdc"

# Kernel log lines that fail a run (the guests' init scripts use the same pattern for their dumps).
KLOG_RE='segfault at|traps:|general protection'

usage() { sed -n '5,13s/^# \{0,1\}//p' "$0"; }

while (($#)); do
    case $1 in
        --payload) PAYLOAD=${2:?--payload needs a directory}; shift 2 ;;
        --log) LOG=${2:?--log needs a file}; shift 2 ;;
        --timeout) TIMEOUT=${2:?--timeout needs seconds}; shift 2 ;;
        --keep-work) KEEP_WORK=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done
[[ $TIMEOUT =~ ^[0-9]+$ && $TIMEOUT -gt 0 ]] || { echo "run.sh: --timeout needs a positive number of seconds" >&2; exit 2; }
[[ -z $PAYLOAD || -d $PAYLOAD ]] || { echo "run.sh: payload '$PAYLOAD' is not a directory" >&2; exit 2; }
[[ -z $PAYLOAD ]] || PAYLOAD=$(cd "$PAYLOAD" && pwd)
mkdir -p "$(dirname "$LOG")" || { echo "run.sh: cannot create the directory of $LOG" >&2; exit 2; }
LOG=$(cd "$(dirname "$LOG")" && pwd)/$(basename "$LOG")
SERIAL=${LOG%.log}-serial.log
for f in "$LOG" "$SERIAL"; do
    { : >> "$f"; } 2>/dev/null || { echo "run.sh: cannot write $f" >&2; exit 2; }
done

T0=$SECONDS
say() { printf '%s [%4ds] %s\n' "$(date +%H:%M:%S)" $((SECONDS - T0)) "$*"; }
die() { say "error: $*" >&2; exit 2; }

# ---------------------------------------------------------------------------------------------
# Cleanup: never leave QEMU, a build or a mount behind.
# ---------------------------------------------------------------------------------------------
WORK=
QEMU_PID=
BUILD_PID=
BUILD_DIR=

kill_group() { # PGID NAME: TERM, then KILL, the whole process group
    local pgid=$1 i
    kill -0 -- "-$pgid" 2>/dev/null || return 0
    kill -TERM -- "-$pgid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        kill -0 -- "-$pgid" 2>/dev/null || break
        sleep 0.2
    done
    kill -KILL -- "-$pgid" 2>/dev/null || true
    wait "$pgid" 2>/dev/null || true
    if pgrep -g "$pgid" >/dev/null; then
        say "warning: processes of $2 (group $pgid) are still there: $(pgrep -a -g "$pgid" | tr '\n' ';')"
    fi
}

unmount_under() { # DIR: lazily unmount whatever a killed build left mounted below DIR
    local m
    findmnt -rn -o TARGET | awk -v d="$1/" 'index($0, d) == 1' | sort -r | while read -r m; do
        umount -l "$m" || true
    done
}

remove_build_dir() {
    unmount_under "$1"
    rm -rf --one-file-system "$1"
}

# shellcheck disable=SC2317  # cleanup and on_signal run from traps
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n $QEMU_PID ]]; then
        kill_group "$QEMU_PID" QEMU
        QEMU_PID=
    fi
    if [[ -n $BUILD_PID ]]; then
        kill_group "$BUILD_PID" "the image build"
        BUILD_PID=
    fi
    [[ -n $BUILD_DIR && -d $BUILD_DIR ]] && remove_build_dir "$BUILD_DIR"
    if [[ -n $WORK && -d $WORK ]]; then
        if ((KEEP_WORK)); then
            say "work directory kept: $WORK"
        else
            rm -rf --one-file-system "$WORK"
        fi
    fi
    exit "$rc"
}
# shellcheck disable=SC2317
on_signal() { # NAME STATUS
    say "$1: stopping"
    if [[ -s $LOG ]]; then
        echo "CHECK completed FAIL run $1" >> "$LOG"
        echo "# result: FAIL ($1)" >> "$LOG"
    fi
    exit "$2"
}
trap cleanup EXIT
trap 'on_signal interrupted 130' INT
trap 'on_signal terminated 143' TERM

# follow FILE: put the complete lines added to FILE since the last call into $WORK/new-lines.
declare -A FOLLOWED=()
follow() {
    local file=$1 done=${FOLLOWED[$1]:-0} total
    total=$(wc -l < "$file")
    : > "$WORK/new-lines"
    ((total > done)) || return 0
    FOLLOWED[$file]=$total
    sed -n "$((done + 1)),${total}p; ${total}q" "$file" | tr -d '\r' > "$WORK/new-lines"
}
show_build_progress() {
    local line
    follow "$WORK/build.log"
    while IFS= read -r line; do say "  $line"; done < "$WORK/new-lines"
}

free_mb() { df -Pm "$1" | awk 'NR == 2 { print $4 }'; }

# ---------------------------------------------------------------------------------------------
# Prerequisites
# ---------------------------------------------------------------------------------------------
ensure_host_packages() {
    local p missing=()
    for p in "${HOST_PACKAGES[@]}"; do
        [[ $(dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null) == ii* ]] || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    if [[ $(id -u) != 0 ]]; then
        die "missing host packages: ${missing[*]}; install them as root: apt-get install ${missing[*]}"
    fi
    say "installing host packages: ${missing[*]}"
    if ! apt-get install -y -q --no-install-recommends "${missing[@]}" > "$WORK/apt-host.log" 2>&1; then
        apt-get update -q >> "$WORK/apt-host.log" 2>&1 || true
        apt-get install -y -q --no-install-recommends "${missing[@]}" >> "$WORK/apt-host.log" 2>&1 || {
            tail -n 15 "$WORK/apt-host.log" >&2
            die "cannot install host packages: ${missing[*]} (Debian's package mirror unreachable? disk full?)"
        }
    fi
}

# ---------------------------------------------------------------------------------------------
# Images: cached per key = hash(candidate versions of the image packages + e2e/xen/image/*)
# ---------------------------------------------------------------------------------------------
candidates() { # PKG...: "pkg version" lines from the host's apt lists
    { apt-cache policy "$@" 2>/dev/null || true; } |
        awk '/^[^ ]/ { p = $1; sub(/:$/, "", p) } /^  Candidate:/ { print p, $2 }'
}

image_key() { # sets KEY
    local pkgs cands missing
    mapfile -t pkgs < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$HERE/image/packages.txt")
    cands=$(candidates "${pkgs[@]}")
    missing=$(comm -23 <(printf '%s\n' "${pkgs[@]}" | sort) <(awk '$2 != "(none)" { print $1 }' <<<"$cands" | sort))
    if [[ -n $missing ]]; then
        [[ $(id -u) == 0 ]] || die "no candidate version for: $missing (run apt-get update as root)"
        say "apt-get update (no candidate for: ${missing//$'\n'/ })"
        apt-get update -q > "$WORK/apt-update.log" 2>&1 || true
        cands=$(candidates "${pkgs[@]}")
        missing=$(comm -23 <(printf '%s\n' "${pkgs[@]}" | sort) <(awk '$2 != "(none)" { print $1 }' <<<"$cands" | sort))
        [[ -z $missing ]] || die "the host's apt sources have no: ${missing//$'\n'/ }"
    fi
    {
        echo "# packages (candidate versions)"
        echo "$cands"
        echo "# image inputs"
        (cd "$HERE/image" && sha256sum -- *)
    } > "$WORK/image-key.txt"
    KEY=$(sha256sum < "$WORK/image-key.txt" | cut -c1-16)
}

build_image() { # KEY IMGDIR
    local key=$1 img=$2 rc=0
    [[ $(id -u) == 0 ]] || die "the image $key must be built, which needs root"
    (($(free_mb "$CACHE_ROOT") >= MIN_BUILD_SPACE_MB)) ||
        die "building the image needs ${MIN_BUILD_SPACE_MB} MiB free in $CACHE_ROOT; $(free_mb "$CACHE_ROOT") MiB available"
    BUILD_DIR=$CACHE_ROOT/.build-$key-$$
    say "images: building $key in $BUILD_DIR (one-off, several minutes)"
    setsid timeout "$BUILD_TIMEOUT" "$HERE/image/build.sh" "$BUILD_DIR" \
        < /dev/null > "$WORK/build.log" 2>&1 {LOCK_FD}>&- &
    BUILD_PID=$!
    while kill -0 "$BUILD_PID" 2>/dev/null; do
        show_build_progress
        sleep 2
    done
    wait "$BUILD_PID" || rc=$?
    BUILD_PID=
    show_build_progress
    if ((rc != 0)); then
        mkdir -p "$(dirname "$LOG")"
        cp "$WORK/build.log" "${LOG%.log}-image-build.log"
        die "image build failed (exit $rc; log: ${LOG%.log}-image-build.log)"
    fi
    cp "$WORK/image-key.txt" "$BUILD_DIR/key.txt"
    touch "$BUILD_DIR/ready"
    mv "$BUILD_DIR" "$img"
    BUILD_DIR=
}

prune_images() { # KEEP: remove every other image and stale build directory
    local d pid
    for d in "$CACHE_ROOT"/* "$CACHE_ROOT"/.build-*; do
        [[ -d $d && $d != "$1" ]] || continue
        if [[ $d == */.build-* ]]; then
            pid=${d##*-}
            [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && continue
        fi
        say "images: pruning $(basename "$d")"
        remove_build_dir "$d"
    done
}

# ---------------------------------------------------------------------------------------------
# Result bookkeeping
# ---------------------------------------------------------------------------------------------
N_CHECKS=0
N_FAILED=0
N_GUEST_CHECKS=0
record_check() { # "CHECK name PASS|FAIL ...": log it and count it
    echo "$1" >> "$LOG"
    say "$1"
    N_CHECKS=$((N_CHECKS + 1))
    [[ $1 =~ ^CHECK\ [^\ ]+\ PASS ]] || N_FAILED=$((N_FAILED + 1))
}
harness_check() { # NAME PASS|FAIL DETAILS...
    local name=$1 result=$2
    shift 2
    record_check "CHECK $name $result${*:+ $*}"
}

# ---------------------------------------------------------------------------------------------
# Serial log parsing
# ---------------------------------------------------------------------------------------------
SEEN_XEN=0 DOM0_INIT=0 DOM0_READY=0 DOM0_NOT_READY='' END_SEEN=0
DOM0_KLOG='' DOMU_KLOGS=0 DOMU_KLOG_HITS=0 DOM0_LIVE_HITS=0 DOMU_LIVE_HITS=0
SCRIPT_RCS=()
# Every domU dom0 created must run domu.sh to its end and dump its kernel log: one that goes
# away before (a guest crash, a toolstack destroy) is a failure, not a shorter list of checks.
DOMUS_CREATED=() DOMUS_ENDED=() DOMUS_KLOGGED=()
DOMU_CRASHES=()  # what dom0 said of a domU Xen saw crash (and that it booted it again)
T_QEMU='' T_DOM0_READY='' T_DOMU=''


handle_line() {
    local line=$1 src=dom0 body=$1
    if [[ $line == "U| "* ]]; then
        src=domu
        body=${line#U| }
    fi
    if [[ $body =~ (^|[^A-Za-z0-9_])(CHECK [A-Za-z0-9_.:/-]+ (PASS|FAIL)( .*)?)$ ]]; then
        record_check "${BASH_REMATCH[2]}"
        N_GUEST_CHECKS=$((N_GUEST_CHECKS + 1))
        return
    fi
    # A table a check logged for the record ("seed table: | ... |"): into the log as it is.
    if [[ $body =~ (^|\ )(seed\ table:\ \|.*)$ ]]; then
        echo "${BASH_REMATCH[2]}" >> "$LOG"
        return
    fi
    if [[ $body =~ ^\[\ *[0-9]+\.[0-9]+\]\ .*($KLOG_RE) ]]; then
        say "kernel log ($src): $body"
        if [[ $src == dom0 ]]; then DOM0_LIVE_HITS=$((DOM0_LIVE_HITS + 1)); else DOMU_LIVE_HITS=$((DOMU_LIVE_HITS + 1)); fi
        return
    fi
    case $src:$body in
        "dom0:(XEN) Xen version"*)
            ((SEEN_XEN)) || say "boot: Xen is starting"
            SEEN_XEN=1 ;;
        "dom0:XPV: dom0 init"*)
            DOM0_INIT=1
            say "boot: dom0 kernel up, init running" ;;
        "dom0:XPV: dom0 ready"*)
            DOM0_READY=1
            T_DOM0_READY=$((SECONDS - T_QEMU))
            say "dom0 ready"
            harness_check boot PASS "dom0 ready ${T_DOM0_READY}s after QEMU start" ;;
        "dom0:XPV: dom0 not ready: "*)
            DOM0_NOT_READY=${body#XPV: dom0 not ready: }
            say "dom0 NOT ready: $DOM0_NOT_READY" ;;
        "dom0:XPV: domU "*" crashed: "* | "dom0:XPV: domU "*" booted again after a crash")
            DOMU_CRASHES+=("${body#XPV: }")
            say "${body#XPV: }" ;;
        "dom0:XPV: domU created"*)
            [[ -n $T_DOMU ]] || T_DOMU=$((SECONDS - T_QEMU))
            [[ $body =~ name=([^ ]+) ]] && DOMUS_CREATED+=("${BASH_REMATCH[1]}")
            say "${body#XPV: }" ;;
        "domu:XPV: domU ready"* | "domu:XPV: domU not ready"*)
            say "${body#XPV: }" ;;
        *"XPV: dom0.sh rc="* | *"XPV: domu.sh rc="*)
            [[ $body =~ XPV:\ (dom0|domu)\.sh\ rc=([0-9]+) ]] &&
                SCRIPT_RCS+=("${BASH_REMATCH[1]}.sh=${BASH_REMATCH[2]}")
            [[ $src == domu && ${#DOMUS_CREATED[@]} -gt 0 ]] && DOMUS_ENDED+=("${DOMUS_CREATED[-1]}")
            say "${body#*XPV: }" ;;
        "dom0:XPV-KLOG dom0 END count="*)
            DOM0_KLOG=${body#XPV-KLOG dom0 END count=} ;;
        "domu:XPV-KLOG domu END count="*)
            DOMU_KLOGS=$((DOMU_KLOGS + 1))
            ((${#DOMUS_CREATED[@]})) && DOMUS_KLOGGED+=("${DOMUS_CREATED[-1]}")
            DOMU_KLOG_HITS=$((DOMU_KLOG_HITS + ${body#XPV-KLOG domu END count=})) ;;
        *"XPV-KLOG "*" | "*)
            say "kernel log dump: $body" ;;
        "dom0:XPV: end"*)
            END_SEEN=1
            say "end marker: dom0 powers off" ;;
        *"XPV-INITRAMFS: "*)
            say "$line" ;;
    esac
}

# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------
mkdir -p "$WORK_PARENT"
WORK=$(mktemp -d "$WORK_PARENT/xpv-e2e-xen.XXXXXX")
: > "$LOG"
: > "$SERIAL"
echo "# xpv e2e-xen $(date -u +%Y-%m-%dT%H:%M:%SZ) payload=${PAYLOAD:-(none)}" >> "$LOG"

say "prerequisites"
ensure_host_packages
(($(free_mb "$WORK") >= MIN_RUN_SPACE_MB)) ||
    die "a run needs ${MIN_RUN_SPACE_MB} MiB free in $WORK_PARENT; $(free_mb "$WORK") MiB available"

T_PHASE=$SECONDS
say "images"
if ! mkdir -p "$CACHE_ROOT" 2>/dev/null || [[ ! -w $CACHE_ROOT ]]; then
    die "the image cache $CACHE_ROOT is not writable (run as root, or set XPV_E2E_CACHE)"
fi
image_key
IMG=$CACHE_ROOT/$KEY
exec {LOCK_FD}>> "$CACHE_ROOT/.lock"
flock -n "$LOCK_FD" || { say "images: waiting for another run's image lock"; flock "$LOCK_FD"; }
if [[ -f $IMG/ready ]]; then
    say "images: using cached image $KEY"
else
    build_image "$KEY" "$IMG"
fi
prune_images "$IMG"
echo "# image $KEY: $(grep -E '^(linux-image-[0-9][^ ]*|xen-hypervisor-[^ ]*|dpdk) ' "$IMG/manifest.txt" | tr '\n' ' ')" >> "$LOG"
T_IMAGES=$((SECONDS - T_PHASE))

T_PHASE=$SECONDS
say "payload: ${PAYLOAD:-(empty)}"
stage=$WORK/payload
mkdir -p "$stage"
[[ -z $PAYLOAD ]] || cp -a "$PAYLOAD/." "$stage/"
if [[ -d $stage/checks ]]; then
    say "payload: using the payload's own checks/"
else
    cp -a "$HERE/checks" "$stage/checks"
    say "payload: using e2e/xen/checks/"
fi
for f in dom0.sh domu.sh; do
    [[ -x $stage/checks/$f ]] || say "warning: payload has no executable checks/$f"
done
payload_kb=$(($(du -sk "$stage" | cut -f1) * 5 / 4 + 16384))
mke2fs -q -t ext4 -O ^has_journal -E lazy_itable_init=0 -L xpv-payload \
    -d "$stage" "$WORK/payload.img" "${payload_kb}k" > /dev/null
say "payload: $((payload_kb / 1024)) MiB ext4"
T_PAYLOAD=$((SECONDS - T_PHASE))

say "boot: QEMU (TCG), time limit ${TIMEOUT}s"
qemu-img create -q -f qcow2 -b "$IMG/root.img" -F raw "$WORK/dom0.qcow2"
qemu-img create -q -f qcow2 -b "$IMG/root.img" -F raw "$WORK/domu.qcow2"
T_QEMU=$SECONDS
setsid qemu-system-x86_64 \
    -name xpv-e2e-xen -nodefaults -no-user-config -display none -monitor none -no-reboot \
    -accel "tcg,thread=${XPV_E2E_TCG_THREAD:-multi},tb-size=256" -cpu "$QEMU_CPU" -smp 2 -m "$QEMU_MEM_MB" \
    -chardev "file,id=serial0,path=${SERIAL//,/,,}" -serial chardev:serial0 \
    -drive "file=$WORK/dom0.qcow2,if=virtio,format=qcow2,cache=unsafe" \
    -drive "file=$WORK/domu.qcow2,if=virtio,format=qcow2,cache=unsafe" \
    -drive "file=$WORK/payload.img,if=virtio,format=raw,readonly=on" \
    -kernel "$IMG/xen.elf" -append "$XEN_ARGS" \
    -initrd "$IMG/vmlinuz $DOM0_ARGS,$IMG/initrd.img" \
    < /dev/null > "$WORK/qemu.log" 2>&1 {LOCK_FD}>&- &
QEMU_PID=$!

deadline=$((T_QEMU + TIMEOUT))
timed_out=0
qemu_rc=
locked=1
end_at=
while :; do
    follow "$SERIAL"
    while IFS= read -r line; do handle_line "$line"; done < "$WORK/new-lines"
    # QEMU has opened the base image once Xen prints: other runs may prune it from now on.
    if ((locked)) && { ((SEEN_XEN)) || ((SECONDS - T_QEMU > 30)); }; then
        flock -u "$LOCK_FD"
        locked=0
    fi
    if ! kill -0 "$QEMU_PID" 2>/dev/null; then
        qemu_rc=0
        wait "$QEMU_PID" || qemu_rc=$?
        QEMU_PID=
        follow "$SERIAL"
        while IFS= read -r line; do handle_line "$line"; done < "$WORK/new-lines"
        break
    fi
    if ((SECONDS >= deadline)); then
        timed_out=1
        say "time limit of ${TIMEOUT}s reached: killing QEMU"
        kill_group "$QEMU_PID" QEMU
        QEMU_PID=
        break
    fi
    if ((END_SEEN)); then
        : "${end_at:=$SECONDS}"
        if ((SECONDS - end_at > 60)); then
            say "QEMU did not exit 60s after the end marker: killing it"
            kill_group "$QEMU_PID" QEMU
            QEMU_PID=
            break
        fi
    fi
    sleep 1
done
T_RUN=$((SECONDS - T_QEMU))
((locked)) && flock -u "$LOCK_FD"

# --- harness checks ---
if ((!DOM0_READY)); then
    if [[ -n $DOM0_NOT_READY ]]; then
        harness_check boot FAIL "dom0 not ready: $DOM0_NOT_READY"
    elif ((DOM0_INIT)); then
        harness_check boot FAIL "dom0 init started but never became ready"
    elif ((SEEN_XEN)); then
        harness_check boot FAIL "Xen started but dom0's init never ran"
    else
        harness_check boot FAIL "no output from Xen (see $SERIAL and $WORK/qemu.log)"
    fi
fi

if [[ -z $DOM0_KLOG ]]; then
    harness_check kernel-log-dom0 FAIL "dom0 never dumped its kernel log ($DOM0_LIVE_HITS crash lines on the console)"
elif ((DOM0_KLOG > 0 || DOM0_LIVE_HITS > 0)); then
    harness_check kernel-log-dom0 FAIL "$DOM0_KLOG lines matching '$KLOG_RE' in dmesg, $DOM0_LIVE_HITS on the console"
else
    harness_check kernel-log-dom0 PASS "no line matching '$KLOG_RE'"
fi

if ((DOMU_KLOGS == 0)); then
    harness_check kernel-log-domu FAIL "no domU dumped its kernel log ($DOMU_LIVE_HITS crash lines on the console)"
elif ((DOMU_KLOG_HITS > 0 || DOMU_LIVE_HITS > 0)); then
    harness_check kernel-log-domu FAIL "$DOMU_KLOG_HITS lines matching '$KLOG_RE' in dmesg, $DOMU_LIVE_HITS on the console"
else
    harness_check kernel-log-domu PASS "no line matching '$KLOG_RE' ($DOMU_KLOGS domU)"
fi

# One line per domU that did not finish: which one, and what it left undone. A domU that
# crashed and was booted again (same name) counts as finished when the second boot finished;
# the crash itself is in the completed line below.
for d in $(printf '%s\n' "${DOMUS_CREATED[@]}" | sort -u); do
    missing=()
    [[ " ${DOMUS_ENDED[*]} " == *" $d "* ]] || missing+=("domu.sh never reported its exit code")
    [[ " ${DOMUS_KLOGGED[*]} " == *" $d "* ]] || missing+=("its kernel log was never dumped")
    ((${#missing[@]})) || continue
    harness_check "$d-end" FAIL "domU $d went away before its checks ended: ${missing[0]}${missing[1]:+; ${missing[1]}} (see $SERIAL)"
done

bad_rcs=()
for r in "${SCRIPT_RCS[@]}"; do [[ $r == *=0 ]] || bad_rcs+=("$r"); done
if ((${#SCRIPT_RCS[@]} == 0)); then
    harness_check scripts FAIL "no check script ran to its end"
elif ((${#bad_rcs[@]})); then
    harness_check scripts FAIL "non-zero exit: ${bad_rcs[*]}"
elif ((N_GUEST_CHECKS == 0)); then
    harness_check scripts FAIL "the check scripts reported no CHECK line"
else
    harness_check scripts PASS "${SCRIPT_RCS[*]}"
fi

if ((timed_out)); then
    harness_check completed FAIL "timeout after ${TIMEOUT} s"
elif ((!END_SEEN)); then
    harness_check completed FAIL "QEMU exited (status ${qemu_rc:-?}) before the end marker"
    say "last lines of the serial log:"
    tail -n 25 "$SERIAL" | tr -d '\r' | sed 's/^/    /'
    [[ -s $WORK/qemu.log ]] && { say "QEMU said:"; sed 's/^/    /' "$WORK/qemu.log"; }
else
    crashes=''
    ((${#DOMU_CRASHES[@]})) && crashes="; $(printf '%s; ' "${DOMU_CRASHES[@]}")"
    harness_check completed PASS "powered off ${T_RUN}s after QEMU start${crashes%; }"
fi

timings="images ${T_IMAGES}s, payload ${T_PAYLOAD}s, QEMU to dom0 ready ${T_DOM0_READY:-?}s,"
timings+=" to domU created ${T_DOMU:-?}s, QEMU run ${T_RUN}s, total $((SECONDS - T0))s"
echo "# timings: $timings" >> "$LOG"
if ((N_CHECKS > 0 && N_FAILED == 0)); then
    echo "# result: PASS ($N_CHECKS checks)" >> "$LOG"
    say "PASS: $N_CHECKS checks ($timings)"
    say "log: $LOG, serial log: $SERIAL"
    exit 0
fi
echo "# result: FAIL ($N_FAILED of $N_CHECKS checks failed)" >> "$LOG"
say "FAIL: $N_FAILED of $N_CHECKS checks failed ($timings)"
say "log: $LOG, serial log: $SERIAL"
exit 1
