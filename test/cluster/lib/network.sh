# shellcheck shell=bash
# The harness's network: a dummy (or ifb) interface for the node address, a bridge for pods, a firewall
# rule that keeps pod traffic on this machine, a blackhole for the service range. No masquerade.
#
# Pods may talk to each other (bridged), to the host's bridge address and to NODE_IP (both local,
# so INPUT, not FORWARD). Anything a pod sends that the host would route elsewhere is dropped.

# iptables rules, each tagged with the harness comment so teardown removes exactly these.
#  1. FORWARD: drop what arrives from the pod bridge and would leave by another interface.
#  2. INPUT:   the API server listens on every address (so both 127.0.0.1 and NODE_IP work);
#              accept it only on loopback or NODE_IP, never on the machine's real interfaces.
fw_rules() {
  local bridge
  for bridge in "$BRIDGE" "$SELF_BRIDGE"; do
    echo "FORWARD -i $bridge ! -o $bridge -m comment --comment $FW_COMMENT -j DROP"
  done
  echo "INPUT -p tcp --dport $APISERVER_PORT ! -i lo ! -d $NODE_IP -m comment --comment $FW_COMMENT -j DROP"
}

network_up() {
  local rule ipt
  if ! ip link show "$HOST_IF" >/dev/null 2>&1; then
    # Some kernels (this VM's) are built without the dummy driver; an ifb device is the nearest
    # stand-in: a link with no peer and no ARP whose address is simply local.
    ip link add "$HOST_IF" type dummy 2>/dev/null || ip link add "$HOST_IF" type ifb
  fi
  ip addr replace "$NODE_IP/32" dev "$HOST_IF"
  ip link set "$HOST_IF" up

  # The CNI bridge plugin would create the bridge on the first pod; creating it here gives the
  # firewall rule and the host address a stable home before any pod exists. The second bridge is
  # the self-hosted node's (its in-pod containerd's CNI config names it).
  bridge_up "$BRIDGE" "$POD_GATEWAY"
  bridge_up "$SELF_BRIDGE" "$SELF_POD_GATEWAY"

  for ipt in iptables ip6tables; do
    command -v "$ipt" >/dev/null || continue
    while read -r rule; do
      [[ $ipt == ip6tables && $rule == INPUT* ]] && continue # NODE_IP is IPv4
      # shellcheck disable=SC2086  # the rule is a list of words
      if ! "$ipt" -C $rule 2>/dev/null; then "$ipt" -I $rule; fi
    done < <(fw_rules)
  done
  ip route replace blackhole "$SERVICE_CIDR"
  write_cni_config "$CNI_CONF_DIR/10-nodelet.conflist" "$CNI_IPAM_DIR" "$CNI_NETWORK" "$BRIDGE" "$POD_CIDR" "$POD_GATEWAY"
}

# Usage: bridge_up NAME GATEWAY_IP (a /24).
bridge_up() {
  if ! ip link show "$1" >/dev/null 2>&1; then
    ip link add "$1" type bridge
  fi
  ip addr replace "$2/24" dev "$1"
  ip link set "$1" up
}

# Removes a bridge and the veths still attached to it. Usage: bridge_down NAME
bridge_down() {
  local veth
  ip link show "$1" >/dev/null 2>&1 || return 0
  for veth in $(ip -o link show master "$1" 2>/dev/null | awk -F': ' '{ print $2 }' | cut -d@ -f1); do
    ip link del "$veth" 2>/dev/null || true
  done
  ip link del "$1"
}

# One conflist: bridge with host-local IPAM (state under the cluster dir), plus loopback.
# Usage: write_cni_config CONF_FILE IPAM_DIR NETWORK BRIDGE SUBNET GATEWAY (nodelet's node and the
# kubelet's node each write their own).
write_cni_config() {
  local conf=$1 ipam_dir=$2 network=$3 bridge=$4 subnet=$5 gw=$6
  mkdir -p "$(dirname "$conf")" "$ipam_dir"
  jq -n --arg name "$network" --arg bridge "$bridge" --arg subnet "$subnet" \
    --arg gw "$gw" --arg ipam "$ipam_dir" '{
      cniVersion: "1.0.0", name: $name,
      plugins: [
        {type: "bridge", bridge: $bridge, isGateway: true, ipMasq: false, hairpinMode: true,
         ipam: {type: "host-local", dataDir: $ipam, ranges: [[{subnet: $subnet, gateway: $gw}]],
                routes: [{dst: "0.0.0.0/0"}]}},
        {type: "loopback"}
      ]
    }' >"$conf"
}

# Deletes the network namespaces of our pods that containerd did not (after a crash). A namespace
# is ours if it sits under our containerd state dir, or if it is a /var/run/netns/cni-* whose
# interfaces hold an address from one of the pod ranges.
remove_pod_netns() {
  local ns
  for ns in /var/run/netns/cni-*; do
    [[ -e $ns ]] || continue
    if ip netns exec "$(basename "$ns")" ip -o -4 addr show 2>/dev/null | grep -qE " (${POD_CIDR%.*}|${SELF_POD_CIDR%.*})\."; then
      log "removing leftover network namespace $ns"
      umount "$ns" 2>/dev/null || umount -l "$ns" 2>/dev/null || true
      rm -f "$ns"
    fi
  done
}

network_down() {
  local rule ipt
  remove_pod_netns
  bridge_down "$BRIDGE"
  bridge_down "$SELF_BRIDGE"
  if ip link show "$HOST_IF" >/dev/null 2>&1; then ip link del "$HOST_IF"; fi
  # Every rule with our comment, whatever its other words (older versions of this file included).
  for ipt in iptables ip6tables; do
    command -v "$ipt" >/dev/null || continue
    # No rule of ours (a clean machine, a second down) is not an error: grep's status is ignored.
    { "$ipt" -S 2>/dev/null | grep -F -- "--comment $FW_COMMENT" || true; } | while read -r rule; do
      # shellcheck disable=SC2086
      "$ipt" ${rule/-A /-D } || true
    done
  done
  ip route del blackhole "$SERVICE_CIDR" 2>/dev/null || true
}

network_status() {
  local up=down
  ip link show "$BRIDGE" >/dev/null 2>&1 && ip link show "$SELF_BRIDGE" >/dev/null 2>&1 &&
    ip link show "$HOST_IF" >/dev/null 2>&1 && up=up
  printf '%-24s %s (%s on %s, pods %s on %s, self-hosted pods %s on %s)\n' network "$up" "$NODE_IP" "$HOST_IF" \
    "$POD_CIDR" "$BRIDGE" "$SELF_POD_CIDR" "$SELF_BRIDGE"
}
