#!/bin/bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in build-fuzz/ and
# runs each for a bounded time, starting from the corpus kept in the repo
# (copied into build-fuzz/corpus*/):
#   fuzz_responses     the response path (tests/fuzz/corpus/), N seconds
#   fuzz_backend_keys  the parsing of backend-provided xenstore values
#                      (tests/fuzz/corpus-backend-keys/), N/6 seconds, at
#                      least 5: a small parser, millions of inputs in that
#   scripts/fuzz.sh [--seconds N] [--checks] [--merge-corpus]
# --checks prints one "CHECK fuzz-<target> PASS|FAIL" line per target (for
#   make test).
# --merge-corpus (after a run) minimizes each target's build-fuzz corpus
#   together with the repo's (libFuzzer -merge=1) and writes the result back
#   to the repo's corpus directory.
# FUZZ_BUILD_DIR names another build directory (default build-fuzz).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
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
B=${FUZZ_BUILD_DIR:-build-fuzz}
if [[ ! -f $B/build.ninja ]]; then
  CXX=clang++ meson setup $B -Dfuzz=true -Dtests=false -Dpmd=disabled \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug -Doptimization=1 >/dev/null ||
    { echo "CHECK fuzz-build FAIL meson setup with clang++ failed"; exit 1; }
fi
if ! ninja -C $B tests/fuzz/fuzz_responses tests/fuzz/fuzz_backend_keys >$B/ninja.log 2>&1; then
  tail -20 $B/ninja.log
  echo "CHECK fuzz-build FAIL see $B/ninja.log"
  exit 1
fi
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
KEYS_SECONDS=$((SECONDS_BUDGET / 6 > 5 ? SECONDS_BUDGET / 6 : 5))

# merge NAME REPO_CORPUS CORPUS
merge() {
  local fuzzer=$B/tests/fuzz/fuzz_$1 repo=$2 corpus=$3 new
  new=$(mktemp -d "$B/corpus-merge.XXXXXX")
  if ! $fuzzer -merge=1 "$new" "$repo" "$corpus" >$B/merge-$1.log 2>&1; then
    tail -5 $B/merge-$1.log
    echo "fuzz: merging the corpus of fuzz_$1 failed (see $B/merge-$1.log)"
    rm -rf "$new"
    return 1
  fi
  rm -f "$repo"/*
  cp "$new"/* "$repo"/
  rm -rf "$new"
  echo "fuzz: $repo now holds $(ls "$repo" | wc -l) inputs (minimized with -merge=1)"
}

# run NAME CHECK_NAME REPO_CORPUS CORPUS SECONDS
run() {
  local name=$1 check=$2 repo=$3 corpus=$4 secs=$5
  local fuzzer=$B/tests/fuzz/fuzz_$name log=$B/fuzz-$name.log
  [[ $name == responses ]] && log=$B/fuzz.log
  echo "fuzz: running fuzz_$name for ${secs}s from $(ls "$corpus" | wc -l) corpus inputs"
  local start rc elapsed execs cov
  start=$(date +%s)
  $fuzzer -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix=$B/artifacts/$name- -print_final_stats=1 "$corpus" >"$log" 2>&1
  rc=$?
  elapsed=$(($(date +%s) - start))
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1)
  if ((rc == 0)); then
    echo "CHECK $check PASS ${execs:-?} inputs in ${secs}s, ${cov:-cov ?}, no crash"
    return 0
  fi
  grep -E 'ERROR|SUMMARY|==[0-9]+==|runtime error|fuzz:|^  (tx|rx):' "$log" | head -20
  echo "CHECK $check FAIL exit $rc after ${elapsed}s (${execs:-?} inputs); crashing input in $B/artifacts/$name-* (log $log)"
  return 1
}

mkdir -p $B/corpus $B/corpus-backend-keys $B/artifacts
cp -n tests/fuzz/corpus/* $B/corpus/ 2>/dev/null
cp -n tests/fuzz/corpus-backend-keys/* $B/corpus-backend-keys/ 2>/dev/null

if ((MERGE)); then
  merge responses tests/fuzz/corpus $B/corpus || exit 1
  merge backend_keys tests/fuzz/corpus-backend-keys $B/corpus-backend-keys || exit 1
  exit 0
fi

fail=0
run responses fuzz-responses tests/fuzz/corpus $B/corpus "$SECONDS_BUDGET" || fail=1
run backend_keys fuzz-backend-keys tests/fuzz/corpus-backend-keys $B/corpus-backend-keys \
  "$KEYS_SECONDS" || fail=1
exit $fail
