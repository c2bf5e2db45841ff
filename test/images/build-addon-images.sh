#!/usr/bin/env bash
# Builds the images of the cluster's add-ons (test/cluster/addons/) under their upstream names,
# with build.sh's reproducible layer and layout functions (sourced), cached as build.sh caches its
# images. Nothing is pulled; the binaries come from Go modules (test/cluster/build-coredns.sh).
#
#   coredns   registry.k8s.io/coredns/coredns:$COREDNS_VERSION   as CoreDNS' own Dockerfile: a
#             distroless static root (distroless.sh) with /coredns carrying the file capability
#             cap_net_bind_service=+ep (so user nonroot binds :53 with only NET_BIND_SERVICE in its
#             bounding set, as kubeadm's Deployment gives it), USER nonroot:nonroot, ENTRYPOINT
#             /coredns, EXPOSE 53 53/udp
#
# Prints one line per image: <name> <tar> <manifest digest> (the format containerd.sh imports).
#   build-addon-images.sh [--print]   --print fails instead of building
set -euo pipefail
addon_images_dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=build.sh
source "$addon_images_dir/build.sh"
# shellcheck source=distroless.sh
source "$addon_images_dir/distroless.sh"
# shellcheck source=../cluster/versions.env
source "$addon_images_dir/../cluster/versions.env"
coredns_dir=""

addon_input_hash() {
  local image=$1
  {
    input_hash "$image"
    content_hash "$addon_images_dir/build-addon-images.sh" "$addon_images_dir/distroless.sh"
    distroless_inputs
    case $image in
      coredns) echo "$COREDNS_VERSION" && content_hash "$coredns_dir/coredns" ;;
    esac
  } | sha256sum | cut -c1-16
}

recipe_coredns() {
  local rootfs=$1
  command -v setcap >/dev/null || die "setcap is required (apt-get install libcap2-bin)"
  rootfs_distroless "$rootfs"
  install -m 0755 "$coredns_dir/coredns" "$rootfs/coredns"
  setcap cap_net_bind_service=+ep "$rootfs/coredns"
  write_layout_with_caps "$2" "$rootfs" "$(jq -nc '{
      Entrypoint: ["/coredns"], User: "nonroot:nonroot", ExposedPorts: {"53/tcp": {}, "53/udp": {}}
    }')" "registry.k8s.io/coredns/coredns:$COREDNS_VERSION"
}

addon_main() {
  local only_print=0
  case ${1:-} in
    --print) only_print=1 ;;
    "") ;;
    *) die "usage: build-addon-images.sh [--print]" ;;
  esac
  command -v jq >/dev/null || die "jq is required"
  if ((only_print)); then
    coredns_dir=$(bash "$addon_images_dir/../cluster/build-coredns.sh" --print) || die "CoreDNS is not built"
  else
    coredns_dir=$(bash "$addon_images_dir/../cluster/build-coredns.sh") || die "building CoreDNS failed"
  fi
  mkdir -p "$cache"
  build_image coredns "$only_print" addon_input_hash recipe_coredns
}

addon_main "$@"
