#!/usr/bin/env bash
# npm run conformance -- --suite node [options]: Kubernetes' node conformance test, the
# [NodeConformance] tests of test/e2e_node run by `e2e_node.test` (built by build-e2e-node.sh), on
# one node of the running test cluster: nodelet's (default) or, with --node kubelet, the kubelet's
# of `npm run kubelet:up`. No [Serial], [Disruptive], [Slow], [Flaky], [Feature:…], [Alpha], [Beta]
# (as run.sh), nor what node-exclusions.txt lists (tests this harness cannot run, with the reason).
#
#   --focus <regex>   only the in-scope tests whose full name matches (JavaScript regex)
#   --shard <i/n>     only shard i of n of the (focused) in-scope tests
#   --procs <n>       parallel ginkgo processes (default 3)
#   --timeout <dur>   ginkgo's limit for the whole run (default 60m)
#   --results <dir>   where each run's reports go (default .conformance/node/results; with --node
#                     kubelet .conformance/node/control)
#   --node kubelet    the control: the same tests on the kubelet node (must be up and Ready)
#   --no-render       do not regenerate docs/conformance.md
#   --render-only     only regenerate docs/conformance.md (run.sh render_page: both suites)
#
# The mode: e2e_node.test's "existing node" mode, the one upstream's node conformance image runs
# (test/e2e_node/conformance/build/Dockerfile: --prepull-images=false, no kubelet of its own), here
# with --start-services=false --stop-services=false: the suite starts no etcd, API server or
# kubelet, restarts nothing, and tests the agent that already runs. What it assumes and how this
# runner meets it:
#   - an API server at --host with --bearer-token and no kubeconfig (framework.LoadConfig's node
#     e2e branch), and a cluster of ONE node: one-node-proxy.ts serves the API server on loopback
#     with the kubeconfig's credentials and shows the suite only the node under test (without the
#     kubelet node's bench taint, which blocks getLocalNode). The cluster itself is not touched:
#     no cordon, no taint change; every test pod names its node (e2epod.PodClient sets nodeName;
#     upstream's node e2e has no scheduler at all).
#   - the agent's /configz through the API server's node proxy (read once per process: static pod
#     dir, cgroup driver and root, which the static pod and cgroup tests use);
#   - the test process on the node's host: it is (both agents run on this machine), so host checks
#     (system validation, AppArmor) see the node's kernel; --container-runtime-endpoint is the
#     target's containerd (run.sh's images are imported there).
set -euo pipefail
conf_dir=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$conf_dir/../.." && pwd)
# shellcheck source=../cluster/versions.env
source "$repo/test/cluster/versions.env"
say() { printf '[conformance:node] %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

focus="" shard="" procs=3 timeout=60m results="" render=1 target=nodelet
while [[ $# -gt 0 ]]; do
  case $1 in
    --focus) focus=$2; shift ;;
    --shard) shard=$2; shift ;;
    --procs) procs=$2; shift ;;
    --timeout) timeout=$2; shift ;;
    --results) results=$2; shift ;;
    --node) target=$2; shift ;;
    --no-render) render=0 ;;
    --render-only) exec bash "$conf_dir/run.sh" --render-only ;;
    *) die "unknown option $1 (see the top of test/conformance/run-node.sh)" ;;
  esac
  shift
done
[[ $target == nodelet || $target == kubelet ]] || die "--node is nodelet (default) or kubelet, not $target"
if [[ $target == kubelet ]]; then results=${results:-$repo/.conformance/node/control}; else results=${results:-$repo/.conformance/node/results}; fi

in_scope_focus='\[NodeConformance\]'
in_scope_skip='\[Serial\]|\[Disruptive\]|\[Slow\]|\[Flaky\]|\[Feature:|\[Alpha\]|\[Beta\]'
exclusions=$(grep -v -e '^\s*#' -e '^\s*$' "$conf_dir/node-exclusions.txt" | sed 's/ | [^|]*$//' | paste -sd'|')
skip="$in_scope_skip${exclusions:+|$exclusions}"

if [[ -z ${KUBECONFIG:-} && -f $repo/.cluster/env ]]; then source "$repo/.cluster/env"; fi
[[ -n ${KUBECONFIG:-} && -n ${CLUSTER_DIR:-} ]] ||
  die "no test cluster environment (KUBECONFIG, CLUSTER_DIR): start it with 'npm run cluster:up' first"
kubectl get --raw /readyz >/dev/null 2>&1 || die "the test cluster's API server ($KUBECONFIG) does not answer"

with_cluster_libs() (
  export NODELET_CLUSTER_DIR=$CLUSTER_DIR
  for lib in common containerd kubelet; do
    # shellcheck source=/dev/null
    source "$repo/test/cluster/lib/$lib.sh"
  done
  "$@"
)
kubelet_setting() { printf '%s\n' "${!1}"; }

kubelet_taint=$(with_cluster_libs kubelet_setting KUBELET_TAINT_KEY)
node_name=${NODE_NAME:?the cluster env names no NODE_NAME} runtime_endpoint=$CONTAINER_RUNTIME_ENDPOINT
if [[ $target == kubelet ]]; then
  node_name=$(with_cluster_libs kubelet_setting KUBELET_NODE_NAME)
  runtime_endpoint=unix://$(with_cluster_libs kubelet_setting KUBELET_CONTAINERD_SOCK)
fi
[[ $(kubectl get node "$node_name" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]] ||
  die "the node $node_name is not Ready (the kubelet node: 'npm run kubelet:up' first)"

# The PodOverhead test creates the cluster-scoped RuntimeClass "test-handler" and never deletes it; a
# leftover makes the next run's create fail ("already exists"). Runs on both nodes at once still
# collide on it while both are in that test.
kubectl delete runtimeclass test-handler --ignore-not-found >/dev/null

bin=$(bash "$conf_dir/build-e2e-node.sh")
ginkgo_dir=$(bash "$conf_dir/build-e2e.sh")
bash "$repo/test/images/build-e2e-images.sh" >/dev/null
if [[ $target == kubelet ]]; then
  with_cluster_libs with_kubelet_containerd containerd_import_images "$repo/test/images/build-e2e-images.sh"
else
  with_cluster_libs containerd_import_images "$repo/test/images/build-e2e-images.sh"
fi

label=${shard:+shard-${shard/\//-of-}}
[[ -n $focus ]] && label="focus-$(printf '%s' "$focus" | sha256sum | cut -c1-8)${label:+-$label}"
label=${label:-all}
out=$results/$label
rm -rf "$out" && mkdir -p "$out"

# The API server as the suite may see it, for this run only.
proxy_pid=""
stop_proxy() {
  local status=$?
  [[ -n $proxy_pid ]] && kill "$proxy_pid" 2>/dev/null
  exit "$status"
}
trap stop_proxy EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
node --import tsx "$conf_dir/one-node-proxy.ts" --kubeconfig "$KUBECONFIG" --node "$node_name" \
  --hide-taint "$kubelet_taint" >"$out/proxy.url" 2>"$out/proxy.log" &
proxy_pid=$!
for _ in $(seq 50); do [[ -s $out/proxy.url ]] && break; sleep 0.2; done
host=$(head -1 "$out/proxy.url")
[[ $host == http://127.0.0.1:* ]] || die "one-node-proxy did not start; see $out/proxy.log"

node_flags=(
  --host="$host" --bearer-token=one-node-proxy-authenticates --node-name="$node_name"
  --start-services=false --stop-services=false --prepull-images=false
  --container-runtime-endpoint="$runtime_endpoint" --dns-domain=cluster.local
  --kubectl-path="$(command -v kubectl)" --disable-log-dump
)

say "listing the in-scope tests (dry run)"
(cd "$out" && "$bin/e2e_node.test" --ginkgo.dry-run --ginkgo.no-color --ginkgo.focus="$in_scope_focus" --ginkgo.skip="$skip" \
  --ginkgo.json-report="$out/list.json" "${node_flags[@]}" >"$out/list.log" 2>&1) ||
  die "the dry run failed; see $out/list.log"
select_args=(select "$out/list.json")
[[ -n $focus ]] && select_args+=(--focus "$focus")
[[ -n $shard ]] && select_args+=(--shard "$shard")
selected=$(node --import tsx "$conf_dir/cli.ts" "${select_args[@]}")

# shellcheck source=../cluster/lib/tree-commit.sh
source "$repo/test/cluster/lib/tree-commit.sh"
commit=$(tree_commit "$repo")
if [[ $target == nodelet && -s $repo/dist/BUILD_COMMIT ]]; then commit=$(<"$repo/dist/BUILD_COMMIT"); fi
say "running $label with $procs ginkgo procs against $node_name ($target; nodelet commit $commit; log: $out/run.log)"
started=$SECONDS
status=0
# The suite writes a kubelet drop-in dir under its working directory: the run's own.
(cd "$out" && "$ginkgo_dir/ginkgo" run --procs="$procs" --timeout="$timeout" --no-color --silence-skips --focus="$selected" \
  --output-dir="$out" --json-report=report.json --junit-report=junit.xml \
  "$bin/e2e_node.test" -- "${node_flags[@]}" --report-dir="$out" >"$out/run.log" 2>&1) || status=$?
wall=$((SECONDS - started))
jq -n --arg lbl "$label" --arg commit "$commit" --arg k "$KUBERNETES_VERSION" --arg node "$target" \
  --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --argjson wall "$wall" --argjson procs "$procs" \
  '{"label": $lbl, "node": $node, "suite": "node", "commit": $commit, "kubernetesVersion": $k, "date": $date, "wallSeconds": $wall, "procs": $procs}' \
  >"$out/meta.json"
[[ -f $out/report.json ]] || die "ginkgo wrote no report (exit $status); see $out/run.log"
say "$label on $node_name: $(node --import tsx "$conf_dir/cli.ts" summary "$out/report.json") in ${wall}s (ginkgo exit $status)"

((render)) && bash "$conf_dir/run.sh" --render-only
exit "$status"
