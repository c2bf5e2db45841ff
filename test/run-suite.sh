#!/usr/bin/env bash
# Runs one test suite with node's built-in test runner (TypeScript through tsx).
#   unit         colocated *.test.ts under cmd/, server/, controllers/, reconcilers/, cri/, kube/, util/, dashboard/, bench/, test/doubles/,
#                test/conformance/ (the conformance runner's pure parts), test/faults-scale/hostile/ (the hostile-spec generator) (plain data, fakes)
#   integration  test/integration/*.test.ts (real Redis, containerd, API server: needs `npm run cluster:up`)
#   e2e          test/e2e/*.test.ts (the whole test cluster with nodelet as its node agent)
#   faults       test/faults/*.test.ts (kill and restart the cluster's daemons: nothing else may use the cluster)
#   faults-scale test/faults-scale/*.test.ts (long fault campaigns, not part of npm test: 100-pod churns through 20 agent
#                kills, a containerd kill, 5 API server restarts; 1,000 hostile pod specs)
#   image        test/image/*.test.ts (nodelet's image, built by image/build.sh; the smoke test runs it on the cluster)
#   selfhosted   test/selfhosted/*.test.ts (the chart installed with helm, nodelet as its DaemonSet on the cluster)
#   upgrade      test/upgrade/*.test.ts (helm upgrade from the previous release with running pods; npm run test:upgrade,
#                not part of npm test: it builds the previous release's image too)
#   compare      test/compare/*.test.ts (nodelet against the kubelet control node of `npm run kubelet:up`, which the
#                suite starts: npm run test:compare, not part of npm test: a second Ready node changes what
#                the e2e suites see, and a cold cache builds the kubelet)
# Prints the spec report; also writes TAP to .test-results/<suite>.tap for test-all's summary.
# Each suite runs under an overall time limit (below); hitting it prints why and exits 124.
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${1:?usage: run-suite.sh unit|integration|e2e|faults|faults-scale|image|selfhosted|upgrade|compare [files...]}
shift
case $suite in
  unit) mapfile -t files < <(find cmd server controllers reconcilers cri kube util dashboard approver queue-users bench test/doubles test/conformance test/faults-scale/hostile -name '*.test.ts' 2>/dev/null | sort) ;;
  integration | e2e | faults | faults-scale | image | selfhosted | upgrade | compare)
    mapfile -t files < <(find "test/$suite" -maxdepth 1 -name '*.test.ts' | sort)
    if [[ -f .cluster/env ]]; then source .cluster/env; fi
    ;;
  *) echo "unknown suite: $suite" >&2; exit 2 ;;
esac
if [[ $# -gt 0 ]]; then files=("$@"); fi
if [[ ${#files[@]} -eq 0 ]]; then echo "no $suite tests found" >&2; exit 1; fi
# Suites against the one shared cluster run their files one at a time.
concurrency=1
if [[ $suite == unit ]]; then concurrency=2; fi
# An overall time limit per suite, so a hung test cannot hold the run (and the cluster) forever:
# node's per-test timeouts do not cover hooks, leaked handles or a wedged child. Overridable with a
# duration `timeout` understands (90s, 20m, 1h): NODELET_SUITE_TIMEOUT_<SUITE> (e.g.
# NODELET_SUITE_TIMEOUT_E2E, NODELET_SUITE_TIMEOUT_FAULTS_SCALE), else NODELET_SUITE_TIMEOUT for every suite.
declare -A default_limit=([unit]=10m [integration]=15m [e2e]=30m [faults]=30m [faults-scale]=3h [image]=20m [selfhosted]=20m [upgrade]=40m [compare]=20m)
suite_upper=${suite^^}
per_suite_var=NODELET_SUITE_TIMEOUT_${suite_upper//-/_}
limit=${!per_suite_var:-${NODELET_SUITE_TIMEOUT:-${default_limit[$suite]}}}
if ! [[ $limit =~ ^[1-9][0-9]*[smh]?$ ]]; then echo "bad time limit for the $suite suite: '$limit' (e.g. 90s, 20m, 1h)" >&2; exit 2; fi
mkdir -p .test-results
tap=.test-results/$suite.tap
# timeout runs the test runner in its own process group and signals the whole group (the runner's
# per-file child processes too): TERM at the limit, KILL 30 s later if anything still stands.
case $limit in
  *h) limit_seconds=$((${limit%h} * 3600)) ;;
  *m) limit_seconds=$((${limit%m} * 60)) ;;
  *) limit_seconds=${limit%s} ;;
esac
started=$SECONDS
timeout --kill-after=30s "$limit" node --import tsx --test --test-concurrency="$concurrency" \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$tap" \
  "${files[@]}" &
runner=$!
# Its own process group does not get the terminal's Ctrl-C: hand INT/TERM on (timeout passes them
# to the whole group), and keep waiting for the runner to finish.
trap 'kill -TERM "$runner" 2>/dev/null || true' INT TERM
while :; do
  wait "$runner" && status=0 || status=$?
  kill -0 "$runner" 2>/dev/null || break
done
trap - INT TERM
# timeout exits 124 when it stopped the runner with TERM, 137 when it had to KILL it as well.
if ((status == 124 || status == 137)) && ((SECONDS - started >= limit_seconds)); then
  printf '\nrun-suite: the %s suite hit its time limit of %s (%s overrides it) and was stopped: counted as failed\n' "$suite" "$limit" "$per_suite_var" >&2
  # test-all's summary reads this line from the TAP (the runner never wrote its own totals).
  printf '# run-suite: timed out after %s\n' "$limit" >>"$tap"
  exit 124
fi
exit "$status"
