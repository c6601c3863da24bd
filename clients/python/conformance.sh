#!/bin/sh
# The Python client's entry for e2e/clients.sh (contract: clients/conformance/README.md):
#   conformance.sh describe | run | test
# `test` runs the unit tests (python3 -m unittest). Needs python3 (3.11) with `cryptography`
# (Debian's python3-cryptography, which make deps-test installs).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
case "${1:-}" in
describe | run) exec python3 "$HERE/conformance/driver.py" "$1" ;;
test) cd "$HERE" && PYTHONPATH="$HERE" exec python3 -m unittest discover -s tests -t tests ;;
*) echo "usage: conformance.sh describe|run|test" >&2; exit 2 ;;
esac
