#!/usr/bin/env bash
# scripts/bench.sh poison — the demo job with 0 and 3 poisoning leaves, robust aggregation
# defaults on and off (tests/bench/poison/poison_bench.mjs). Builds what is missing first.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bash "$root/scripts/build.sh" >/dev/null
cd "$root"
FEDLEAF_BUILD_DIR=build node tests/bench/poison/poison_bench.mjs "$@"
