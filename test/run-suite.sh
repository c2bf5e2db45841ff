#!/usr/bin/env bash
# Runs one test suite with node's built-in test runner (TypeScript through tsx).
#   unit         colocated *.test.ts under controllers/, reconcilers/, cri/, cmd/ (plain data, fakes)
#   integration  test/integration/*.test.ts (real Redis, real containerd: needs `npm run cluster:up`)
#   e2e          test/e2e/*.test.ts (the whole test cluster with nodelet as its node agent)
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${1:?usage: run-suite.sh unit|integration|e2e}
case $suite in
  unit) mapfile -t files < <(find controllers reconcilers cri cmd -name '*.test.ts' 2>/dev/null | sort) ;;
  integration | e2e)
    mapfile -t files < <(find "test/$suite" -name '*.test.ts' | sort)
    if [[ -f .cluster/env ]]; then source .cluster/env; fi
    ;;
  *) echo "unknown suite: $suite" >&2; exit 2 ;;
esac
if [[ ${#files[@]} -eq 0 ]]; then echo "no $suite tests found" >&2; exit 1; fi
concurrency=1
if [[ $suite == unit ]]; then concurrency=2; fi
exec node --import tsx --test --test-concurrency="$concurrency" --test-reporter=spec "${files[@]}"
