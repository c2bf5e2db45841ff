# shellcheck shell=bash
# dpkg's path filters of a Debian root filesystem built like debian:bookworm-slim: no man pages,
# docs (copyright files kept), locales or info. Sourced by image/build.sh (nodelet's base layer)
# and test/images/build-e2e-images.sh (the roots of glibc-dns-testing and nginx):
# mmdebstrap "${slim_dpkg_opts[@]}".
slim_dpkg_opts=(--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/info/*')
