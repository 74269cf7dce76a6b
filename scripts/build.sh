#!/usr/bin/env bash
# scripts/build.sh — builds fedleaf.
#   (no flags)    native Release build in build/ and the wasm module in build-wasm/
#                 (js_bindings/dist/fedleaf_core{,_simd}.{js,wasm})
#   --debug       native Debug build in build-debug/
#   --sanitize    native build with ASan+UBSan in build-asan/
#   --fuzz        libFuzzer targets (clang, ASan+UBSan) in build-fuzz/
#   --native      native only        --wasm   wasm only
#   --tests       also build the core tests for wasm (run under Node by scripts/test.sh)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

native=1 wasm=1 wasm_tests=0 type=Release dir=build extra=()
for arg in "$@"; do
  case "$arg" in
    --debug) type=Debug dir=build-debug wasm=0 ;;
    --sanitize) type=RelWithDebInfo dir=build-asan wasm=0 extra+=(-DFEDLEAF_SANITIZE=ON) ;;
    --fuzz) type=RelWithDebInfo dir=build-fuzz wasm=0
            extra+=(-DFEDLEAF_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++) ;;
    --native) wasm=0 ;;
    --wasm) native=0 ;;
    --tests) wasm_tests=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown flag $arg" >&2; exit 2 ;;
  esac
done

jobs=$(nproc)
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths relative to the checkout, so every clone of the repository shares one cache.
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
fi

if ((native)); then
  echo "build: native $type in $dir/"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" "${launcher[@]}" "${extra[@]}" >/dev/null
  cmake --build "$dir" -j"$jobs"
fi

if ((wasm)); then
  echo "build: wasm in build-wasm/"
  # Debian's emscripten finds its JS dependencies (acorn) only through NODE_PATH.
  export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
  emcmake cmake -S . -B build-wasm -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
    -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=BOTH >/dev/null
  targets=(--target fedleaf_core_js fedleaf_core_simd_js)
  ((wasm_tests)) && targets=()
  cmake --build build-wasm -j"$jobs" "${targets[@]}"
  ls -l js_bindings/dist/*.wasm | awk '{print "build: " $NF " " $5 " bytes"}'
fi
