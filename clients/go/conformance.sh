#!/bin/sh
# The Go client's entry for e2e/clients.sh (contract: clients/conformance/README.md):
#   conformance.sh describe | run | test
# `test` runs go vet and the unit tests. Needs Go 1.19 or later (Debian's golang-go, which make
# deps-test installs); the standard library only, so nothing is downloaded.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
case "${1:-}" in
describe | run)
    BIN=$(mktemp -d)
    trap 'rm -rf "$BIN"' EXIT
    go build -o "$BIN/conformance" ./conformance
    "$BIN/conformance" "$1" ;;
test) go vet ./... && go test ./... ;;
*) echo "usage: conformance.sh describe|run|test" >&2; exit 2 ;;
esac
