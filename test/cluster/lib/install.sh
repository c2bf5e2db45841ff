# shellcheck shell=bash
# Installs what the harness needs and is missing: Debian packages, node_modules, the cluster's
# binaries (built from Go modules, cached under ~/.cache/nodelet), the container runtime. Fast when
# all are there.

# chromium: the headless browser of the dashboard e2e test (driven by playwright-core; never a
# downloaded browser build). bash-static, make, patch, bzip2, xz-utils, mmdebstrap: the upstream
# e2e suite's test images (test/images/build-e2e-images.sh, build-busybox.sh; npm run conformance;
# mmdebstrap also builds nodelet's own image). dbus-daemon: the node's test system bus (logind.sh). criu: what
# runc checkpoints a container with (the node server's /checkpoint; test/e2e/checkpoint.test.ts).
DEBIAN_PACKAGES=(containernetworking-plugins redis-server iptables busybox-static
  docker-registry gcc libc6-dev jq apache2-utils openssl iproute2 curl util-linux procps
  chromium bash-static make patch bzip2 xz-utils mmdebstrap criu dbus-daemon)

install_packages() {
  local missing=() pkg
  for pkg in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  ((${#missing[@]} == 0)) && return 0
  log "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  # The packages' own services (a system containerd, redis, registry) are of no use here: keep
  # them from starting, the harness runs its own instances.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d.nodelet
  chmod +x /usr/sbin/policy-rc.d.nodelet
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then ln -s policy-rc.d.nodelet /usr/sbin/policy-rc.d; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [[ $(readlink /usr/sbin/policy-rc.d 2>/dev/null) == policy-rc.d.nodelet ]]; then rm -f /usr/sbin/policy-rc.d; fi
  rm -f /usr/sbin/policy-rc.d.nodelet
}

install_node_modules() {
  [[ -d $REPO_DIR/node_modules ]] && return 0
  log "installing node_modules (npm ci: exactly the lock)"
  (cd "$REPO_DIR" && npm ci --no-audit --no-fund &&
    sha256sum package-lock.json | cut -d' ' -f1 >node_modules/.nodelet-lock.sha256)
}

install_binaries() {
  mkdir -p "$BIN_DIR"
  bash "$HARNESS_DIR/build-binaries.sh" --link "$BIN_DIR"
}

# containerd 2 (containerd, its runc shim, ctr) and runc, built from their Go modules at
# image/versions.env's pins by image/build.sh --runtime-bin: the runtime of nodelet's image, so the
# cluster and the image run the same binaries. Copied into BIN_DIR (not linked: a rebuild of the
# cache must not take them from under a running containerd or shim); a changed one is a new file.
install_runtime() {
  local built name
  built=$(bash "$REPO_DIR/image/build.sh" --runtime-bin) || die "could not build the container runtime (image/build.sh --runtime-bin)"
  mkdir -p "$BIN_DIR"
  for name in containerd containerd-shim-runc-v2 ctr runc; do
    cmp -s "$built/$name" "$BIN_DIR/$name" && continue
    cp "$built/$name" "$BIN_DIR/.$name.new" && mv -f "$BIN_DIR/.$name.new" "$BIN_DIR/$name"
  done
}

install_all() {
  install_packages
  install_node_modules
  install_binaries
  install_runtime
}
