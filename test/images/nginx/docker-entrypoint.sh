#!/bin/sh
# /docker-entrypoint.sh of nodelet's e2e nginx images, in place of the official image's. For the
# command `nginx …` it does what that one does by default: the default server listens on [::]:80
# as well when the container has IPv6 (its 10-listen-on-ipv6-by-default.sh; only when default.conf
# is writable and has no such listen yet). Its other steps (templates, local resolvers, worker
# autotuning) act only on settings the e2e tests do not make. Then it runs the command.
set -e
conf=/etc/nginx/conf.d/default.conf
if [ "$1" = nginx ] || [ "$1" = nginx-debug ]; then
  if [ -e /proc/net/if_inet6 ] && [ -w "$conf" ] && ! grep -q 'listen *\[::\]:80;' "$conf"; then
    sed -i 's/^\( *\)listen \( *\)80;$/&\n\1listen \2[::]:80;/' "$conf"
    echo "$0: listening on [::]:80 as well (IPv6 is available)"
  fi
fi
exec "$@"
