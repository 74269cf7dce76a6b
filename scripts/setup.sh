#!/usr/bin/env bash
# scripts/setup.sh — installs what a fresh Debian 12 machine lacks to build, test and run fedleaf.
# Idempotent: on a ready machine it checks and exits in seconds. Needs root (or sudo) only when
# something is missing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

apt_packages=(
  cmake make g++ clang clang-format clang-tidy libclang-rt-14-dev ccache pkg-config
  emscripten binaryen
  xtensor-dev xtl-dev nlohmann-json3-dev catch2
  libboost-dev libsqlite3-dev libspdlog-dev libcli11-dev libssl-dev
  libpq-dev postgresql haproxy
  chromium firefox-esr
  dpkg-dev adduser curl iproute2
)

missing=()
for p in "${apt_packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
if ((node_major < 18)); then
  echo "setup: Node.js >= 18 is required, found $(node --version)" >&2
  exit 1
fi

# The repository's tools (package.json at the root: lint, types, browsers, bundler, demo data,
# the TF.js baseline), pinned by package-lock.json. The fedleaf package (js_bindings/) has no
# dependencies. npm ci only when the lockfile changed since the last install.
stamp="$root/node_modules/.package-lock.json"
if [[ ! -f "$stamp" || "$root/package-lock.json" -nt "$stamp" ]]; then
  echo "setup: npm ci (the repository's tools)"
  (cd "$root" && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "setup: ready"
