#!/bin/sh
# Installs the Debian packages insightd builds against, only those missing.
# Used by `make run` and `make test`; safe to run again.
set -eu
# python3-venv: the pinned schemathesis of `make test-api` lives in a venv.
PACKAGES="libevent-dev libsqlite3-dev libssl-dev pkg-config sqlite3 curl jq openssl python3-venv postgresql-15 libpq-dev"
missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
