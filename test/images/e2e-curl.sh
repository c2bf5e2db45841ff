#!/bin/sh
# /usr/bin/curl in the e2e agnhost image: plain HTTP GETs over busybox wget, which is all the
# upstream tests that run curl in this image need (lifecycle hooks: `curl http://<ip>:8080/...`).
# Understood: flags made of s S f L v k g q i (ignored, alone or together: -sSL, -g -q), --silent,
# --fail, --show-error, -o FILE, -m/--max-time N and --connect-timeout N (ignored); the last other argument is
# the URL. Anything else is refused, so a test needing more fails loudly.
url="" out="-"
while [ $# -gt 0 ]; do
  case $1 in
    --silent | --fail | --show-error) ;;
    -o | --output) out=$2; shift ;;
    # Read, not applied: Debian's busybox-static wget crashes with -T (a timeout).
    -m | --max-time | --connect-timeout) shift ;;
    --* | -) echo "curl (e2e image): unsupported option $1" >&2; exit 2 ;;
    -*)
      case ${1#-} in
        *[!sSfLvkgqi]*) echo "curl (e2e image): unsupported option $1" >&2; exit 2 ;;
      esac ;;
    *) url=$1 ;;
  esac
  shift
done
[ -n "$url" ] || { echo "curl (e2e image): no URL" >&2; exit 2; }
exec wget -q -O "$out" "$url"
