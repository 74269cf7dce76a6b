#!/usr/bin/env bash
# scripts/bench.sh round — orchestration overhead of federated rounds, prefetch 0 vs 1
# (tests/bench/round/round_bench.mjs). Builds what is missing first.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bash "$root/scripts/build.sh" >/dev/null
cd "$root"
FEDLEAF_BUILD_DIR=build node tests/bench/round/round_bench.mjs "$@"
