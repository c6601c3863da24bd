#!/bin/sh
# Installs the Debian packages insightd builds against, only those missing; with `test`, also the
# engines the tests start (PostgreSQL 15, Redis 7, nginx). Used by `make run` and `make test`; safe to
# run again.
set -eu
# python3-venv: the pinned schemathesis of `make test-api` lives in a venv.
PACKAGES="libevent-dev libsqlite3-dev libssl-dev libsodium-dev pkg-config sqlite3 curl jq openssl python3-venv libpq-dev libhiredis-dev"
# nginx-light: the load balancer in front of the instances of e2e/cluster.sh; binutils: readelf
# for scripts/check-container-libraries.sh; python3-cryptography: the independent verifier of
# receipts (e2e/verify_receipt.py); chromium and chromium-driver: the real browser the admin
# console and the capture kit are tested in (e2e/console.sh and e2e/capture.sh, through the pinned
# Selenium of e2e/requirements-console.txt); redis-sentinel: the sentinels of the Redis failover
# (e2e/failover.sh and the sentinel tests).
[ "${1:-}" = test ] && PACKAGES="$PACKAGES postgresql-15 redis-server redis-sentinel nginx-light binutils python3-cryptography chromium chromium-driver"
# nodejs: `node --test` runs the capture kit's unit tests (capture/web/tests). Debian's package only
# when no node is on the PATH: a newer Node installed another way serves as well.
[ "${1:-}" = test ] && ! command -v node >/dev/null 2>&1 && PACKAGES="$PACKAGES nodejs"
# node-typescript: Debian's tsc compiles the TypeScript client (clients/typescript; Node's own
# fetch and crypto, no npm registry); python3-cryptography above verifies the Python client's receipts.
[ "${1:-}" = test ] && ! command -v tsc >/dev/null 2>&1 && PACKAGES="$PACKAGES node-typescript"
# The Java client (clients/java) builds with Maven offline against Debian's repository
# (/usr/share/maven-repo): Jackson, JUnit 5, and the Maven plugins its pom.xml names; a JDK
# (javac) only when none is installed. The Go client (clients/go) needs Go 1.19 or later and
# nothing else: Debian's golang-go only when no go is installed.
[ "${1:-}" = test ] && PACKAGES="$PACKAGES maven libjackson2-databind-java junit5 libsurefire-java libmaven-compiler-plugin-java libmaven-resources-plugin-java libmaven-jar-plugin-java"
[ "${1:-}" = test ] && ! command -v javac >/dev/null 2>&1 && PACKAGES="$PACKAGES default-jdk-headless"
[ "${1:-}" = test ] && ! command -v go >/dev/null 2>&1 && PACKAGES="$PACKAGES golang-go"
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
# postgresql-15, redis-server, redis-sentinel and nginx-light start their own system services when
# installed; the tests start private servers in temporary directories instead, so the packages'
# services are stopped and disabled (nothing is left listening on 5432, 6379, 26379 or 80 by `make test`).
for service in postgresql redis-server redis-sentinel nginx; do
    case "$missing" in *"$service"*) ;; *) continue ;; esac
    if [ -d /run/systemd/system ]; then
        $SUDO systemctl disable --now "$service" >/dev/null 2>&1 || true
    else
        $SUDO service "$service" stop >/dev/null 2>&1 || true
    fi
done
