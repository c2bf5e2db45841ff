#!/usr/bin/env bash
# npm run conformance [-- options]: the upstream Kubernetes e2e tests that concern a node
# ([NodeConformance], [sig-node] … [Conformance], [sig-storage] … [NodeConformance]; no [Serial],
# [Disruptive], [Slow], [Flaky], [Feature:…], [Alpha], [Beta]) against the running test cluster,
# whose node is nodelet. Not part of `npm test`: a whole run takes tens of minutes.
#
#   --focus <regex>   only the in-scope tests whose full name matches (JavaScript regex)
#   --shard <i/n>     only shard i of n of the (focused) in-scope tests; run shards one by one
#   --procs <n>       parallel ginkgo processes (default 3)
#   --timeout <dur>   ginkgo's limit for the whole run (default 25m)
#   --results <dir>   where each run's reports go (default .conformance/results)
#   --no-render       do not regenerate docs/conformance.md
#
# Assumes the test cluster is up (KUBECONFIG, or .cluster/env). It builds e2e.test and ginkgo
# (test/conformance/build-e2e.sh, cached) and the test images (test/images/build-e2e-images.sh),
# imports those into the cluster's containerd (pulls never leave the machine), lists the in-scope
# tests with a dry run, runs the selection, and renders docs/conformance.md from every run's report
# under the results dir (a later run of a test replaces an earlier one).
set -euo pipefail
conf_dir=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$conf_dir/../.." && pwd)
# shellcheck source=../cluster/versions.env
source "$repo/test/cluster/versions.env"
say() { printf '[conformance] %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

focus="" shard="" procs=3 timeout=25m results=$repo/.conformance/results render=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --focus) focus=$2; shift ;;
    --shard) shard=$2; shift ;;
    --procs) procs=$2; shift ;;
    --timeout) timeout=$2; shift ;;
    --results) results=$2; shift ;;
    --no-render) render=0 ;;
    *) die "unknown option $1 (see the top of test/conformance/run.sh)" ;;
  esac
  shift
done

in_scope_focus='\[NodeConformance\]|\[sig-node\].*\[Conformance\]|\[sig-storage\].*\[NodeConformance\]'
in_scope_skip='\[Serial\]|\[Disruptive\]|\[Slow\]|\[Flaky\]|\[Feature:|\[Alpha\]|\[Beta\]'
# Every exclusion's regex (the part before " | ") joins the skip.
exclusions=$(grep -v -e '^\s*#' -e '^\s*$' "$conf_dir/exclusions.txt" | sed 's/ | [^|]*$//' | paste -sd'|')
skip="$in_scope_skip${exclusions:+|$exclusions}"

# The cluster: up already, or say so.
if [[ -z ${KUBECONFIG:-} && -f $repo/.cluster/env ]]; then source "$repo/.cluster/env"; fi
[[ -n ${KUBECONFIG:-} && -n ${CLUSTER_DIR:-} ]] ||
  die "no test cluster environment (KUBECONFIG, CLUSTER_DIR): start it with 'npm run cluster:up' (or run through /tmp/nl/with-cluster.sh) first"
kubectl get --raw /readyz >/dev/null 2>&1 ||
  die "the test cluster's API server ($KUBECONFIG) does not answer: is the cluster up? ('npm run cluster:status')"

bin=$(bash "$conf_dir/build-e2e.sh")
bash "$repo/test/images/build-e2e-images.sh" >/dev/null
(
  export NODELET_CLUSTER_DIR=$CLUSTER_DIR
  # shellcheck source=../cluster/lib/common.sh
  source "$repo/test/cluster/lib/common.sh"
  # shellcheck source=../cluster/lib/containerd.sh
  source "$repo/test/cluster/lib/containerd.sh"
  containerd_import_images "$repo/test/images/build-e2e-images.sh"
)

e2e_flags=(
  --provider=skeleton --kubeconfig="$KUBECONFIG" --kubectl-path="$(command -v kubectl)"
  --minStartupPods=0 --allowed-not-ready-nodes=0 --disable-log-dump --node-os-distro=debian
  --container-runtime-endpoint="$CONTAINER_RUNTIME_ENDPOINT" --dns-domain=cluster.local
  --system-pods-startup-timeout=1m --node-schedulable-timeout=2m
)

label=${shard:+shard-${shard/\//-of-}}
[[ -n $focus ]] && label="focus-$(printf '%s' "$focus" | sha256sum | cut -c1-8)${label:+-$label}"
label=${label:-all}
out=$results/$label
rm -rf "$out" && mkdir -p "$out"

say "listing the in-scope tests (dry run)"
"$bin/e2e.test" --ginkgo.dry-run --ginkgo.no-color --ginkgo.focus="$in_scope_focus" --ginkgo.skip="$skip" \
  --ginkgo.json-report="$out/list.json" "${e2e_flags[@]}" >"$out/list.log" 2>&1 ||
  die "the dry run failed; see $out/list.log"
select_args=(select "$out/list.json")
[[ -n $focus ]] && select_args+=(--focus "$focus")
[[ -n $shard ]] && select_args+=(--shard "$shard")
selected=$(node --import tsx "$conf_dir/cli.ts" "${select_args[@]}")

commit=$(git -C "$repo" rev-parse --short=12 HEAD)
[[ -z $(git -C "$repo" status --porcelain -- ':!docs/conformance.md') ]] || commit+="+dirty"
say "running $label with $procs ginkgo procs against nodelet $commit (log: $out/run.log)"
started=$SECONDS
status=0
"$bin/ginkgo" run --procs="$procs" --timeout="$timeout" --no-color --silence-skips --focus="$selected" \
  --output-dir="$out" --json-report=report.json --junit-report=junit.xml \
  "$bin/e2e.test" -- "${e2e_flags[@]}" --report-dir="$out" >"$out/run.log" 2>&1 || status=$?
wall=$((SECONDS - started))
jq -n --arg lbl "$label" --arg commit "$commit" --arg k "$KUBERNETES_VERSION" \
  --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --argjson wall "$wall" --argjson procs "$procs" \
  '{"label": $lbl, "commit": $commit, "kubernetesVersion": $k, "date": $date, "wallSeconds": $wall, "procs": $procs}' \
  >"$out/meta.json"
[[ -f $out/report.json ]] || die "ginkgo wrote no report (exit $status); see $out/run.log"
say "$label: $(node --import tsx "$conf_dir/cli.ts" summary "$out/report.json") in ${wall}s (ginkgo exit $status)"

if ((render)); then
  cmd="npm run conformance -- --shard i/n   # for i in 1..n, each through its own hold of the cluster"
  node --import tsx "$conf_dir/cli.ts" render "$results" "$repo/docs/conformance.md" "$cmd"
fi
exit "$status"
