#!/usr/bin/env bash
# setup_nginx.sh makes sure an nginx binary with the WebDAV module (Debian's
# nginx package) is installed, installing it with apt-get when missing, and
# prints its path. The remote compile cache tests run it as an HTTP cache server.
set -euo pipefail
find_nginx() { command -v nginx || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; }; }
if ! bin=$(find_nginx); then
  if [ "$(id -u)" != 0 ]; then
    echo "setup_nginx: nginx is missing and installing it needs root (apt-get install nginx)" >&2
    exit 1
  fi
  echo "setup_nginx: installing nginx (apt-get)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2
  apt-get install -y -q --no-install-recommends nginx >&2
  bin=$(find_nginx)
fi
if ! "$bin" -V 2>&1 | grep -q -- --with-http_dav_module; then
  echo "setup_nginx: $bin has no WebDAV module (--with-http_dav_module)" >&2
  exit 1
fi
echo "$bin"
