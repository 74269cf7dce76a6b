#!/usr/bin/env bash
# scripts/bench.sh privacy_release [--models small,spam,wide_deep] [--rounds R] [--draws N]:
# a private round's release (tree noise on every coordinate, tests/bench/privacy_release) on the
# demo's models at one and two tree nodes, interleaved with the implementation before issue 39's
# speed-up, and with the round's noise drawn ahead (what a server's close still does: add it);
# ns per coordinate per node and random words per draw. Builds the Release bench in
# build/, runs it from the repository root, prints the table and writes
# build/bench/privacy_release.json. About a minute on 2 cores (the legacy path dominates).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build --target fedleaf_privacy_release_bench -j2
out_dir="${FEDLEAF_BENCH_OUT_DIR:-build/bench}"
mkdir -p "$out_dir"
smoke=()
# Smoke (scripts/bench.sh --smoke): a tiny model, one round, few draws.
if [[ "${FEDLEAF_BENCH_SMOKE:-0}" == 1 ]]; then
  smoke=(--models tiny --rounds 1 --draws 20000)
fi
exec build/tests/bench/privacy_release/fedleaf_privacy_release_bench \
  --json "$out_dir/privacy_release.json" "${smoke[@]}" "$@"
