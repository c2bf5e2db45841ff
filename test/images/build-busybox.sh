#!/usr/bin/env bash
# Builds the busybox of the e2e test images (build-e2e-images.sh) from Debian's source package of
# busybox, as Debian builds its busybox-static (the package's static configuration), less the two
# patches that make Debian's ash differ from upstream's:
#
#   revert-9c143ce52…patch         reverts upstream's "ash: retain envvars with bad names in initial
#                                  environment" (busybox 1.28), so ash drops `data-1=value-1`
#                                  before `sh -c env` prints it;
#   temp-deb-installer-hack.patch  the debian-installer option that the revert exists for.
#
# Upstream's busybox image (the e2e suite's registry.k8s.io/e2e-test-images/busybox) keeps such
# variables, and three conformance tests (ConfigMap and Secret envFrom with prefixes) print them.
# It is built from busybox's defconfig, which has applets Debian's static configuration leaves
# out; those the e2e suites run are added (added_applets): nmeter, whose `%3t` timestamps the
# node e2e container lifecycle tests log and parse.
# Downloads: Debian's source package only, through apt with a private deb-src list derived from
# this machine's Debian sources (the system's apt lists are not touched). Cached per source
# version and script under $NODELET_CACHE/busybox.
#
#   build-busybox.sh [--print]   prints the binary's path; --print fails instead of building
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache_root=${NODELET_CACHE:-$HOME/.cache/nodelet}/busybox
dropped_patches=(revert-9c143ce52da11ec3d21a3491c3749841d3dc10f0.patch temp-deb-installer-hack.patch)
added_applets=(NMETER)

log() { echo "[build-busybox] $*" >&2; }
die() { log "error: $*"; exit 1; }

# A deb-src twin of every enabled Debian source of this machine, in <dir>/parts.
write_source_lists() {
  local dir=$1 file
  mkdir -p "$dir/parts" "$dir/lists/partial"
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [[ -f $file ]] || continue
    grep -qi debian "$file" || continue
    case $file in
      *.sources) sed -E 's/^Types:.*/Types: deb-src/' "$file" >"$dir/parts/$(basename "$file")" ;;
      *) sed -nE 's/^deb[[:space:]]/deb-src /p' "$file" >"$dir/parts/$(basename "$file" .list).list" ;;
    esac
  done
  compgen -G "$dir/parts/*" >/dev/null || die "no Debian apt source on this machine to derive a deb-src list from"
}

apt_private() {
  local dir=$1 tool=$2
  shift 2
  "$tool" -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$dir/parts" \
    -o Dir::State::Lists="$dir/lists" -o APT::Sandbox::User=root "$@"
}

# Unpacks the upstream tarball and applies Debian's series less the dropped patches, in <src>.
prepare_source() {
  local dl=$1 src=$2 patch
  mkdir -p "$src"
  tar -xf "$dl"/busybox_*.orig.tar.* -C "$src" --strip-components=1
  tar -xf "$dl"/busybox_*.debian.tar.* -C "$src"
  while read -r patch; do
    [[ -z $patch || $patch == \#* ]] && continue
    [[ " ${dropped_patches[*]} " == *" $patch "* ]] && continue
    patch -d "$src" -p1 -s <"$src/debian/patches/$patch" || die "Debian's $patch does not apply"
  done <"$src/debian/patches/series"
}

# Configures and builds the static flavour as debian/rules does (its config, -Os, no strip).
build_static() {
  local src=$1 out=$2
  mkdir -p "$out"
  local applet
  grep -v FEATURE_DI_ENV_HACK "$src/debian/config/pkg/static" >"$out/.config"
  for applet in "${added_applets[@]}"; do
    sed -i "/^# CONFIG_$applet is not set\$/d; /^CONFIG_$applet=/d" "$out/.config"
    echo "CONFIG_$applet=y" >>"$out/.config"
  done
  { yes "" || true; } | make -s -C "$out" -f "$src/Makefile" KBUILD_SRC="$src" silentoldconfig >/dev/null
  # Compiler warnings go to the log; shown only when the build fails.
  KCONFIG_NOTIMESTAMP=1 make -s -C "$out" -j"$(nproc)" all SKIP_STRIP=y >"$out/build.log" 2>&1 ||
    { tail -n 30 "$out/build.log" >&2; die "the busybox build failed"; }
  [[ -x $out/busybox ]] || die "the build made no busybox binary"
  for applet in "${added_applets[@]}"; do
    "$out/busybox" --list | grep -qx "${applet,,}" || die "the build has no ${applet,,} applet"
  done
}

# The binary keeps variables whose names are no shell identifiers, or the build is no use.
check_keeps_bad_names() {
  local bin=$1
  env -i 'data-1=value-1' "$bin" sh -c env | grep -qx 'data-1=value-1' ||
    die "$bin sh drops data-1=value-1 from its environment"
}

main() {
  local only_print=0 version key entry
  case ${1:-} in
    --print) only_print=1 ;;
    "") ;;
    *) die "usage: build-busybox.sh [--print]" ;;
  esac
  work=$(mktemp -d)  # global: the EXIT trap runs after main returns
  trap 'rm -rf "$work"' EXIT
  write_source_lists "$work/apt"
  apt_private "$work/apt" apt-get -qq update || die "apt-get update of the deb-src list failed"
  version=$(apt_private "$work/apt" apt-cache showsrc busybox | awk '$1 == "Version:" { print $2 }' | sort -V | tail -1)
  [[ -n $version ]] || die "apt knows no source package of busybox"
  key=$version-$(sha256sum "$here/build-busybox.sh" | cut -c1-12)
  entry=$cache_root/${key//:/_}
  if [[ -x $entry/busybox ]]; then echo "$entry/busybox" && return 0; fi
  ((only_print == 0)) || die "busybox $version is not built (bash test/images/build-busybox.sh)"
  log "building busybox $version from Debian's source, less ${dropped_patches[*]}"
  mkdir -p "$work/dl"
  (cd "$work/dl" && apt_private "$work/apt" apt-get -qq source --download-only "busybox=$version") ||
    die "apt-get source busybox=$version failed"
  prepare_source "$work/dl" "$work/src"
  build_static "$work/src" "$work/out"
  check_keeps_bad_names "$work/out/busybox"
  rm -rf "$entry.tmp" && mkdir -p "$entry.tmp"
  install -m 0755 "$work/out/busybox" "$entry.tmp/busybox"
  rm -rf "$entry" && mv "$entry.tmp" "$entry"
  echo "$entry/busybox"
}

main "$@"
