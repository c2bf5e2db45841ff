#!/usr/bin/env bash
# npm run test:rotation: the chart-installed agent through the rotation and expiry of its client and
# serving certificates. The cluster's signer must issue short certificates, which only a fresh
# controller-manager takes: a running test cluster is taken down first, the cluster comes up with
# NODELET_CLUSTER_SIGNING_DURATION=10m (control-plane.sh), the self-hosted suite runs with its
# rotation step (NODELET_SELFHOSTED_ROTATION=1: it waits for both renewals and for the first
# certificates to expire, about 10 minutes), and the cluster is taken down again.
set -uo pipefail
cd "$(dirname "$0")/.."
bash test/cluster/down.sh >/dev/null 2>&1 || true
NODELET_CLUSTER_SIGNING_DURATION=10m bash test/cluster/up.sh || exit 1
NODELET_SUITE_TIMEOUT_SELFHOSTED=${NODELET_SUITE_TIMEOUT_SELFHOSTED:-30m} NODELET_SELFHOSTED_ROTATION=1 bash test/run-suite.sh selfhosted
status=$?
bash test/cluster/down.sh >/dev/null 2>&1 || true
exit "$status"
