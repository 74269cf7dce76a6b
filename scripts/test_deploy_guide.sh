#!/usr/bin/env bash
# scripts/test_deploy_guide.sh — docs/deploy.md "A first run, from the package to a finished
# population", run as written: the commands of that section's code block, read from the guide
# itself, in order, as root in a throwaway root (test_deb.sh's: an overlay of / on a tmpfs, in
# mount, network and PID namespaces of its own, entered with chroot; the host is untouched):
#   1. apt install the .deb built by cpack (its postinst starts the service), GET /healthz;
#   2. fedleaf-admin's configuration file; 3. fedleaf-admin create from the plan and spec files;
#   4. fedleaf-simulate trains it and `fedleaf-admin status --watch` watches (both in the
#      background: "another terminal");
#   5. once round 2 is open, the backup (the status before it is kept);
#   6. once a round more has closed, the server is killed (SIGKILL: the crash, not a step of the
#      guide), then the guide's restore and start.
# Then it checks that the rounds closed before the backup are there with the same reports and
# examples, that the round open then has at least the reports it had, that `status --watch`
# and fedleaf-simulate exit 0, and that the population finished with every round closed. It
# prints each command and the end of its output: the transcript for issue 40's closing note.
# No systemd runs there: scripts/deploy_guide_systemctl.sh stands in for systemctl.
# fedleaf-admin and fedleaf-simulate are this checkout's js_bindings/bin, linked into
# /usr/local/bin as `npm install -g` links a package's bins.
# Needs root, the native build (build/) and the wasm module in js_bindings/dist/. Exit 0: passed.
# Exit 77 with a "SKIP:" line: not root, or no namespaces or overlayfs here. Any other exit: a
# failure, named on stderr.
#   FEDLEAF_BUILD_DIR  the build folder (default build/, configured and built)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${FEDLEAF_BUILD_DIR:-$root/build}"
server="$build/fedleaf-server"

fail() { echo "test_deploy_guide: FAILED: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || { echo "SKIP: test_deploy_guide needs root (dpkg, mount namespaces)"; exit 77; }
[[ -x "$server" ]] || fail "$server is missing: build first (scripts/build.sh --native)"
[[ -f "$root/js_bindings/dist/fedleaf_core.wasm" ]] || fail "js_bindings/dist/ has no wasm module: build it (scripts/build.sh --wasm)"
command -v node >/dev/null || fail "node is missing (fedleaf-admin and fedleaf-simulate run on it)"
version="$("$server" --version)"
tmp="$(mktemp -d /tmp/fedleaf-guide.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp/layer" "$tmp/pkg/build"
if ! unshare --mount --net --pid --fork --mount-proc bash -c \
    "mount --make-rprivate / && mount -t tmpfs tmpfs '$tmp/layer' && mkdir '$tmp/layer/u' '$tmp/layer/w' '$tmp/layer/m' && mount -t overlay overlay -o 'lowerdir=/,upperdir=$tmp/layer/u,workdir=$tmp/layer/w' '$tmp/layer/m'" \
    2>"$tmp/probe.err"; then
  echo "SKIP: test_deploy_guide: no mount namespace with an overlay of / here ($(tr '\n' ' ' <"$tmp/probe.err"))"
  exit 77
fi

(cd "$build" && cpack -G DEB >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log" >&2; fail "cpack -G DEB"; }
deb="fedleaf-server_${version}_$(dpkg --print-architecture).deb"
[[ -f "$build/$deb" ]] || fail "$build/$deb was not made"
cp "$build/$deb" "$tmp/pkg/build/"
cp "$root/docs/deploy.md" "$root/scripts/deploy_guide_systemctl.sh" "$root/scripts/deploy_guide_steps.sh" "$tmp/pkg/"

# The clean root, as test_deb.sh makes it, with this checkout (for the CLIs and their
# node_modules) at its own path even when it is on another filesystem than /.
modules="$(readlink -f "$root/node_modules")"
# shellcheck disable=SC2016 # $1.. expand in the inner shell
unshare --mount --net --pid --fork --mount-proc bash -euo pipefail -c '
  mount --make-rprivate /
  mount -t tmpfs tmpfs "$1/layer"
  mkdir "$1/layer/upper" "$1/layer/work" "$1/layer/root"
  r="$1/layer/root"
  mount -t overlay overlay -o "lowerdir=/,upperdir=$1/layer/upper,workdir=$1/layer/work" "$r"
  mount -t proc proc "$r/proc"
  mount --rbind /dev "$r/dev"
  mount -t tmpfs tmpfs "$r/tmp"
  mount -t tmpfs tmpfs "$r/run"
  for dir in "$2" "$3"; do mkdir -p "$r$dir" && mount --bind "$dir" "$r$dir"; done
  mkdir -p "$r/mnt/fedleaf-test"
  mount --bind "$1/pkg" "$r/mnt/fedleaf-test"
  exec chroot "$r" env -i HOME=/root LANG=C.UTF-8 TERM=dumb FEDLEAF_REPO="$2" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash /mnt/fedleaf-test/deploy_guide_steps.sh
' guide-root "$tmp" "$root" "$modules"
echo "test_deploy_guide: ok"
