#!/usr/bin/env bash
# A stand-in for systemctl inside scripts/test_deploy_guide.sh's throwaway root, where no systemd
# runs: the package's postinst (daemon-reload, enable, restart) and docs/deploy.md's
# `systemctl start | stop | restart | status fedleaf-server` act on fedleaf-server.service by
# running the unit's ExecStart as systemd would — the Environment= lines, then the
# EnvironmentFile, as User=fedleaf, UMask=0027, cwd /, the state directory made (StateDirectory=)
# — the way scripts/test_deb.sh runs it. Its stdout and stderr go to /run/fedleaf-server.journal,
# its pid to /run/fedleaf-server.pid. The unit's hardening options are not applied.
set -euo pipefail
unit=/usr/lib/systemd/system/fedleaf-server.service
pidfile=/run/fedleaf-server.pid
journal=/run/fedleaf-server.journal

words=()
for arg in "$@"; do [[ $arg == -* ]] || words+=("$arg"); done
command="${words[0]:-}"
name="${words[1]:-fedleaf-server}"
name="${name%.service}"
case "$command" in daemon-reload | enable) exit 0 ;; esac
[[ $name == fedleaf-server ]] || { echo "systemctl (test stand-in): only fedleaf-server, not $name" >&2; exit 1; }

# A pid that is running (a killed server not yet reaped is a zombie: not running).
running() {
  [[ -f $pidfile ]] || return 1
  local state
  state="$(awk '{print $3}' "/proc/$(cat "$pidfile")/stat" 2>/dev/null)" || return 1
  [[ -n $state && $state != Z ]]
}

start() {
  running && return 0
  touch "$journal"
  local from
  from="$(wc -l <"$journal")"
  (
    # No descriptor of the caller (apt's and dpkg's pipes) may stay open in the service.
    for fd in /proc/"$BASHPID"/fd/*; do
      n="${fd##*/}"
      if ((n > 2)); then eval "exec $n>&-" 2>/dev/null || true; fi
    done
    while IFS= read -r assignment; do export "${assignment?}"; done < <(sed -n 's/^Environment=//p' "$unit")
    set -a
    # shellcheck disable=SC1091
    if [[ -f /etc/default/fedleaf-server ]]; then source /etc/default/fedleaf-server; fi
    set +a
    exec_start="$(sed -n 's/^ExecStart=//p' "$unit")"
    install -d -o fedleaf -g fedleaf -m 0750 /var/lib/fedleaf
    cd / && umask 0027 && eval "exec setpriv --reuid fedleaf --regid fedleaf --init-groups --no-new-privs $exec_start"
  ) </dev/null >>"$journal" 2>&1 &
  echo $! >"$pidfile"
  for _ in $(seq 300); do
    tail -n +"$((from + 1))" "$journal" | grep -q 'listening on http://' && return 0
    if ! running; then
      tail -n +"$((from + 1))" "$journal" >&2
      echo "fedleaf-server.service: the ExecStart exited" >&2
      rm -f "$pidfile"
      return 1
    fi
    sleep 0.1
  done
  echo "fedleaf-server.service: not listening after 30 s" >&2
  return 1
}

stop() {
  if running; then
    local pid
    pid="$(cat "$pidfile")"
    kill -TERM "$pid"
    while running; do sleep 0.1; done
  fi
  rm -f "$pidfile"
}

case "$command" in
  start) start ;;
  stop) stop ;;
  restart) stop && start ;;
  status | is-active)
    if running; then
      echo "fedleaf-server.service: active (running), pid $(cat "$pidfile") (test stand-in, no systemd)"
    else
      echo "fedleaf-server.service: inactive (dead) (test stand-in, no systemd)"
      exit 3
    fi
    ;;
  *) echo "systemctl (test stand-in): $command is not supported" >&2; exit 1 ;;
esac
