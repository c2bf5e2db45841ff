#!/usr/bin/env bash
# npm test: everything, on a fresh machine or a warm one. Installs what is missing (npm packages,
# Debian packages and the Go-built cluster binaries, through the cluster harness), then runs
#   unit → (test cluster up, agent rebuilt from this tree, with lint and typecheck beside it) → integration → e2e → faults
#   → image (nodelet's image built by image/build.sh, compared with the Dockerfile, run on the cluster)
#   → selfhosted (nodelet's image imported, the chart installed with helm as a DaemonSet on the cluster)
# and tears the cluster down again unless it was already up when the run started.
# Ends with one line "N passed, N failed, N skipped" over every suite (CI parses it), the number of
# cancelled tests, which count as failed, on the line before.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
started=$SECONDS
failed_steps=()

step() {
  local name=$1
  shift
  printf '\n==> %s\n' "$name"
  local t0=$SECONDS
  if "$@"; then
    printf '<== %s ok (%ss)\n' "$name" $((SECONDS - t0))
  else
    printf '<== %s FAILED (%ss)\n' "$name" $((SECONDS - t0))
    failed_steps+=("$name")
  fi
}

# `npm ci`: exactly what package-lock.json lists, or a refusal when it is out of sync with
# package.json (the lock carries every platform's optional packages, msgpackr-extract's included).
# Skipped when node_modules was installed from this very lock.
ensure_npm_packages() {
  local stamp=node_modules/.nodelet-lock.sha256 want
  want=$(sha256sum package-lock.json | cut -d' ' -f1)
  if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then return 0; fi
  npm ci --no-audit --no-fund && echo "$want" >"$stamp"
}

cluster_was_up() {
  [[ -f .cluster/pids/kube-apiserver.pid ]] && kill -0 "$(cat .cluster/pids/kube-apiserver.pid)" 2>/dev/null
}

# The agent under test must be built from this tree: stop a running one so cluster:up rebuilds it.
restart_agent_fresh() {
  local pidfile=.cluster/pids/nodelet.pid
  if [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    kill -TERM "$(cat "$pidfile")" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$(cat "$pidfile")" 2>/dev/null || break; sleep 0.5; done
  fi
  rm -rf dist
}

# The totals line `# <name> N` of a TAP file node's runner wrote, or empty when it has none.
tap_total() {
  grep -E "^# $2 [0-9]+\$" "$1" | tail -1 | awk '{print $3}'
}

# Totals over every suite's TAP. A cancelled test (its hook failed, it timed out, the run was
# stopped) did not pass, so it counts as failed; a suite whose TAP has no totals (run-suite stopped
# it at its time limit, or the runner died) counts as one failed test.
summary() {
  local pass=0 fail=0 skipped=0 cancelled=0 incomplete=() f p x s c
  for f in .test-results/*.tap; do
    [[ -f $f ]] || continue
    p=$(tap_total "$f" pass)
    if [[ -z $p ]]; then
      incomplete+=("$(basename "$f" .tap)")
      fail=$((fail + 1))
      continue
    fi
    x=$(tap_total "$f" fail) s=$(tap_total "$f" skipped) c=$(tap_total "$f" cancelled)
    pass=$((pass + p))
    fail=$((fail + ${x:-0}))
    skipped=$((skipped + ${s:-0}))
    cancelled=$((cancelled + ${c:-0}))
  done
  fail=$((fail + cancelled))
  printf '\nnpm test finished in %ss' $((SECONDS - started))
  if ((${#failed_steps[@]})); then printf '; failed steps: %s' "${failed_steps[*]}"; fi
  printf '\n'
  for f in "${incomplete[@]}"; do
    printf '%s suite: no totals in its TAP (%s): counted as 1 failed\n' "$f" "$(grep -m1 '^# run-suite:' ".test-results/$f.tap" | sed 's/^# run-suite: //' || echo 'the runner did not finish')"
  done
  printf '%s cancelled (counted as failed)\n' "$cancelled"
  printf '%s passed, %s failed, %s skipped\n' "$pass" "$fail" "$skipped"
}

# Waits for the background lint and typecheck, prints their output, and records a failure of either
# (the subshell's own failed_steps do not reach this shell: its exit status does).
join_checks() {
  local status=0
  wait "$checks_pid" || status=$?
  cat "$checks_log"
  rm -f "$checks_log"
  if ((status != 0)); then failed_steps+=("lint/typecheck"); fi
}

rm -rf .test-results
step "install npm packages" ensure_npm_packages || true
if ((${#failed_steps[@]})); then summary; exit 1; fi
step "unit tests" bash test/run-suite.sh unit
# Lint and typecheck need no cluster and one core: they run beside the cluster's start and the
# integration tests (which mostly wait on the cluster), and are reported once those are done.
checks_log=$(mktemp)
(failed_steps=(); step "lint" npm run --silent lint; step "typecheck" npm run --silent typecheck; ((${#failed_steps[@]} == 0))) >"$checks_log" 2>&1 &
checks_pid=$!
was_up=0
cluster_was_up && was_up=1
restart_agent_fresh
step "test cluster up" bash test/cluster/up.sh
if [[ ! " ${failed_steps[*]} " =~ " test cluster up " ]]; then
  step "integration tests" bash test/run-suite.sh integration
fi
join_checks
if [[ ! " ${failed_steps[*]} " =~ " test cluster up " ]]; then
  step "end-to-end tests" bash test/run-suite.sh e2e
  step "fault tests" bash test/run-suite.sh faults
  step "image tests" bash test/run-suite.sh image
  step "self-hosted helm tests" bash test/run-suite.sh selfhosted
fi
if ((!was_up)); then
  step "test cluster down" bash test/cluster/down.sh
else
  echo "(the test cluster was up before this run: left up; npm run cluster:down stops it)"
fi
summary
((${#failed_steps[@]} == 0))
