#!/bin/bash
# Runs xpv's test suites and ends with one summary line:
#   TEST SUMMARY: PASS|FAIL  <n> suites (<failed> failed)  <cases> test cases: <p> passed, <f> failed, <s> skipped
#
# Suites: unit (GoogleTest, plain build), unit-asan (the same under ASan+UBSan), tools
# (xpv-bind against a fake guest, in python3-minimal's module set), bench-report (make bench's
# statistics on made-up rounds), e2e-lib (the e2e harness's request to dom0 against stand-ins
# of the xenstore tools), integration (real processes: xpv-netback, the example,
# testpmd), fuzz (a bounded libFuzzer run), docs (the API
# reference and the NIC guide page build without a warning), arm64 (library, tools, PMD and
# unit tests cross-built for aarch64; the ring's barriers in the arm64 code), arm64-unit
# (those unit tests under qemu-aarch64), packaging (make deb, lintian, the installed packages
# used as a user would: tests/packaging/check-deb.sh), e2e-xen (Xen 4.17 in QEMU with Linux
# netback).
#
# Usage: run-tests.sh --build DIR [--asan DIR] [--only SUITE[,SUITE...]]
set -uo pipefail
cd "$(dirname "$0")/.."

BUILD=build
ASAN=
ONLY=
while (($#)); do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --asan) ASAN=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    *) echo "run-tests: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

LOGDIR=$BUILD/test-logs
mkdir -p "$LOGDIR"
declare -a NAMES=() RESULTS=() DETAILS=() FAILURES=()
TOTAL_P=0 TOTAL_F=0 TOTAL_S=0
GTEST_RUNNER=()

want() { [[ -z "$ONLY" || ",$ONLY," == *",$1,"* ]]; }

# Each suite's wall time goes with its result: make test has a time budget (README, Tests).
SUITE_T0=$SECONDS
record() {  # name result detail
  local took="$((SECONDS - SUITE_T0))s"
  NAMES+=("$1"); RESULTS+=("$2"); DETAILS+=("$3 ($took)")
  printf '=== suite %-12s %s  %s (%s)\n' "$1" "$2" "$3" "$took"
  SUITE_T0=$SECONDS
}

# Runs a GoogleTest binary, shows its output, and adds its counts. A
# GTEST_RUNNER array, when set, goes in front of the binary (qemu for arm64).
run_gtest() {  # suite-name binary [env...]
  local name=$1 bin=$2; shift 2
  local -a runner=("${GTEST_RUNNER[@]}")
  local log=$LOGDIR/$name.log
  if [[ ! -x "$bin" ]]; then
    record "$name" FAIL "missing test binary $bin"
    return
  fi
  echo "=== running $name: $bin"
  env "$@" "${runner[@]}" "$bin" --gtest_color=no 2>&1 | tee "$log" | grep -E '^\[ +(OK|FAILED|SKIPPED|PASSED) +\]|^\[=+\]|Skipped|skipped because|Failure|error:|ERROR:|runtime error' |
    grep -vE '^\[ +OK +\]'
  local rc=${PIPESTATUS[0]}
  local p f s
  p=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?.*/\1/p' "$log" | tail -1)
  f=$(sed -nE 's/^\[  FAILED  \] ([0-9]+) tests?, listed below.*/\1/p' "$log" | tail -1)
  s=$(sed -nE 's/^\[  SKIPPED \] ([0-9]+) tests?, listed below.*/\1/p' "$log" | tail -1)
  p=${p:-0} f=${f:-0} s=${s:-0}
  TOTAL_P=$((TOTAL_P + p)) TOTAL_F=$((TOTAL_F + f)) TOTAL_S=$((TOTAL_S + s))
  if ((rc == 0 && f == 0 && p + s > 0)); then
    record "$name" PASS "$p passed, $s skipped"
  else
    record "$name" FAIL "$p passed, $f failed, $s skipped, exit $rc (log: $log)"
    ((f == 0)) && TOTAL_F=$((TOTAL_F + 1))
    local t
    while read -r t; do FAILURES+=("$name: $t"); done < <(sed -nE 's/^\[  FAILED  \] ([A-Za-z0-9_/.]+).*/\1/p' "$log" | sort -u)
  fi
}

# Runs a script-driven suite that prints "CHECK <name> PASS|FAIL ..." lines.
run_checks() {  # suite-name command...
  local name=$1; shift
  local log=$LOGDIR/$name.log
  echo "=== running $name: $*"
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local p f
  p=$(grep -cE '^CHECK .* PASS' "$log")
  f=$(grep -cE '^CHECK .* FAIL' "$log")
  TOTAL_P=$((TOTAL_P + p)) TOTAL_F=$((TOTAL_F + f))
  if ((rc == 0 && f == 0 && p > 0)); then
    record "$name" PASS "$p checks passed"
  else
    record "$name" FAIL "$p passed, $f failed, exit $rc (log: $log)"
    ((f == 0)) && TOTAL_F=$((TOTAL_F + 1))
    local line
    while read -r line; do FAILURES+=("$name: $line"); done < <(grep -E '^CHECK .* FAIL' "$log")
  fi
}

if want unit; then
  run_gtest unit "$BUILD/tests/xpv-tests"
fi
if [[ -n "$ASAN" ]] && want unit-asan; then
  run_gtest unit-asan "$ASAN/tests/xpv-tests" \
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
if want tools && [[ -x tests/tools/test_xpv_bind.py ]]; then
  run_checks tools tests/tools/test_xpv_bind.py --tool "$BUILD/tools/xpv-bind"
fi
if want bench-report && [[ -x tests/bench/test_report.py ]]; then
  run_checks bench-report tests/bench/test_report.py
fi
if want e2e-lib && [[ -x tests/e2e/test_rpc.sh ]]; then
  run_checks e2e-lib tests/e2e/test_rpc.sh
fi
if want integration && [[ -x tests/integration/run.sh ]]; then
  run_checks integration tests/integration/run.sh --build "$BUILD" ${ASAN:+--asan "$ASAN"}
fi
if want docs && [[ -x scripts/docs.sh ]]; then
  run_checks docs scripts/docs.sh --build "$BUILD"
fi
if want arm64 && [[ -x scripts/check-arm64.sh ]]; then
  run_checks arm64 scripts/check-arm64.sh
  GTEST_RUNNER=(scripts/check-arm64.sh --run)
  run_gtest arm64-unit "$(scripts/check-arm64.sh --print-build-dir)/tests/xpv-tests"
  GTEST_RUNNER=()
fi
if want fuzz && [[ -x scripts/fuzz.sh ]]; then
  run_checks fuzz scripts/fuzz.sh --seconds "${FUZZ_SMOKE_SECONDS:-20}" --checks
fi
if want packaging && [[ -x tests/packaging/check-deb.sh ]]; then
  run_checks packaging tests/packaging/check-deb.sh --build "$BUILD"
fi
if want e2e-xen && [[ -x scripts/e2e-xen.sh ]]; then
  run_checks e2e-xen scripts/e2e-xen.sh --build "$BUILD"
fi

nfail=0
for r in "${RESULTS[@]}"; do [[ $r == PASS ]] || nfail=$((nfail + 1)); done
echo
echo "Suites:"
for i in "${!NAMES[@]}"; do printf '  %-12s %s  %s\n' "${NAMES[$i]}" "${RESULTS[$i]}" "${DETAILS[$i]}"; done
# What failed, again at the end: CI shows a run's last lines only, and a suite's log can be
# thousands of lines long.
if ((${#FAILURES[@]})); then
  echo "Failed (${#FAILURES[@]}):"
  for f in "${FAILURES[@]:0:8}"; do echo "  ${f:0:400}"; done
  ((${#FAILURES[@]} > 8)) && echo "  ... and $((${#FAILURES[@]} - 8)) more in the suites' logs"
fi
verdict=PASS
((nfail > 0 || ${#NAMES[@]} == 0)) && verdict=FAIL
echo "TEST SUMMARY: $verdict  ${#NAMES[@]} suites ($nfail failed)  $((TOTAL_P + TOTAL_F + TOTAL_S)) test cases: $TOTAL_P passed, $TOTAL_F failed, $TOTAL_S skipped"
[[ $verdict == PASS ]]
