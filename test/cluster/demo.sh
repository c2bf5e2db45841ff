#!/usr/bin/env bash
# npm run demo: a local single-node cluster with nodelet as its node agent, and a sample workload.
# Installs what is missing, is safe to rerun, and leaves the cluster up (npm run cluster:down).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash test/cluster/up.sh
# shellcheck source=/dev/null
source .cluster/env
echo
echo "==> applying the sample workload (docs/examples/hello-nodelet.yaml)"
kubectl apply -f docs/examples/hello-nodelet.yaml
kubectl rollout status deployment/hello-nodelet --timeout=180s
echo
kubectl get nodes -o wide
echo
kubectl get pods -o wide
pod=$(kubectl get pods -l app=hello-nodelet -o jsonpath='{.items[0].metadata.name}')
uid=$(kubectl get pod "$pod" -o jsonpath='{.metadata.uid}')
cat <<TXT

nodelet is the node agent of node $NODE_NAME. Try next (after: source .cluster/env):
  kubectl get pods -o wide -w                       watch the pods
  kubectl describe pod $pod                  status, conditions and events written by nodelet
  tail -f /var/log/pods/default_${pod}_${uid}/hello/0.log   the container's log (CRI format)
  crictl pods; crictl ps                            what nodelet created in containerd
  kubectl delete pod $pod                    nodelet stops it, the Deployment makes another
  kubectl scale deployment hello-nodelet --replicas=5
  kubectl get nodeagents                            the agent's health and live settings (kubectl edit nodeagent $NODE_NAME)
  NODELET_DASHBOARD_TOKEN=secret node bin/nodelet.js dashboard --redis-url redis://127.0.0.1:16379
                                                    the queue dashboard on http://127.0.0.1:3000 (password: secret)
  tail -f .cluster/logs/nodelet.log                 the agent's own log (pino JSON)
  redis-cli -p 16379 keys 'nodelet:*'               the work queue in Redis
  npm run cluster:status / npm run cluster:down
TXT
