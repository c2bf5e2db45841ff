#!/usr/bin/env bash
# npm run conformance [-- options]: the upstream Kubernetes e2e tests that concern a node
# ([NodeConformance], [sig-node] … [Conformance], [sig-storage] … [NodeConformance]; no [Serial],
# [Disruptive], [Slow], [Flaky], [Feature:…], [Alpha], [Beta]) against the running test cluster,
# whose node is nodelet. Not part of `npm test`: a whole run takes tens of minutes.
#
#   --focus <regex>   only the in-scope tests whose full name matches (JavaScript regex)
#   --shard <i/n>     only shard i of n of the (focused) in-scope tests; run shards one by one
#   --procs <n>       parallel ginkgo processes (default 3)
#   --timeout <dur>   ginkgo's limit for the whole run (default 60m: all 265 tests with 3 procs took
#                     about 40 minutes here; a run stopped at its limit reports the rest as failed)
#   --results <dir>   where each run's reports go (default .conformance/results; .conformance/control
#                     with --node kubelet)
#   --node kubelet    the control run: the same tests with every test pod on the kubelet node that
#                     `npm run kubelet:up` runs beside nodelet's (a test that fails there too is a
#                     harness or host problem, not nodelet's). For the run, nodelet's node is
#                     cordoned and the kubelet node's bench taint lifted (both restored on exit,
#                     failure included): the framework then sees one schedulable node, the kubelet's,
#                     and places every pod there. The test images go into the kubelet's containerd.
#   --features <A,B>  instead of the in-scope tests: the tests labelled [Feature:A] or [Feature:B],
#                     or [FeatureGate:A] or [FeatureGate:B] (e.g. UserNamespacesSupport: features GA
#                     in the kubelet whose upstream tests keep their label; ContainerRestartRules: a
#                     beta gate on by default), still without [Serial], [Disruptive], [Slow], [Flaky]
#                     or [Alpha]; give them their own --results and --no-render
#   --no-render       do not regenerate docs/conformance.md
#   --render-only     only regenerate docs/conformance.md from the reports there are (no cluster
#                     needed: after an edit of causes.txt or exclusions.txt)
#   --suite node      instead: Kubernetes' node conformance test (the [NodeConformance] tests of
#                     e2e_node.test) on one node; run-node.sh, whose options are these but for
#                     --features (see its top). Its runs go to .conformance/node/{results,control}
#                     and into their own section of docs/conformance.md.
#
# docs/conformance.md is rendered from nodelet's runs (.conformance/results) and, in its section
# "Control: the same tests on the kubelet", the control runs (.conformance/control).
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

# --suite node hands the whole run to run-node.sh (e2e_node.test); --suite e2e is this script.
suite=e2e rest=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --suite) suite=${2:-}; shift 2 || die "--suite needs e2e or node" ;;
    *) rest+=("$1"); shift ;;
  esac
done
case $suite in
  e2e) set -- ${rest[@]+"${rest[@]}"} ;;
  node) exec bash "$conf_dir/run-node.sh" ${rest[@]+"${rest[@]}"} ;;
  *) die "--suite is e2e (default) or node, not $suite" ;;
esac

focus="" shard="" procs=3 timeout=60m results="" render=1 target=nodelet features=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --focus) focus=$2; shift ;;
    --shard) shard=$2; shift ;;
    --procs) procs=$2; shift ;;
    --timeout) timeout=$2; shift ;;
    --results) results=$2; shift ;;
    --node) target=$2; shift ;;
    --features) features=$2; shift ;;
    --no-render) render=0 ;;
    --render-only) render=2 ;;
    *) die "unknown option $1 (see the top of test/conformance/run.sh)" ;;
  esac
  shift
done
[[ $target == nodelet || $target == kubelet ]] || die "--node is nodelet (default) or kubelet, not $target"
nodelet_results=$repo/.conformance/results control_results=$repo/.conformance/control
if [[ $target == kubelet ]]; then control_results=${results:-$control_results}; else nodelet_results=${results:-$nodelet_results}; fi
results=$nodelet_results
[[ $target == kubelet ]] && results=$control_results

in_scope_focus='\[NodeConformance\]|\[sig-node\].*\[Conformance\]|\[sig-storage\].*\[NodeConformance\]'
in_scope_skip='\[Serial\]|\[Disruptive\]|\[Slow\]|\[Flaky\]|\[Feature:|\[Alpha\]|\[Beta\]'
if [[ -n $features ]]; then
  [[ $features =~ ^[A-Za-z0-9]+(,[A-Za-z0-9]+)*$ ]] || die "--features takes feature names separated by commas, not $features"
  in_scope_focus="\\[(Feature|FeatureGate):(${features//,/|})\\]"
  in_scope_skip='\[Serial\]|\[Disruptive\]|\[Slow\]|\[Flaky\]|\[Alpha\]'
fi
# Every exclusion's regex (the part before " | ") joins the skip.
exclusions=$(grep -v -e '^\s*#' -e '^\s*$' "$conf_dir/exclusions.txt" | sed 's/ | [^|]*$//' | paste -sd'|')
skip="$in_scope_skip${exclusions:+|$exclusions}"

# docs/conformance.md from nodelet's runs and the control runs.
render_page() {
  local cmd="npm run conformance -- --shard i/n   # for i in 1..n, each through its own hold of the cluster" control=()
  [[ -d $control_results ]] && control=(--control "$control_results")
  # The node conformance suite's runs (run-node.sh): their own section.
  [[ -d $repo/.conformance/node/results ]] && control+=(--node-suite "$repo/.conformance/node/results")
  [[ -d $repo/.conformance/node/control ]] && control+=(--node-control "$repo/.conformance/node/control")
  node --import tsx "$conf_dir/cli.ts" render "$nodelet_results" "$repo/docs/conformance.md" "$cmd" ${control[@]+"${control[@]}"}
}
if ((render == 2)); then render_page; exit 0; fi

# The cluster: up already, or say so.
if [[ -z ${KUBECONFIG:-} && -f $repo/.cluster/env ]]; then source "$repo/.cluster/env"; fi
[[ -n ${KUBECONFIG:-} && -n ${CLUSTER_DIR:-} ]] ||
  die "no test cluster environment (KUBECONFIG, CLUSTER_DIR): start it with 'npm run cluster:up' (or run through /tmp/nl/with-cluster.sh) first"
kubectl get --raw /readyz >/dev/null 2>&1 ||
  die "the test cluster's API server ($KUBECONFIG) does not answer: is the cluster up? ('npm run cluster:status')"

# Runs a command with the harness's cluster libraries (the kubelet node's settings included).
with_cluster_libs() (
  export NODELET_CLUSTER_DIR=$CLUSTER_DIR
  for lib in common containerd kubelet; do
    # shellcheck source=/dev/null
    source "$repo/test/cluster/lib/$lib.sh"
  done
  "$@"
)
kubelet_setting() { printf '%s\n' "${!1}"; }

# The control: the kubelet node must be up and Ready; nodelet's node is cordoned and the kubelet's
# taint lifted for the run, and both are put back however the run ends.
node_name=${NODE_NAME:?the cluster env names no NODE_NAME} runtime_endpoint=$CONTAINER_RUNTIME_ENDPOINT
restore_nodes() {
  local status=$?
  kubectl uncordon "$node_name" >/dev/null || say "WARNING: could not uncordon $node_name"
  if kubectl get node "$kubelet_node" >/dev/null 2>&1; then
    kubectl taint node "$kubelet_node" "$kubelet_taint=true:NoSchedule" --overwrite >/dev/null ||
      say "WARNING: could not taint $kubelet_node again"
  fi
  say "control: $node_name uncordoned, $kubelet_node tainted $kubelet_taint again"
  exit "$status"
}
if [[ $target == kubelet ]]; then
  kubelet_node=$(with_cluster_libs kubelet_setting KUBELET_NODE_NAME)
  kubelet_taint=$(with_cluster_libs kubelet_setting KUBELET_TAINT_KEY)
  runtime_endpoint=unix://$(with_cluster_libs kubelet_setting KUBELET_CONTAINERD_SOCK)
  [[ $(kubectl get node "$kubelet_node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]] ||
    die "the kubelet node $kubelet_node is not Ready: run 'npm run kubelet:up' first (in the same hold of the cluster)"
  trap restore_nodes EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  kubectl cordon "$node_name" >/dev/null
  if kubectl get node "$kubelet_node" -o jsonpath='{.spec.taints[*].key}' | tr ' ' '\n' | grep -qxF -- "$kubelet_taint"; then
    kubectl taint node "$kubelet_node" "$kubelet_taint-" >/dev/null
  fi
  say "control: $node_name cordoned, $kubelet_node untainted: every test pod goes to the kubelet"
fi

bin=$(bash "$conf_dir/build-e2e.sh")
bash "$repo/test/images/build-e2e-images.sh" >/dev/null
if [[ $target == kubelet ]]; then
  with_cluster_libs with_kubelet_containerd containerd_import_images "$repo/test/images/build-e2e-images.sh"
else
  with_cluster_libs containerd_import_images "$repo/test/images/build-e2e-images.sh"
fi

e2e_flags=(
  --provider=skeleton --kubeconfig="$KUBECONFIG" --kubectl-path="$(command -v kubectl)"
  --minStartupPods=0 --allowed-not-ready-nodes=0 --disable-log-dump --node-os-distro=debian
  --container-runtime-endpoint="$runtime_endpoint" --dns-domain=cluster.local
  --system-pods-startup-timeout=1m --node-schedulable-timeout=2m
)

# nodelet's run beside the kubelet node of `npm run kubelet:up`: that node keeps its bench taint, so
# the framework neither waits for it to be schedulable nor places a test pod on it.
if [[ $target == nodelet ]]; then
  kubelet_taint=$(with_cluster_libs kubelet_setting KUBELET_TAINT_KEY)
  e2e_flags+=(--non-blocking-taints="node-role.kubernetes.io/control-plane,$kubelet_taint")
fi

label=${shard:+shard-${shard/\//-of-}}
[[ -n $focus ]] && label="focus-$(printf '%s' "$focus" | sha256sum | cut -c1-8)${label:+-$label}"
[[ -n $features ]] && label="features-${features//,/-}${label:+-$label}"
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

# The commit the running agent was built from (the harness stamps dist/ when it builds), not the
# tree's HEAD: commits made after the agent started are not what the tests ran against.
# shellcheck source=../cluster/lib/tree-commit.sh
source "$repo/test/cluster/lib/tree-commit.sh"
commit=$(tree_commit "$repo")
if [[ $target == nodelet && -s $repo/dist/BUILD_COMMIT ]]; then
  built=$(<"$repo/dist/BUILD_COMMIT")
  [[ $built == "$commit" ]] || say "the agent was built from $built, the tree is at $commit: reporting $built"
  commit=$built
fi
say "running $label with $procs ginkgo procs against $target (nodelet commit $commit; log: $out/run.log)"
started=$SECONDS
status=0
"$bin/ginkgo" run --procs="$procs" --timeout="$timeout" --no-color --silence-skips --focus="$selected" \
  --output-dir="$out" --json-report=report.json --junit-report=junit.xml \
  "$bin/e2e.test" -- "${e2e_flags[@]}" --report-dir="$out" >"$out/run.log" 2>&1 || status=$?
wall=$((SECONDS - started))
jq -n --arg lbl "$label" --arg commit "$commit" --arg k "$KUBERNETES_VERSION" --arg node "$target" \
  --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --argjson wall "$wall" --argjson procs "$procs" \
  '{"label": $lbl, "node": $node, "commit": $commit, "kubernetesVersion": $k, "date": $date, "wallSeconds": $wall, "procs": $procs}' \
  >"$out/meta.json"
[[ -f $out/report.json ]] || die "ginkgo wrote no report (exit $status); see $out/run.log"
say "$label: $(node --import tsx "$conf_dir/cli.ts" summary "$out/report.json") in ${wall}s (ginkgo exit $status)"

((render)) && render_page
exit "$status"
