#!/usr/bin/env bash
# scripts/test.sh — every test: installs and builds what is missing, then runs
#   1. the Catch2 tests natively (ctest in build/)
#   2. the same core tests built to wasm, under Node (ctest in build-wasm/)
#   3. node:test suites (tests/**/*.test.mjs) against the wasm module and the native binaries
#   3b. the Debian package (scripts/test_deb.sh): built with cpack, installed in a throwaway root,
#      its unit's ExecStart serving /healthz as the fedleaf user, purged
#   3c. docs/deploy.md's first run (scripts/test_deploy_guide.sh): its commands, read from the guide,
#      in a throwaway root — install, create, train, back up, kill, restore, finish
#   4. every benchmark at a tiny size (scripts/bench.sh --smoke NAME, and the server bench on
#      PostgreSQL behind haproxy): it runs and writes its JSON (build/bench/smoke/), whatever its
#      figures
#   5. every fuzz target (scripts/fuzz.sh) for FEDLEAF_FUZZ_SECONDS (default 20) each, ASan+UBSan
#   6. clang-format of every tracked C++ file, clang-tidy of src/, ESLint of every JS file, tsc over
#      the package's types (tests/types)
# and ends with one summary line "summary: N passed, M failed". Exit status non-zero on any failure.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
start=$(date +%s)

bash scripts/setup.sh || { echo "summary: 0 passed, 1 failed (setup)"; exit 1; }
bash scripts/build.sh --tests || { echo "summary: 0 passed, 1 failed (build)"; exit 1; }

passed=0 failed=0 failures=()
log_dir="$root/build/test-logs"
mkdir -p "$log_dir"

# record NAME PASSED FAILED
record() {
  passed=$((passed + $2))
  failed=$((failed + $3))
  if (($3 > 0)); then failures+=("$1"); fi
  echo "test: $1: $2 passed, $3 failed"
}

run_ctest() {  # run_ctest NAME DIR
  local log="$log_dir/$1.log"
  ctest --test-dir "$2" -j"$(nproc)" --output-on-failure >"$log" 2>&1
  local status=$?
  local line total fails
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)
  if [[ -z "$line" ]]; then
    tail -30 "$log"
    record "$1" 0 1
    return
  fi
  fails=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
  total=$(sed -E 's/.* failed out of ([0-9]+).*/\1/' <<<"$line")
  if ((fails > 0 || status != 0)); then
    grep -E -A40 'The following tests FAILED|\*\*\*Failed|FAILED:' "$log" | head -80
  fi
  if ((status != 0 && fails == 0)); then fails=1; fi
  record "$1" $((total - fails)) "$fails"
}

# Files matching git pathspecs ('*.cc', 'src/*.cc'): the tracked ones in a git checkout, the same
# names on disk in an unpacked archive (build output, node_modules and var/ left out), so the
# format and lint checks never skip for want of git.
listed_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files "$@"
    return
  fi
  local spec paths=()
  for spec in "$@"; do paths+=(-o -path "./$spec"); done
  find . \( -name node_modules -o -name '.git' -o -path './build*' -o -path ./var \) -prune \
    -o -type f \( -false "${paths[@]}" \) -print | sed 's|^\./||' | sort
}

# Formatting: every tracked C++ file as .clang-format says.
mapfile -t cxx_files < <(listed_files '*.h' '*.cc')
if ((${#cxx_files[@]})); then
  if clang-format --dry-run --Werror "${cxx_files[@]}" >"$log_dir/format.log" 2>&1; then
    record "clang-format (${#cxx_files[@]} files)" 1 0
  else
    grep -E 'error:' "$log_dir/format.log" | cut -d: -f1 | sort -u | sed 's/^/needs clang-format: /' | head -20
    record "clang-format" 0 1
  fi
fi

# Lint: every JS file (js_bindings/eslint.config.js).
if node_modules/.bin/eslint -c js_bindings/eslint.config.js . >"$log_dir/eslint.log" 2>&1; then
  record "eslint" 1 0
else
  head -40 "$log_dir/eslint.log"
  record "eslint" 0 1
fi

# Types: js_bindings/index.d.ts checked against a use of every export (tests/types/usage.ts).
if node_modules/.bin/tsc -p tests/types >"$log_dir/tsc.log" 2>&1; then
  record "tsc (package types)" 1 0
else
  head -40 "$log_dir/tsc.log"
  record "tsc (package types)" 0 1
fi

# Lint: every C++ source under src/ with clang-tidy (.clang-tidy; bug finders and performance).
mapfile -t tidy_files < <(listed_files 'src/*.cc')
if ((${#tidy_files[@]})) && [[ -f build/compile_commands.json ]]; then
  if printf '%s\n' "${tidy_files[@]}" | xargs -P"$(nproc)" -n4 clang-tidy -p build --quiet \
      >"$log_dir/clang-tidy.log" 2>&1; then
    record "clang-tidy (${#tidy_files[@]} files)" 1 0
  else
    grep -E 'error:|warning:' "$log_dir/clang-tidy.log" | head -20
    record "clang-tidy" 0 1
  fi
fi

# PostgreSQL for the store suite (and the server tests that use it): a throwaway cluster,
# stopped on exit. It must start: the suite never skips PostgreSQL silently.
pg_dir=$(mktemp -d /tmp/fedleaf-pg.XXXXXX)
if FEDLEAF_TEST_PG_URL=$(bash scripts/pg_cluster.sh start "$pg_dir" "${FEDLEAF_TEST_PG_PORT:-55432}"); then
  export FEDLEAF_TEST_PG_URL
  trap 'bash scripts/pg_cluster.sh stop "$pg_dir"; rm -rf "$pg_dir"' EXIT
  record "postgresql cluster" 1 0
else
  echo "PostgreSQL did not start (scripts/pg_cluster.sh): the store suite cannot run on it"
  record "postgresql cluster" 0 1
fi

run_ctest "ctest-native" build
run_ctest "ctest-wasm" build-wasm

mapfile -t node_tests < <(find tests -name '*.test.mjs' -not -path '*/node_modules/*' | sort)
if ((${#node_tests[@]})); then
  log="$log_dir/node.log"
  FEDLEAF_BUILD_DIR="$root/build" node --test --test-timeout=180000 --test-reporter=tap "${node_tests[@]}" >"$log" 2>&1
  status=$?
  np=$(grep -E '^# pass ' "$log" | tail -1 | awk '{print $3}')
  nf=$(grep -E '^# fail ' "$log" | tail -1 | awk '{print $3}')
  np=${np:-0} nf=${nf:-0}
  if ((status != 0 || nf > 0)); then
    grep -E -B2 -A25 '^\s*not ok' "$log" | head -120
    ((nf == 0)) && nf=1
  fi
  record "node:test" "$np" "$nf"
fi

# The Debian package and `cmake --install` (scripts/test_deb.sh). Exit 77: this kernel lacks what
# its throwaway root needs (namespaces, overlayfs); its SKIP line says which.
log="$log_dir/deb.log"
FEDLEAF_BUILD_DIR="$root/build" bash scripts/test_deb.sh >"$log" 2>&1
case $? in
  0) record "debian package" 1 0 ;;
  77) grep -E '^SKIP' "$log"; record "debian package (skipped)" 0 0 ;;
  *) tail -30 "$log"; record "debian package" 0 1 ;;
esac

# docs/deploy.md's first run, as written (scripts/test_deploy_guide.sh): the .deb installed in a
# throwaway root, a population created, trained, backed up, the server killed, restored, finished.
log="$log_dir/deploy-guide.log"
FEDLEAF_BUILD_DIR="$root/build" bash scripts/test_deploy_guide.sh >"$log" 2>&1
case $? in
  0) record "deploy guide, first run" 1 0 ;;
  77) grep -E '^SKIP' "$log"; record "deploy guide, first run (skipped)" 0 0 ;;
  *) tail -40 "$log"; record "deploy guide, first run" 0 1 ;;
esac

# Benchmarks: each one at a tiny size, one recorded test per bench (a bench the README lists must
# run; its figures are not checked). The server bench also on PostgreSQL with 3 servers behind
# haproxy, on a throwaway cluster of its own (FEDLEAF_BENCH_PG_PORT, default 55433), and with a
# private population of enrolled devices on SQLite and PostgreSQL.
bench_smoke() {  # bench_smoke LABEL ARGS...
  local label="$1" log="$log_dir/bench-smoke-${1// /-}.log"
  shift
  if bash scripts/bench.sh --smoke "$@" >"$log" 2>&1; then
    record "bench smoke: $label" 1 0
  else
    tail -30 "$log"
    record "bench smoke: $label" 0 1
  fi
}
for bench in $(cd scripts/bench && ls *.sh | sed 's/\.sh$//'); do bench_smoke "$bench" "$bench"; done
bench_smoke "server postgres x3" server --store postgres --servers 3
bench_smoke "server private" server --private
bench_smoke "server private postgres" server --private --store postgres

# Fuzzing: every decoder and parser an outsider can reach, FEDLEAF_FUZZ_SECONDS (20) each.
bash scripts/fuzz.sh "${FEDLEAF_FUZZ_SECONDS:-20}" >"$log_dir/fuzz-all.log" 2>&1
fuzz_lines=0
while IFS= read -r line; do
  fuzz_lines=$((fuzz_lines + 1))
  case "$line" in
    *": ok, "*) record "${line#fuzz }" 1 0 ;;
    *) tail -30 "$log_dir/fuzz-all.log"; record "${line#fuzz }" 0 1 ;;
  esac
done < <(grep -E '^fuzz [a-z_]+: ' "$log_dir/fuzz-all.log")
if ((fuzz_lines == 0)); then
  tail -30 "$log_dir/fuzz-all.log"
  record "fuzz (no target ran)" 0 1
fi

echo "test: wall time $(( $(date +%s) - start )) s"
if ((${#failures[@]})); then echo "test: failing suites: ${failures[*]}"; fi
echo "summary: $passed passed, $failed failed"
((failed == 0))
