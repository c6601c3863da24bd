#!/bin/sh
# The TypeScript client's entry for e2e/clients.sh (contract: clients/conformance/README.md):
#   conformance.sh describe | run | test
# Compiles with Debian's tsc (node-typescript, which make deps-test installs) into dist/, then
# runs on Node 20 (its fetch and WebCrypto; no npm package).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
# Compiled again only when a source is newer than the last build (describe, run and test share it).
if [ ! -f "$HERE/dist/.built" ] || [ -n "$(find "$HERE/src" "$HERE/conformance" "$HERE/tests" "$HERE/tsconfig.json" -newer "$HERE/dist/.built" | head -1)" ]; then
    tsc -p "$HERE" >&2 || { echo "typescript: tsc failed" >&2; exit 1; }
    touch "$HERE/dist/.built"
fi
case "${1:-}" in
describe | run) exec node "$HERE/dist/conformance/driver.js" "$1" ;;
test) exec node --test "$HERE/dist/tests/" ;;
*) echo "usage: conformance.sh describe|run|test" >&2; exit 2 ;;
esac
