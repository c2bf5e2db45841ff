#!/usr/bin/env bash
# Runs one test suite with node's built-in test runner (TypeScript through tsx).
#   unit         colocated *.test.ts under cmd/, controllers/, reconcilers/, cri/, util/, dashboard/, bench/, test/doubles/ (plain data, fakes)
#   integration  test/integration/*.test.ts (real Redis, containerd, API server: needs `npm run cluster:up`)
#   e2e          test/e2e/*.test.ts (the whole test cluster with nodelet as its node agent)
#   faults       test/faults/*.test.ts (kill and restart the cluster's daemons: nothing else may use the cluster)
# Prints the spec report; also writes TAP to .test-results/<suite>.tap for test-all's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${1:?usage: run-suite.sh unit|integration|e2e|faults [files...]}
shift
case $suite in
  unit) mapfile -t files < <(find cmd controllers reconcilers cri util dashboard bench test/doubles -name '*.test.ts' 2>/dev/null | sort) ;;
  integration | e2e | faults)
    mapfile -t files < <(find "test/$suite" -name '*.test.ts' | sort)
    if [[ -f .cluster/env ]]; then source .cluster/env; fi
    ;;
  *) echo "unknown suite: $suite" >&2; exit 2 ;;
esac
if [[ $# -gt 0 ]]; then files=("$@"); fi
if [[ ${#files[@]} -eq 0 ]]; then echo "no $suite tests found" >&2; exit 1; fi
# Suites against the one shared cluster run their files one at a time.
concurrency=1
if [[ $suite == unit ]]; then concurrency=2; fi
mkdir -p .test-results
exec node --import tsx --test --test-concurrency="$concurrency" \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination=".test-results/$suite.tap" \
  "${files[@]}"
