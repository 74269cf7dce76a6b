#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [TARGET...] — runs the libFuzzer targets of tests/fuzz (clang,
# ASan+UBSan, built into build-fuzz/) for SECONDS each (default: FEDLEAF_FUZZ_SECONDS or 20),
# every target when none is named. Each starts from its committed seed corpus
# (tests/fuzz/corpus/TARGET/) plus what earlier runs found (build-fuzz/corpus/TARGET/).
# Prints one line per target: "fuzz TARGET: ok, N inputs in S s" or "fuzz TARGET: FAILED (log)";
# a crashing input is kept as build-fuzz/crash-TARGET-*. Exit status 1 when any target failed.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
seconds="${1:-${FEDLEAF_FUZZ_SECONDS:-20}}"
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(ls tests/fuzz/*_fuzz.cc | xargs -n1 basename | sed 's/\.cc$//')
fi
logs="$root/build/test-logs"
mkdir -p "$logs"
if ! bash scripts/build.sh --fuzz >"$logs/fuzz-build.log" 2>&1; then
  tail -30 "$logs/fuzz-build.log"
  echo "fuzz build: FAILED ($logs/fuzz-build.log)"
  exit 1
fi
failed=0
for target in "${targets[@]}"; do
  corpus="$root/build-fuzz/corpus/$target"
  mkdir -p "$corpus"
  if [[ -d "tests/fuzz/corpus/$target" ]]; then cp -n tests/fuzz/corpus/"$target"/* "$corpus"/ 2>/dev/null; fi
  if [[ "$target" == safetensors_fuzz && -x build/tests/tools/safetensors_tool ]]; then
    # A valid file holding every dtype and both sparse encodings.
    build/tests/tools/safetensors_tool fixture "$corpus/seed-fixture.safetensors"
  fi
  extra=()
  [[ -f "tests/fuzz/$target.dict" ]] && extra+=(-dict="tests/fuzz/$target.dict")
  log="$logs/$target.log"
  if build-fuzz/tests/fuzz/"$target" -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 \
       -artifact_prefix="$root/build-fuzz/crash-$target-" "${extra[@]}" "$corpus" >"$log" 2>&1; then
    inputs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | awk '{print $2}')
    echo "fuzz $target: ok, ${inputs:-?} inputs in $seconds s"
  else
    tail -25 "$log"
    echo "fuzz $target: FAILED ($log)"
    failed=1
  fi
done
exit "$failed"
