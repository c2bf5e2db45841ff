# shellcheck shell=bash
# A root as gcr.io/distroless/static-debian12's, for images whose upstream is built on it (CoreDNS,
# etcd): no shell, no package manager; root, nobody and nonroot (65532) in /etc/passwd and
# /etc/group, a home for nonroot, /tmp (1777), and the CA bundle Debian's ca-certificates generated
# on this machine (distroless copies Debian's). Sourced by build-addon-images.sh and
# build-e2e-images.sh (after build.sh); the callers' input hashes include this file and
# distroless_inputs.

distroless_ca_bundle=/etc/ssl/certs/ca-certificates.crt

# What a distroless root's contents follow besides this file.
distroless_inputs() {
  content_hash "$distroless_ca_bundle"
}

rootfs_distroless() {
  local rootfs=$1
  [[ -f $distroless_ca_bundle ]] || die "$distroless_ca_bundle is missing (apt-get install ca-certificates)"
  mkdir -p "$rootfs/etc/ssl/certs" "$rootfs/tmp" "$rootfs/root" "$rootfs/home/nonroot"
  chmod 1777 "$rootfs/tmp"
  chmod 0700 "$rootfs/root" "$rootfs/home/nonroot"
  install -m 0644 "$distroless_ca_bundle" "$rootfs/etc/ssl/certs/ca-certificates.crt"
  printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
    'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >"$rootfs/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nobody:x:65534:' 'tty:x:5:' 'staff:x:50:' 'nonroot:x:65532:' >"$rootfs/etc/group"
  printf '%s\n' 'hosts: files dns' >"$rootfs/etc/nsswitch.conf"
  chown 65532:65532 "$rootfs/home/nonroot"
}

# write_layout for a root whose files carry capabilities (security.capability, as CoreDNS' image
# gives /coredns cap_net_bind_service) and their own owners (root's, but nonroot's home: 65532):
# build.sh's layer is GNU tar format with every file root's, so this one is POSIX (pax) with the
# capability in a pax header, and without the access and change times that would make the layer
# differ from one build to the next. Args as write_layout's.
write_layout_with_caps() {
  local layout=$1 rootfs=$2 process=$3 tmp diff_id blob
  shift 3
  tmp=$(mktemp -d)
  tar --sort=name --mtime=@0 --numeric-owner --format=posix --xattrs --xattrs-include=security.capability \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -C "$rootfs" -cf "$tmp/layer.tar" .
  diff_id="sha256:$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)"
  gzip -n -9 "$tmp/layer.tar"
  blob=$(put_blob "$layout" "$tmp/layer.tar.gz")
  rm -rf "$tmp"
  write_image "$layout" "$diff_id" "${blob% *}" "${blob#* }" "$process" "$@"
}
