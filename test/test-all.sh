#!/usr/bin/env bash
# npm test: everything, on a fresh machine or a warm one. Installs what is missing (npm packages,
# Debian packages and the Go-built cluster binaries, through the cluster harness), then runs
#   lint → typecheck → unit → (test cluster up, agent rebuilt from this tree) → integration → e2e → faults
# and tears the cluster down again unless it was already up when the run started.
# Ends with one line "N passed, N failed" over every suite.
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

# `npm install`, not `npm ci`: the registry this machine reaches has no builds of optional
# platform packages for other systems (msgpackr-extract-darwin-*, -win32-*, -linux-arm), so the
# lock lists none and `npm ci` refuses it as out of sync; `npm install` installs exactly the locked
# versions and skips optional packages it cannot get.
ensure_npm_packages() {
  local stamp=node_modules/.nodelet-lock.sha256 want
  want=$(sha256sum package-lock.json | cut -d' ' -f1)
  if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then return 0; fi
  npm install --no-audit --no-fund && echo "$want" >"$stamp"
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

summary() {
  local pass=0 fail=0 f p x
  for f in .test-results/*.tap; do
    [[ -f $f ]] || continue
    p=$(grep -E '^# pass [0-9]+' "$f" | tail -1 | awk '{print $3}')
    x=$(grep -E '^# fail [0-9]+' "$f" | tail -1 | awk '{print $3}')
    pass=$((pass + ${p:-0}))
    fail=$((fail + ${x:-0}))
  done
  printf '\nnpm test finished in %ss' $((SECONDS - started))
  if ((${#failed_steps[@]})); then printf '; failed steps: %s' "${failed_steps[*]}"; fi
  printf '\n%s passed, %s failed\n' "$pass" "$fail"
}

rm -rf .test-results
step "install npm packages" ensure_npm_packages || true
if ((${#failed_steps[@]})); then summary; exit 1; fi
step "lint" npm run --silent lint
step "typecheck" npm run --silent typecheck
step "unit tests" bash test/run-suite.sh unit
was_up=0
cluster_was_up && was_up=1
restart_agent_fresh
step "test cluster up" bash test/cluster/up.sh
if [[ ! " ${failed_steps[*]} " =~ " test cluster up " ]]; then
  step "integration tests" bash test/run-suite.sh integration
  step "end-to-end tests" bash test/run-suite.sh e2e
  step "fault tests" bash test/run-suite.sh faults
fi
if ((!was_up)); then
  step "test cluster down" bash test/cluster/down.sh
else
  echo "(the test cluster was up before this run: left up; npm run cluster:down stops it)"
fi
summary
((${#failed_steps[@]} == 0))
