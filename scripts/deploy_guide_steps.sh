#!/usr/bin/env bash
# Runs inside scripts/test_deploy_guide.sh's throwaway root, as its root: the code block of
# docs/deploy.md "A first run, from the package to a finished population", command by command in
# this shell (a `cd` or a variable carries to the next, as in a terminal), with a wait before
# step 5 (round 2 open), the crash before step 6 (SIGKILL once a round has closed since the backup), step 4
# in the background, and the checks of the restored and of the finished run after the block.
# Prints each command and the end of its output. FEDLEAF_REPO: the checkout (its CLIs).
set -euo pipefail
here=/mnt/fedleaf-test
t0=$SECONDS
fail() {
  echo "test_deploy_guide (clean root): FAILED: $*" >&2
  for log in /tmp/step-*.log /run/fedleaf-server.journal; do
    [[ -f $log ]] && { echo "--- the end of $log" >&2; tail -n 12 "$log" | cut -c1-200 >&2; }
  done
  exit 1
}
note() { printf '   (%s)\n' "$*"; }

# ---- the stand-ins: systemctl (no systemd here) and the npm package's bins
# In place of the real one (maintainer scripts may run with a PATH of their own).
install -m 0755 "$here/deploy_guide_systemctl.sh" "$(command -v systemctl || echo /usr/bin/systemctl)"
mkdir -p /run/systemd/system # what the postinst checks for a running systemd
ln -sf "$FEDLEAF_REPO/js_bindings/bin/fedleaf-admin.js" /usr/local/bin/fedleaf-admin
ln -sf "$FEDLEAF_REPO/js_bindings/bin/fedleaf-simulate.js" /usr/local/bin/fedleaf-simulate
ip link set lo up
cd "$here"

# ---- the guide's block: commands (a heredoc or a continued line is one), grouped by step
commands=() steps=()
step="" in_section=0 in_block=0 pending=""
while IFS= read -r line; do
  if ((!in_section)); then
    [[ $line == "## A first run, from the package to a finished population" ]] && in_section=1
    continue
  fi
  if ((!in_block)); then
    [[ $line == '```sh' ]] && in_block=1
    [[ $line == "## "* ]] && break
    continue
  fi
  [[ $line == '```' ]] && break
  if [[ -n $pending ]]; then
    pending+=$'\n'"$line"
    if [[ $pending == *"<<'EOF'"* ]]; then
      [[ $line == EOF ]] || continue
    elif [[ $line == *\\ ]]; then
      continue
    fi
    commands+=("$pending") steps+=("$step") pending=""
    continue
  fi
  if [[ $line =~ ^#\ ([0-9]+)\. ]]; then step="${BASH_REMATCH[1]}"; continue; fi
  [[ $line == "#"* || -z $line ]] && continue
  if [[ $line == *"<<'EOF'" || $line == *\\ ]]; then pending="$line"; continue; fi
  commands+=("$line") steps+=("$step")
done <"$here/deploy.md"
for n in 1 2 3 4 5 6 7; do
  [[ " ${steps[*]} " == *" $n "* ]] || fail "docs/deploy.md's first-run block has no step $n (# $n. ...): not found, or it changed"
done

status_json() { fedleaf-admin status spam --json 2>/dev/null; }
# jsonq FILE EXPR: EXPR of the JSON in FILE (as s), printed.
jsonq() { node -e "const s = JSON.parse(require('fs').readFileSync('$1', 'utf8')); console.log($2)"; }
# wait_round R SECONDS: until the population's open round is >= R (its status, polled every
# 50 ms: a round can take well under a second), saved in /tmp/now.json.
wait_round() {
  node -e "
    const [round, seconds] = [Number(process.argv[1]), Number(process.argv[2])];
    const end = Date.now() + seconds * 1000;
    (async () => {
      let seen = null;
      for (;;) {
        try {
          seen = await (await fetch('http://127.0.0.1:8080/v1/populations/spam')).json();
          if (seen.round >= round) return require('fs').writeFileSync('/tmp/now.json', JSON.stringify(seen));
        } catch {}
        if (Date.now() > end) { console.error('round ' + round + ' did not open within ' + seconds + ' s (round ' + seen?.round + ')'); process.exit(1); }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
  " "$1" "$2" || fail "waiting for round $1"
}

background=() background_shown=()
run_step() { # run_step INDEX
  local command="${commands[$1]}" shown rc=0
  shown="${command%%$'\n'*}"
  [[ $command == *$'\n'* ]] && shown+=" … ($(($(wc -l <<<"$command") - 1)) more lines)"
  if [[ ${steps[$1]} == 4 || ${steps[$1]} == 7 ]]; then
    local log="/tmp/step-$1.log"
    printf '$ %s\n   (in another terminal: in the background, output in %s)\n' "$shown" "$log"
    # "Another terminal": the first one opened where step 4 ran, later ones run there too.
    terminal="${terminal:-$PWD}"
    (cd "$terminal" && eval "exec $command") >"$log" 2>&1 &
    background+=("$!:$log") background_shown+=("$shown")
    return
  fi
  printf '$ %s\n' "$shown"
  eval "$command" >/tmp/step.out 2>&1 || rc=$?
  tail -n 4 /tmp/step.out | cut -c1-160 | sed 's/^/   /'
  ((rc == 0)) || fail "exit $rc from docs/deploy.md's command: $command"
}

last_step=""
for i in "${!commands[@]}"; do
  if [[ ${steps[$i]} != "$last_step" ]]; then
    last_step="${steps[$i]}"
    printf '\n== step %s (%d s)\n' "$last_step" $((SECONDS - t0))
    case "$last_step" in
      5)
        wait_round 2 120
        cp /tmp/now.json /tmp/before-backup.json
        note "mid-run: round $(jsonq /tmp/before-backup.json 's.round') open with $(jsonq /tmp/before-backup.json 's.reports') reports; the status before the backup is kept"
        ;;
      6)
        wait_round $((after_backup + 1)) 90
        pid="$(cat /run/fedleaf-server.pid)"
        note "round $(jsonq /tmp/now.json 's.round') open: the server (pid $pid) is killed with SIGKILL — the crash, not a step of the guide"
        kill -KILL "$pid"
        while :; do
          state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo gone)"
          [[ $state == Z || $state == gone ]] && break
          sleep 0.05
        done
        ;;
      7)
        # The restored state: what was acknowledged before the backup is there.
        status_json >/tmp/restored.json || fail "no status after the restore"
        jsonq /tmp/restored.json '0' >/dev/null
        node -e "
          const fs = require('fs');
          const before = JSON.parse(fs.readFileSync('/tmp/before-backup.json', 'utf8'));
          const after = JSON.parse(fs.readFileSync('/tmp/restored.json', 'utf8'));
          const byRound = new Map(after.history.map((h) => [h.round, h]));
          for (const b of before.history) {
            const a = byRound.get(b.round);
            if (!a) throw new Error('round ' + b.round + ' is missing after the restore');
            if (b.status === 'closed' && (a.status !== 'closed' || a.reports !== b.reports || a.examples !== b.examples))
              throw new Error('closed round ' + b.round + ' differs after the restore: ' + JSON.stringify([b, a]));
            if (a.reports < b.reports) throw new Error('round ' + b.round + ' lost reports: ' + b.reports + ' -> ' + a.reports);
          }
          const closed = before.history.filter((h) => h.status === 'closed').length;
          console.log('   (restored: round ' + after.round + '; the ' + closed + ' rounds closed before the backup are there with the same ' +
                      'reports and examples, and round ' + before.round + ' has ' + byRound.get(before.round).reports + ' reports, ' +
                      before.reports + ' before the backup)');
        " || fail "the restored state lacks what was acknowledged before the backup"
        # The first leaves stop (Ctrl-C in the guide; SIGTERM here: a background job ignores SIGINT).
        first="${background[0]%%:*}"
        kill -TERM "$first"
        rc=0
        wait "$first" || rc=$?
        ((rc == 143)) || fail "the first fedleaf-simulate exited $rc after SIGTERM, not 143"
        log="${background[0]#*:}"
        note "the first fedleaf-simulate, stopped (SIGTERM: exit $rc): $(grep -v 'retrying in' "$log" | tail -n 1 | cut -c1-100); its leaves retried $(grep -c 'retrying in' "$log" || true) times through the outage"
        background=("${background[@]:1}") background_shown=("${background_shown[@]:1}")
        ;;
    esac
  fi
  run_step "$i"
  # After the backup: the round then open (the backup holds that one or an earlier one).
  if [[ ${steps[$i]} == 5 ]]; then wait_round 0 10 && after_backup="$(jsonq /tmp/now.json 's.round')"; fi
done

# ---- the run finishes
printf '\n== the run finishes (%d s)\n' $((SECONDS - t0))
for entry in "${background[@]}"; do
  pid="${entry%%:*}" log="${entry#*:}"
  deadline=$((SECONDS + 150))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
  kill -0 "$pid" 2>/dev/null && { tail -20 "$log" >&2; fail "$log: still running after 150 s"; }
  rc=0
  wait "$pid" || rc=$?
  ((rc == 0)) || { tail -20 "$log" >&2; fail "$log: exit $rc"; }
done
for i in "${!background[@]}"; do
  log="${background[$i]#*:}"
  printf '$ %s   (exited 0; the end of its output)\n' "${background_shown[$i]}"
  if grep -q '^population spam:' "$log"; then
    # status --watch: its last screen (screens are separated by blank lines when not on a terminal)
    awk 'BEGIN{RS=""} {last=$0} END{print last}' "$log" | head -8 | cut -c1-160 | sed 's/^/   /'
    note "$(grep -c '^population spam:' "$log") screens; $(grep -c '^(no status:' "$log" || true) polls found no server (the outage)"
  else
    grep -v 'retrying in' "$log" | tail -n 2 | cut -c1-160 | sed 's/^/   /'
  fi
done
status_json >/tmp/final.json || fail "no final status"
node -e "
  const s = JSON.parse(require('fs').readFileSync('/tmp/final.json', 'utf8'));
  if (s.state !== 'finished' || s.round !== s.rounds) throw new Error('not finished: ' + s.state + ', round ' + s.round + ' of ' + s.rounds);
  for (let r = 0; r < s.rounds; r++) {
    const h = s.history.find((x) => x.round === r);
    if (!h || h.status !== 'closed' || h.reports < s.min_reports) throw new Error('round ' + r + ': ' + JSON.stringify(h));
  }
  console.log('   (final: ' + s.state + ', round ' + s.round + ' of ' + s.rounds + '; rounds 0-' + (s.rounds - 1) + ' closed with ' +
              s.history.filter((h) => h.round < s.rounds).map((h) => h.reports).join(', ') + ' reports)');
" || fail "the population did not finish with every round closed"
note "server events: $(grep -o 'event=[a-z_]*' /run/fedleaf-server.journal | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}' | sed 's/, $//')"
printf 'test_deploy_guide (clean root): ok in %d s\n' $((SECONDS - t0))
