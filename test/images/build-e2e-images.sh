#!/usr/bin/env bash
# Builds the images the upstream e2e suite (npm run conformance) runs, under their upstream names,
# with build.sh's reproducible layer and layout functions (sourced, not copied). Nothing is pulled:
#
# All but the Debian-rooted ones (glibc-dns-testing, nginx) have the busybox root (every applet
# also in /bin) with Debian's bash-static as /bin/bash (see rootfs_e2e_base). Downloads: Debian
# packages only (apt-get download, cached under $NODELET_CACHE/debs; busybox's source package,
# for build-busybox.sh).
#   e2e-agnhost     registry.k8s.io/e2e-test-images/agnhost:2.66.1
#                   /agnhost built from k8s.io/kubernetes/test/images/agnhost (build-e2e.sh)
#                   and a `curl` for plain GETs over busybox wget (lifecycle-hook tests run it);
#                   Debian's netcat-openbsd as nc (UDP), as upstream's Dockerfile installs it, and
#                   Debian's dynamic busybox (ash runs PATH's nc, not its applet: see
#                   rootfs_agnhost_base), the e2e busybox for the applets it lacks (nmeter);
#                   user-defined-in-image (1000) in group-defined-in-image (50000) as upstream
#   e2e-busybox     registry.k8s.io/e2e-test-images/busybox:1.37.0-2   the busybox root, whose busybox
#                   is Debian's static one built with upstream ash's environment (build-busybox.sh)
#   e2e-agnhost-old registry.k8s.io/e2e-test-images/agnhost:2.55       agnhost's layer, its own label
#   e2e-busybox-old registry.k8s.io/e2e-test-images/busybox:1.36.1-1   busybox's layer, its own label
#   e2e-pause       registry.k8s.io/pause:3.10.2                       /pause from pause.c
#   e2e-nonroot     registry.k8s.io/e2e-test-images/nonroot:1.5        busybox root, USER 1234
#   e2e-nonewprivs  registry.k8s.io/e2e-test-images/nonewprivs:1.4     busybox root + setuid
#                   /usr/local/bin/nnp (k8s.io/kubernetes/test/images/nonewprivs)
#   e2e-glibc-dns-testing  registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1   as upstream's
#                   Dockerfile: debian:bookworm-slim (here Debian 12 minbase from mmdebstrap, the
#                   slim image's dpkg filters) with dnsutils, and /coredns (upstream adds the v1.5.0
#                   release archive; here CoreDNS $COREDNS_VERSION from its Go module,
#                   build-coredns.sh). Its glibc `hostname -f` and dig are what the
#                   hostnameOverride and DNS tests run.
#   e2e-nginx       registry.k8s.io/e2e-test-images/nginx:1.27.0-2   upstream mirrors the official
#                   nginx:1.27-alpine; here Debian 12's nginx (1.22.1, not 1.27) on a slim Debian 12
#                   root (as glibc-dns-testing's, with /usr merged by mmdebstrap's hook: no usrmerge,
#                   no perl) set up as the official image: its nginx.conf and default server
#                   (test/images/nginx/), the welcome page at / and /50x.html, workers as nginx
#                   (101), logs linked to stdout and stderr, /var/run/nginx.pid (read by a node
#                   test); ENTRYPOINT /docker-entrypoint.sh (ours: only the IPv6 listen of the
#                   official one), CMD nginx -g 'daemon off;', port 80, STOPSIGNAL SIGQUIT
#   e2e-nginx-new   registry.k8s.io/e2e-test-images/nginx:1.28.0-2   (upstream: nginx:1.28-alpine)
#                   e2e-nginx's layer and config with its own image_version label: another image ID
#                   and digest, as upstream's two differ (the apply tests run it; none compares the
#                   two)
#   e2e-kitten      registry.k8s.io/e2e-test-images/kitten:1.8     as upstream's Dockerfile (FROM
#   e2e-nautilus    registry.k8s.io/e2e-test-images/nautilus:1.8   agnhost, COPY html/<x>.jpg and
#                   data.json, CMD test-webserver): e2e-agnhost's layer and a second one with the two
#                   files from the Kubernetes module (test/images/{kitten,nautilus}/html). Kubectl's
#                   Update Demo tests run nautilus; the ImageVolume test mounts kitten (and reads
#                   "Alpine Linux" in its /etc/os-release, which this root has not: see
#                   docs/e2e-images.md)
#   e2e-sample-apiserver  registry.k8s.io/e2e-test-images/sample-apiserver:1.29.2   upstream: alpine
#                   with /sample-apiserver built from k8s.io/sample-apiserver; here the busybox root
#                   with k8s.io/sample-apiserver of the cluster's release (v0.<minor>.<patch>: the
#                   proxy has no v0.29.x), build-binaries.sh --sample-apiserver. The aggregator
#                   conformance test runs it
#   e2e-etcd        registry.k8s.io/etcd:3.7.0-0   upstream: distroless with /usr/local/bin/etcd
#                   (and etcdctl, etcdutl, migrate); here a distroless-like root (distroless.sh) with
#                   etcd $E2E_ETCD_VERSION from go.etcd.io/etcd/server/v3 (build-binaries.sh
#                   --e2e-etcd) at /usr/local/bin/etcd, which the aggregator test runs beside it
#
# Prints one line per image: <name> <tar> <manifest digest> (the format containerd.sh imports).
#   build-e2e-images.sh [--print]   --print fails instead of building
# Downloads besides: the Debian packages of the Debian roots (mmdebstrap, from the machine's apt
# sources) and CoreDNS' modules from the Go module proxy.
set -euo pipefail
e2e_images_dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=build.sh
source "$e2e_images_dir/build.sh"
bash_bin=${BASH_STATIC_BIN:-/bin/bash-static}
# shellcheck source=../cluster/versions.env
source "$e2e_images_dir/../cluster/versions.env"
e2e_bin_dir=""
coredns_dir=""
apt_sources=${NODELET_APT_SOURCES:-/etc/apt/sources.list.d/debian.sources}
# debian:bookworm-slim's dpkg filters (slim_dpkg_opts), shared with nodelet's own image.
# shellcheck source=../../image/debian-slim.sh
source "$e2e_images_dir/../../image/debian-slim.sh"
# shellcheck source=distroless.sh
source "$e2e_images_dir/distroless.sh"
sample_apiserver_dir=""
e2e_etcd_dir=""

e2e_input_hash() {
  local image=$1
  {
    input_hash "${image#e2e-}"
    content_hash "$e2e_images_dir/build-e2e-images.sh" "$e2e_images_dir/e2e-curl.sh"
    case $image in
      e2e-agnhost)
        content_hash "$e2e_bin_dir/agnhost" "$bash_bin" "$busybox_bin" "$(agnhost_source)"/porter/localhost.*
        deb_versions "${agnhost_packages[@]}"
        ;;
      e2e-nonewprivs) content_hash "$e2e_bin_dir/nnp" "$bash_bin" "$busybox_bin" ;;
      e2e-busybox | e2e-nonroot) content_hash "$bash_bin" "$busybox_bin" ;;
      e2e-glibc-dns-testing) content_hash "$coredns_dir/coredns" && debian_root_inputs ;;
      e2e-nginx) content_hash "$nginx_dir"/* && debian_root_inputs ;;
      e2e-nginx-new) jq -r '.manifests[0].digest' "$(e2e_layout e2e-nginx)/index.json" ;;
      e2e-agnhost-old | e2e-busybox-old) jq -r '.manifests[0].digest' "$(e2e_layout "${image%-old}")/index.json" ;;
      e2e-kitten | e2e-nautilus)
        jq -r '.manifests[0].digest' "$(e2e_layout e2e-agnhost)/index.json"
        content_hash "$(agnhost_source)/../${image#e2e-}/html"/*
        ;;
      e2e-sample-apiserver) content_hash "$sample_apiserver_dir/sample-apiserver" "$bash_bin" "$busybox_bin" ;;
      e2e-etcd) content_hash "$e2e_etcd_dir/etcd" "$e2e_images_dir/distroless.sh" && distroless_inputs ;;
    esac
  } | sha256sum | cut -c1-16
}

# What a Debian root's contents follow besides the script: the apt sources, the dpkg filters and
# mmdebstrap's version (not the mirror's contents: remove the cache entry to pick up updates).
debian_root_inputs() {
  content_hash "$apt_sources" "$e2e_images_dir/../../image/debian-slim.sh"
  dpkg-query -W -f='${Package} ${Version}\n' mmdebstrap
}

# The layout directory of an e2e image in the cache (where build_image puts it).
e2e_layout() {
  echo "$cache/$1-$(e2e_input_hash "$1")/layout"
}

# The busybox root with bash-static as /bin/bash. /bin/sh stays busybox ash, as upstream (tests
# compare ash's error messages, e.g. "can't create /file: Read-only file system"). Its busybox is
# build-busybox.sh's: Debian's busybox ash drops environment variables whose names are not shell
# identifiers (`data-1` from envFrom) before `sh -c env` prints them. Upstream's ash keeps them
# since 1.28 (commit 9c143ce52); Debian reverts that commit (debian/patches/revert-9c143ce52…,
# still in trixie's 1:1.37.0-6), so build-busybox.sh builds Debian's source without the revert.
# Upstream's busybox image has every applet in /bin (tests run /bin/sysctl); Debian's list puts
# some in /sbin and /usr/bin: each applet gets a /bin link as well.
rootfs_e2e_base() {
  local rootfs=$1 applet
  [[ -x $bash_bin ]] || die "$bash_bin is missing (apt-get install bash-static)"
  rootfs_busybox "$rootfs"
  while read -r applet; do
    [[ -e $rootfs/bin/${applet##*/} || -L $rootfs/bin/${applet##*/} ]] || ln -s /bin/busybox "$rootfs/bin/${applet##*/}"
  done < <("$busybox_bin" --list-full)
  install -m 0755 "$bash_bin" "$rootfs/bin/bash"
}

# Upstream's agnhost is Alpine with netcat-openbsd: its /bin/sh is a busybox ash that runs the
# commands it finds in PATH, so `nc` is OpenBSD's (`nc -u`: the UDP checks of the networking
# tests). Debian's busybox-static is built with FEATURE_SH_STANDALONE: its ash runs its own
# applet for any name it has (its nc has no -u) whatever PATH holds. So agnhost gets Debian's
# dynamic `busybox` package (same version, built without SH_STANDALONE) and netcat-openbsd as nc,
# with the loader and the libraries they link from their Debian packages (found by their ELF
# dynamic sections: only those files are copied).
agnhost_packages=(busybox netcat-openbsd libbsd0 libmd0 libc6)
deb_cache=$(dirname "$cache")/debs

# "<package> <version>" of the candidate apt would install (from the local lists: no download),
# so the image's hash follows the packages' versions.
deb_versions() {
  local pkg version
  for pkg in "$@"; do
    version=$(apt-cache policy "$pkg" | awk '$1 == "Candidate:" { print $2 }')
    [[ -n $version && $version != "(none)" ]] || die "apt knows no candidate of $pkg (apt-get update?)"
    echo "$pkg $version"
  done
}

# Downloads (once: cached per package and version) and unpacks the packages into <dir>.
unpack_debs() {
  local dir=$1 pkg version deb_dir
  shift
  while read -r pkg version; do
    deb_dir=$deb_cache/$pkg/$version
    if ! compgen -G "$deb_dir/*.deb" >/dev/null; then
      rm -rf "$deb_dir.tmp" && mkdir -p "$deb_dir.tmp"
      (cd "$deb_dir.tmp" && apt-get -qq -o APT::Sandbox::User=root download "$pkg=$version") ||
        die "apt-get download $pkg=$version failed"
      rm -rf "$deb_dir" && mv "$deb_dir.tmp" "$deb_dir"
    fi
    dpkg-deb -x "$deb_dir"/*.deb "$dir"
  done < <(deb_versions "$@")
}

# Copies the shared libraries an ELF file of <tree> needs, and theirs, from <tree>'s multiarch
# library dirs (/lib/<triplet>, /usr/lib/<triplet>: ld.so's default search) into the same place
# in <rootfs> (links resolved: one file per name).
copy_needed_libs() {
  local tree=$1 rootfs=$2 elf=$3 triplet lib dir found
  triplet=$(gcc -print-multiarch)
  while read -r lib; do
    found=""
    for dir in lib/$triplet usr/lib/$triplet; do
      if [[ -e $tree/$dir/$lib ]]; then found=$dir/$lib && break; fi
    done
    [[ -n $found ]] || die "$lib (needed by ${elf#"$tree"}) is in none of ${agnhost_packages[*]}"
    [[ -e $rootfs/$found ]] && continue
    install -D -m 0755 "$(readlink -f "$tree/$found")" "$rootfs/$found"
    copy_needed_libs "$tree" "$rootfs" "$tree/$found"
  done < <(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
}

# The dynamic loader an ELF file of <tree> names, into <rootfs> (its multiarch dir, and a link at
# the path the header names when that differs, e.g. /lib64/ld-linux-x86-64.so.2).
copy_interpreter() {
  local tree=$1 rootfs=$2 elf=$3 interp libdir
  interp=$(readelf -l "$elf" | sed -n 's/.*interpreter: \(.*\)\]$/\1/p')
  libdir=/lib/$(gcc -print-multiarch)
  install -D -m 0755 "$(readlink -f "$tree$libdir/${interp##*/}")" "$rootfs$libdir/${interp##*/}"
  if [[ $interp != "$libdir/${interp##*/}" ]]; then
    mkdir -p "$rootfs${interp%/*}" && ln -sfn "$libdir/${interp##*/}" "$rootfs$interp"
  fi
}

# The e2e base root with Debian's dynamic busybox as /bin/busybox (applet links from its own
# list), nc.openbsd at /bin/nc.openbsd with /bin/nc and /usr/bin/nc (busybox's nc links replaced),
# and what both load.
# Alpine's busybox has applets Debian's dynamic one lacks (nmeter, whose timestamps the node e2e
# container lifecycle tests log from agnhost containers too): the e2e busybox (static, built by
# build-busybox.sh) answers for those, as /bin/busybox-e2e; a static busybox run under an
# applet's name runs that applet, and the dynamic ash still finds it through PATH.
add_missing_applets() {
  local rootfs=$1 applet
  install -m 0755 "$busybox_bin" "$rootfs/bin/busybox-e2e"
  while read -r applet; do
    [[ -e $rootfs/bin/${applet##*/} || -L $rootfs/bin/${applet##*/} ]] || ln -s /bin/busybox-e2e "$rootfs/bin/${applet##*/}"
  done < <("$busybox_bin" --list-full)
}

rootfs_agnhost_base() {
  local rootfs=$1 tree elf
  tree=$(mktemp -d)
  unpack_debs "$tree" "${agnhost_packages[@]}"
  busybox_bin=$tree/bin/busybox rootfs_e2e_base "$rootfs"
  add_missing_applets "$rootfs"
  install -m 0755 "$tree/bin/nc.openbsd" "$rootfs/bin/nc.openbsd"
  ln -sfn nc.openbsd "$rootfs/bin/nc"
  ln -sfn /bin/nc.openbsd "$rootfs/usr/bin/nc"
  for elf in bin/busybox bin/nc.openbsd; do
    copy_needed_libs "$tree" "$rootfs" "$tree/$elf"
    copy_interpreter "$tree" "$rootfs" "$tree/$elf"
  done
  rm -rf "$tree"
}

# The agnhost package's source in the Go module cache (build-e2e.sh downloaded it).
agnhost_source() {
  echo "$(go env GOMODCACHE)/k8s.io/kubernetes@$KUBERNETES_VERSION/test/images/agnhost"
}

recipe_e2e_agnhost() {
  local rootfs=$1
  rootfs_agnhost_base "$rootfs"
  install -m 0755 "$e2e_bin_dir/agnhost" "$rootfs/agnhost"
  # As upstream's Dockerfile: porter's test certificate at / (netexec --tls-cert-file /localhost.crt).
  install -m 0644 "$(agnhost_source)/porter/localhost.crt" "$(agnhost_source)/porter/localhost.key" "$rootfs/"
  ln -s agnhost "$rootfs/agnhost-2"
  install -D -m 0755 "$e2e_images_dir/e2e-curl.sh" "$rootfs/usr/bin/curl"
  mkdir -p "$rootfs/uploads" "$rootfs/home/user-defined-in-image"
  echo 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh' >>"$rootfs/etc/passwd"
  printf 'user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n' \
    >>"$rootfs/etc/group"
  write_layout "$2" "$rootfs" '{"Entrypoint":["/agnhost"],"Cmd":["pause"]}' \
    registry.k8s.io/e2e-test-images/agnhost:2.66.1
}

# The older tags the suite names (agnhost:2.55, busybox:1.36.1-1) are their newer image's layer and
# config with a label of their own: another image ID, as upstream's are. One image under two tags
# would make containerd report a container's image by its first tag (a container switched to
# busybox:1.37.0-2 reported as busybox:1.36.1-1), which the kubelet copies into the pod status.
recipe_e2e_agnhost_old() {
  relabel_image "$(e2e_layout e2e-agnhost)" "$2" '{"image_version":"2.55"}' \
    registry.k8s.io/e2e-test-images/agnhost:2.55
}

recipe_e2e_busybox() {
  rootfs_e2e_base "$1"
  write_layout "$2" "$1" '{"Cmd":["sh"]}' registry.k8s.io/e2e-test-images/busybox:1.37.0-2
}

recipe_e2e_busybox_old() {
  relabel_image "$(e2e_layout e2e-busybox)" "$2" '{"image_version":"1.36.1-1"}' \
    registry.k8s.io/e2e-test-images/busybox:1.36.1-1
}

recipe_e2e_pause() {
  rootfs_pause "$1"
  write_layout "$2" "$1" '{"Entrypoint":["/pause"],"User":"65535:65535"}' registry.k8s.io/pause:3.10.2
}

recipe_e2e_nonroot() {
  rootfs_e2e_base "$1"
  write_layout "$2" "$1" '{"Cmd":["sh"],"User":"1234"}' registry.k8s.io/e2e-test-images/nonroot:1.5
}

recipe_e2e_nonewprivs() {
  rootfs_e2e_base "$1"
  install -D -m 4755 "$e2e_bin_dir/nnp" "$1/usr/local/bin/nnp"
  write_layout "$2" "$1" '{"Cmd":["nnp"]}' registry.k8s.io/e2e-test-images/nonewprivs:1.4
}

# A Debian 12 root as debian:bookworm-slim's: minbase from mmdebstrap with the slim image's dpkg
# filters and <packages> (comma-separated) from the machine's apt sources; further mmdebstrap
# options after them. It keeps Debian's owners; its recipe leaves device nodes out of the layer
# (the runtime's to make). mmdebstrap's output (its hooks run apt and dpkg aloud) is shown only
# when it fails.
debian_slim_root() {
  local rootfs=$1 packages=$2 out
  shift 2
  command -v mmdebstrap >/dev/null || die "mmdebstrap is required (apt-get install mmdebstrap)"
  rmdir "$rootfs"
  out=$(mktemp)
  if ! nice -n 10 mmdebstrap --quiet --variant=minbase --include="$packages" "${slim_dpkg_opts[@]}" "$@" \
    bookworm "$rootfs" "$apt_sources" >"$out" 2>&1; then
    cat "$out" >&2 && rm -f "$out"
    die "mmdebstrap of a root with $packages failed"
  fi
  rm -f "$out"
}

# mmdebstrap's merged-/usr hook: /usr merged by links, as in debian:bookworm-slim, instead of by
# the usrmerge package that Debian 12's init-system-helpers otherwise pulls in, and perl with it
# (50 MB). glibc-dns-testing's root is still built without it, as before.
merged_usr_hook=(--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr)

# Upstream's Dockerfile: FROM debian:bookworm-slim, apt-get install dnsutils, /coredns.
recipe_e2e_glibc_dns_testing() {
  local rootfs=$1 layer_tar_opts=(--exclude='./dev/*')
  debian_slim_root "$rootfs" dnsutils
  install -m 0755 "$coredns_dir/coredns" "$rootfs/coredns"
  write_layout "$2" "$rootfs" '{"Cmd":["bash"]}' registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1
}

nginx_dir=$e2e_images_dir/nginx

# Upstream's nginx and nginx-new images mirror the official nginx:1.27-alpine and nginx:1.28-alpine.
# Here Debian's nginx on a slim Debian 12 root, set up as the official image: its nginx.conf and
# default server (nginx/), workers as nginx (101:101), the welcome page and /50x.html in
# /usr/share/nginx/html, the logs linked to stdout and stderr, /docker-entrypoint.sh.
rootfs_nginx() {
  local rootfs=$1
  debian_slim_root "$rootfs" nginx "${merged_usr_hook[@]}"
  chroot "$rootfs" groupadd --system --gid 101 nginx
  chroot "$rootfs" useradd --system --uid 101 --gid nginx --no-create-home --home-dir /var/cache/nginx \
    --shell /sbin/nologin --comment nginx nginx
  install -m 0644 "$nginx_dir/nginx.conf" "$rootfs/etc/nginx/nginx.conf"
  install -m 0644 "$nginx_dir/default.conf" "$rootfs/etc/nginx/conf.d/default.conf"
  install -m 0644 "$nginx_dir/50x.html" "$rootfs/usr/share/nginx/html/50x.html"
  install -m 0755 "$nginx_dir/docker-entrypoint.sh" "$rootfs/docker-entrypoint.sh"
  ln -sfn /dev/stdout "$rootfs/var/log/nginx/access.log"
  ln -sfn /dev/stderr "$rootfs/var/log/nginx/error.log"
}

# The official image's config (entrypoint, command, port, stop signal; NGINX_VERSION is Debian's
# nginx version) with the tag as a label, as upstream's httpd and httpd-new images carried theirs.
nginx_config() {
  local tag=$1 version=$2
  jq -nc --arg path "$image_path_env" --arg version "$version" --arg tag "$tag" '{
    Entrypoint: ["/docker-entrypoint.sh"], Cmd: ["nginx", "-g", "daemon off;"],
    ExposedPorts: {"80/tcp": {}}, StopSignal: "SIGQUIT",
    Env: [$path, "NGINX_VERSION=\($version)"], Labels: {image_version: $tag}
  }'
}

recipe_e2e_nginx() {
  local rootfs=$1 layer_tar_opts=(--exclude='./dev/*') version
  rootfs_nginx "$rootfs"
  version=$(dpkg-query --admindir="$rootfs/var/lib/dpkg" -W -f='${source:Upstream-Version}' nginx)
  write_layout "$2" "$rootfs" "$(nginx_config 1.27.0-2 "$version")" \
    registry.k8s.io/e2e-test-images/nginx:1.27.0-2
}

# nginx:1.28.0-2 (upstream: the official image one nginx release later) is nginx:1.27.0-2's layer
# and config with its own tag label: another image ID and digest, as upstream's two have, without
# a second root.
recipe_e2e_nginx_new() {
  relabel_image "$(e2e_layout e2e-nginx)" "$2" '{"image_version":"1.28.0-2"}' \
    registry.k8s.io/e2e-test-images/nginx:1.28.0-2
}

# Upstream's kitten and nautilus: FROM agnhost, the picture and data.json in its working dir (/),
# CMD test-webserver (agnhost's, serving / on port 80).
recipe_e2e_picture() {
  local name=$1 rootfs=$2 layout=$3 html
  html=$(agnhost_source)/../$name/html
  install -m 0644 "$html/$name.jpg" "$html/data.json" "$rootfs/"
  append_layer "$(e2e_layout e2e-agnhost)" "$layout" "$rootfs" '{"Cmd":["test-webserver"]}' \
    "registry.k8s.io/e2e-test-images/$name:1.8"
}
recipe_e2e_kitten() { recipe_e2e_picture kitten "$@"; }
recipe_e2e_nautilus() { recipe_e2e_picture nautilus "$@"; }

# Upstream: FROM alpine, ADD sample-apiserver, ENTRYPOINT /sample-apiserver (it serves on 443).
recipe_e2e_sample_apiserver() {
  rootfs_e2e_base "$1"
  install -m 0755 "$sample_apiserver_dir/sample-apiserver" "$1/sample-apiserver"
  write_layout "$2" "$1" '{"Entrypoint":["/sample-apiserver"]}' \
    registry.k8s.io/e2e-test-images/sample-apiserver:1.29.2
}

# Upstream: distroless with etcd in /usr/local/bin; the aggregator test gives the command.
recipe_e2e_etcd() {
  rootfs_distroless "$1"
  install -D -m 0755 "$e2e_etcd_dir/etcd" "$1/usr/local/bin/etcd"
  write_layout_with_caps "$2" "$1" '{"Cmd":["/usr/local/bin/etcd"]}' registry.k8s.io/etcd:3.7.0-0
}

# A layout of the image in <src> (a layout) with one more layer on top, <rootfs>'s files, as a
# Dockerfile's FROM <src> + COPY: <src>'s layers shared as they are, its config with <patch> (JSON)
# merged into the process config, a history entry per layer. Args: src layout rootfs patch refs...
append_layer() {
  local src=$1 layout=$2 rootfs=$3 patch=$4 manifest config diff_id digest size cfg cfg_blob man man_blob
  shift 4
  manifest=$(blob_path "$src" "$(jq -r '.manifests[0].digest' "$src/index.json")")
  config=$(blob_path "$src" "$(jq -r '.config.digest' "$manifest")")
  mkdir -p "$layout/blobs/sha256"
  jq -r '.layers[].digest' "$manifest" | while read -r digest; do cp "$(blob_path "$src" "$digest")" "$layout/blobs/sha256/"; done
  read -r diff_id digest size < <(write_layer "$layout" "$rootfs")
  cfg=$(mktemp)
  jq --argjson patch "$patch" --arg diff "$diff_id" --arg created "$epoch" '
    .config += $patch | .rootfs.diff_ids += [$diff]
    | .history += [{created: $created, created_by: "nodelet test/images/build-e2e-images.sh append_layer"}]
  ' "$config" >"$cfg"
  cfg_blob=$(put_blob "$layout" "$cfg")
  man=$(mktemp)
  jq --arg cd "${cfg_blob% *}" --argjson cs "${cfg_blob#* }" --arg ld "$digest" --argjson ls "$size" '
    .config.digest = $cd | .config.size = $cs
    | .layers += [{mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: $ld, size: $ls}]
  ' "$manifest" >"$man"
  man_blob=$(put_blob "$layout" "$man")
  jq --arg md "${man_blob% *}" --argjson ms "${man_blob#* }" '
    .manifests = [.manifests[0] as $m | $ARGS.positional[] | ($m + {digest: $md, size: $ms,
      annotations: {"io.containerd.image.name": ., "org.opencontainers.image.ref.name": .}})]
  ' "$src/index.json" --args "$@" >"$layout/index.json"
  cp "$src/oci-layout" "$layout/oci-layout"
}

# The blob of a layout named by its digest.
blob_path() {
  echo "$1/blobs/sha256/${2#sha256:}"
}

# The single-layer image of <src> (a layout) into <layout> under <refs>, its config's Labels
# replaced by <labels> (JSON): the same layer blob, a config and manifest of its own.
relabel_image() {
  local src=$1 layout=$2 labels=$3 manifest config layer size diff_id process
  shift 3
  manifest=$(blob_path "$src" "$(jq -r '.manifests[0].digest' "$src/index.json")")
  config=$(blob_path "$src" "$(jq -r '.config.digest' "$manifest")")
  layer=$(jq -r '.layers[0].digest' "$manifest")
  size=$(jq -r '.layers[0].size' "$manifest")
  diff_id=$(jq -r '.rootfs.diff_ids[0]' "$config")
  process=$(jq -c --argjson labels "$labels" '.config + {Labels: $labels}' "$config")
  mkdir -p "$layout/blobs/sha256"
  cp "$(blob_path "$src" "$layer")" "$layout/blobs/sha256/"
  write_image "$layout" "$diff_id" "$layer" "$size" "$process" "$@"
}

e2e_main() {
  local only_print=0 image print_opt=""
  case ${1:-} in
    --print) only_print=1 ;;
    "") ;;
    *) die "usage: build-e2e-images.sh [--print]" ;;
  esac
  command -v jq >/dev/null || die "jq is required"
  e2e_bin_dir=$(bash "$e2e_images_dir/../conformance/build-e2e.sh" --print) ||
    die "the e2e binaries are not built (bash test/conformance/build-e2e.sh)"
  if ((only_print)); then
    busybox_bin=$(bash "$e2e_images_dir/build-busybox.sh" --print) || die "busybox is not built (bash test/images/build-busybox.sh)"
    coredns_dir=$(bash "$e2e_images_dir/../cluster/build-coredns.sh" --print) || die "CoreDNS is not built"
  else
    busybox_bin=$(bash "$e2e_images_dir/build-busybox.sh") || die "build-busybox.sh failed"
    coredns_dir=$(bash "$e2e_images_dir/../cluster/build-coredns.sh") || die "building CoreDNS failed"
  fi
  ((only_print)) && print_opt=--print
  sample_apiserver_dir=$(bash "$e2e_images_dir/../cluster/build-binaries.sh" --sample-apiserver ${print_opt:+"$print_opt"}) ||
    die "the sample API server is not built (build-binaries.sh --sample-apiserver)"
  e2e_etcd_dir=$(bash "$e2e_images_dir/../cluster/build-binaries.sh" --e2e-etcd ${print_opt:+"$print_opt"}) ||
    die "etcd $E2E_ETCD_VERSION is not built (build-binaries.sh --e2e-etcd)"
  mkdir -p "$cache"
  # kitten and nautilus after agnhost, the -old images after theirs: their layouts start from those.
  for image in agnhost agnhost-old busybox busybox-old pause nonroot nonewprivs glibc-dns-testing nginx nginx-new \
    kitten nautilus sample-apiserver etcd; do
    build_image "e2e-$image" "$only_print" e2e_input_hash "recipe_e2e_${image//-/_}"
  done
}

e2e_main "$@"
