#!/bin/bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in build-fuzz/ and
# runs the response-path fuzzer for a bounded time.
#   scripts/fuzz.sh [--seconds N] [--checks]
# --checks prints one "CHECK fuzz-responses PASS|FAIL" line (for make test).
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_BUDGET=60
CHECKS=0
while (($#)); do
  case "$1" in
    --seconds) SECONDS_BUDGET=$2; shift 2 ;;
    --checks) CHECKS=1; shift ;;
    *) echo "fuzz.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
B=build-fuzz
if [[ ! -f $B/build.ninja ]]; then
  CXX=clang++ meson setup $B -Dfuzz=true -Dtests=false -Dpmd=disabled \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug -Doptimization=1 >/dev/null ||
    { echo "CHECK fuzz-build FAIL meson setup with clang++ failed"; exit 1; }
fi
if ! ninja -C $B tests/fuzz/fuzz_responses >$B/ninja.log 2>&1; then
  tail -20 $B/ninja.log
  echo "CHECK fuzz-build FAIL see $B/ninja.log"
  exit 1
fi
CORPUS=$B/corpus
mkdir -p "$CORPUS" $B/artifacts
# Seeds: transmit, plausible RX responses, receive, poll.
printf '\x00\x00\x03\x03\x10\x20\x01\x03\x00\x00\x40\x00\x04\x20\x05' >"$CORPUS/seed-basic"
printf '\x01\x00\x08\x07\x01\x07\x02\x05\x04\x10' >"$CORPUS/seed-tx"
echo "fuzz: running fuzz_responses for ${SECONDS_BUDGET}s"
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  $B/tests/fuzz/fuzz_responses -max_total_time="$SECONDS_BUDGET" -timeout=10 -rss_limit_mb=4096 \
  -artifact_prefix=$B/artifacts/ -print_final_stats=1 "$CORPUS" >$B/fuzz.log 2>&1
rc=$?
execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' $B/fuzz.log | tail -1)
cov=$(grep -oE 'cov: [0-9]+' $B/fuzz.log | tail -1)
if ((rc == 0)); then
  echo "CHECK fuzz-responses PASS ${execs:-?} inputs in ${SECONDS_BUDGET}s, ${cov:-cov ?}, no crash"
  exit 0
fi
grep -E 'ERROR|SUMMARY|==[0-9]+==|runtime error|fuzz:' $B/fuzz.log | head -20
echo "CHECK fuzz-responses FAIL exit $rc; crashing input in $B/artifacts/ (log $B/fuzz.log)"
exit 1
