#!/bin/bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in build-fuzz/ and
# runs the response-path fuzzer for a bounded time, starting from the corpus
# kept in the repo (tests/fuzz/corpus/, copied into build-fuzz/corpus/).
#   scripts/fuzz.sh [--seconds N] [--checks] [--merge-corpus]
# --checks prints one "CHECK fuzz-responses PASS|FAIL" line (for make test).
# --merge-corpus (after a run) minimizes build-fuzz/corpus together with the
#   repo's corpus (libFuzzer -merge=1) and writes the result back to
#   tests/fuzz/corpus/.
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_BUDGET=60
CHECKS=0
MERGE=0
while (($#)); do
  case "$1" in
    --seconds) SECONDS_BUDGET=$2; shift 2 ;;
    --checks) CHECKS=1; shift ;;
    --merge-corpus) MERGE=1; shift ;;
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
FUZZER=$B/tests/fuzz/fuzz_responses
REPO_CORPUS=tests/fuzz/corpus
CORPUS=$B/corpus
mkdir -p "$CORPUS" $B/artifacts
cp -n "$REPO_CORPUS"/* "$CORPUS"/ 2>/dev/null
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

if ((MERGE)); then
  NEW=$(mktemp -d "$B/corpus-merge.XXXXXX")
  if ! $FUZZER -merge=1 "$NEW" "$REPO_CORPUS" "$CORPUS" >$B/merge.log 2>&1; then
    tail -5 $B/merge.log
    echo "fuzz: merging the corpus failed (see $B/merge.log)"
    rm -rf "$NEW"
    exit 1
  fi
  rm -f "$REPO_CORPUS"/*
  cp "$NEW"/* "$REPO_CORPUS"/
  rm -rf "$NEW"
  echo "fuzz: $REPO_CORPUS now holds $(ls "$REPO_CORPUS" | wc -l) inputs (minimized with -merge=1)"
  exit 0
fi

echo "fuzz: running fuzz_responses for ${SECONDS_BUDGET}s from $(ls "$CORPUS" | wc -l) corpus inputs"
start=$(date +%s)
$FUZZER -max_total_time="$SECONDS_BUDGET" -timeout=10 -rss_limit_mb=4096 \
  -artifact_prefix=$B/artifacts/ -print_final_stats=1 "$CORPUS" >$B/fuzz.log 2>&1
rc=$?
elapsed=$(($(date +%s) - start))
execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' $B/fuzz.log | tail -1)
cov=$(grep -oE 'cov: [0-9]+' $B/fuzz.log | tail -1)
if ((rc == 0)); then
  echo "CHECK fuzz-responses PASS ${execs:-?} inputs in ${SECONDS_BUDGET}s, ${cov:-cov ?}, no crash"
  exit 0
fi
grep -E 'ERROR|SUMMARY|==[0-9]+==|runtime error|fuzz:|^  (tx|rx):' $B/fuzz.log | head -20
echo "CHECK fuzz-responses FAIL exit $rc after ${elapsed}s (${execs:-?} inputs); crashing input in $B/artifacts/ (log $B/fuzz.log)"
exit 1
