#!/bin/bash
# Builds xpv's documentation into BUILD/docs and fails on any warning:
#   BUILD/docs/api/html/   libxpv's API reference (include/xpv/), Doxygen with
#                          docs/Doxyfile: WARN_IF_UNDOCUMENTED, warnings are errors
#   BUILD/docs/nics/       the NIC guide pages (docs/nics/*.rst), docutils'
#                          rst2html --strict (any warning is an error)
# Prints one "CHECK <name> PASS|FAIL ..." line per part (scripts/run-tests.sh
# counts them).
#
# Usage: scripts/docs.sh [--build DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=build
while (($#)); do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    *) echo "docs: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
OUT=$BUILD/docs
mkdir -p "$OUT/api" "$OUT/nics"
failed=0

# ---- the API reference
if ! command -v doxygen >/dev/null; then
  echo "CHECK docs-api FAIL doxygen not found (package doxygen: make setup)"
  failed=1
else
  log=$OUT/api/doxygen.log
  t0=$SECONDS
  # The configuration's OUTPUT_DIRECTORY is the build's (later lines win).
  if { cat docs/Doxyfile; echo "OUTPUT_DIRECTORY = $OUT/api"; } | doxygen - >"$log" 2>&1 &&
    ! grep -qE 'warning:|error:' "$log"; then
    echo "CHECK docs-api PASS $(ls include/xpv/*.h | wc -l) headers of include/xpv documented," \
      "no Doxygen warning ($((SECONDS - t0))s): $OUT/api/html/index.html"
  else
    echo "CHECK docs-api FAIL Doxygen warnings (every public name of include/xpv/ needs a /// comment):"
    sed 's/^/  /' "$log" | head -40
    failed=1
  fi
fi

# ---- the NIC guide pages
if ! command -v rst2html >/dev/null; then
  echo "CHECK docs-nics FAIL rst2html not found (package python3-docutils: make setup)"
  failed=1
else
  bad=()
  for rst in docs/nics/*.rst; do
    html=$OUT/nics/$(basename "${rst%.rst}").html
    if ! rst2html --strict "$rst" "$html" >"$html.log" 2>&1; then
      bad+=("$rst: $(tr '\n' ' ' <"$html.log")")
    fi
  done
  if ((${#bad[@]} == 0)); then
    echo "CHECK docs-nics PASS $(ls docs/nics/*.rst | wc -l) page(s) render with rst2html --strict: $OUT/nics/"
  else
    echo "CHECK docs-nics FAIL ${bad[*]}"
    failed=1
  fi
fi
exit $failed
