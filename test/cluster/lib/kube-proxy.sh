# shellcheck shell=bash disable=SC2034  # settings used by the files that source this one
# kube-proxy for the multi-node test cluster (issue 33): one per node, built from the same scratch
# Kubernetes module as the control plane (build-binaries.sh --kube-proxy). Nothing starts it yet;
# the harness will, per node, once pods of different nodes reach each other. Sourced after
# common.sh, never run.
#
# Mode: iptables. This machine has iptables v1.8.9 with the nf_tables backend (iptables-nft,
# iptables-restore, iptables-save: what the harness's own rules use, so kube-proxy's chains and the
# harness's live in the same tables), and its kernel has, built in, the netfilter pieces that mode
# needs (NF_NAT, IP_NF_NAT, NETFILTER_XT_MATCH_{COMMENT,STATISTIC,CONNTRACK,MULTIPORT,ADDRTYPE,
# PHYSDEV}, XT_TARGET_MASQUERADE, IP_NF_TARGET_REJECT, XT_MARK; /proc/config.gz). nftables mode
# would need the `nft` binary, which kube-proxy runs and this machine does not have (Debian's
# nftables package); its kernel side (NF_TABLES, NFT_NAT, NFT_CT, NFT_MASQ, NFT_NUMGEN,
# NFT_FIB_INET) is there too.
#
# What it must not do on this machine, and the setting that stops it:
# - lower its own oom_score_adj (-999 by default): the VM denies CAP_SYS_RESOURCE.   oomScoreAdj: 0
# - raise nf_conntrack_max and the conntrack TCP timeouts (host-wide sysctls).     conntrack: 0s / 0
# - set net.ipv4.conf.all.route_localnet=1 for NodePorts on 127.0.0.1.            localhostNodePorts: false
# - open NodePorts on the machine's real interfaces (`all` by default in iptables mode), or serve
#   health checks on 0.0.0.0.                                    nodePortAddresses, healthzBindAddress
#
# What the harness must add around it (not done here): a client certificate CN=system:kube-proxy
# (bootstrap RBAC binds the user system:kube-proxy to system:node-proxier); the service range's
# blackhole route (network.sh) replaced, since a local process's connect() to a blackholed ClusterIP
# fails before kube-proxy's OUTPUT DNAT sees it (pods' traffic is DNATed in PREROUTING, before
# routing); net.bridge.bridge-nf-call-iptables=1, so a pod reaching a Service whose endpoint sits
# on the same bridge is DNATed.

KUBE_PROXY_HEALTHZ_PORT=10256
KUBE_PROXY_METRICS_PORT=10249

# Writes one node's KubeProxyConfiguration to <file>. Args: file node-name node-ip bridge kubeconfig
# [metrics-port]: the node's bridge is its pods' (CNI bridge) interface, whose traffic is "local"
# (detectLocalMode BridgeInterface: no cluster-wide pod CIDR to keep in step as nodes are added).
# The metrics port differs per node when several kube-proxies share the host's loopback.
kube_proxy_config() {
  local file=$1 node=$2 node_ip=$3 bridge=$4 kubeconfig=$5 metrics_port=${6:-$KUBE_PROXY_METRICS_PORT}
  mkdir -p "$(dirname "$file")"
  cat >"$file" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $kubeconfig
hostnameOverride: $node
bindAddress: $node_ip
healthzBindAddress: $node_ip:$KUBE_PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:$metrics_port
bindAddressHardFail: true
mode: iptables
iptables:
  masqueradeAll: false
  localhostNodePorts: false
  syncPeriod: 30s
  minSyncPeriod: 1s
detectLocalMode: BridgeInterface
detectLocal:
  bridgeInterface: $bridge
# NodePorts only on the node's own address (the Node's InternalIP), never the machine's interfaces.
nodePortAddresses: [primary]
oomScoreAdj: 0
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  tcpBeLiberal: false
  udpTimeout: 0s
  udpStreamTimeout: 0s
YAML
}
