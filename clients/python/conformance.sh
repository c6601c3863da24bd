#!/bin/sh
# The Python client's entry for e2e/clients.sh (contract: clients/conformance/README.md):
#   conformance.sh describe | run | test
# `test` runs the unit tests (python3 -m unittest). Needs python3 (3.11) with `cryptography`
# (Debian's python3-cryptography, which make deps-test installs).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
# The python3 on PATH when it has cryptography (a venv, pyenv), else Debian's.
PYTHON=python3
python3 -c 'import cryptography' 2>/dev/null || PYTHON=/usr/bin/python3
case "${1:-}" in
describe | run) exec "$PYTHON" "$HERE/conformance/driver.py" "$1" ;;
test) cd "$HERE" && PYTHONPATH="$HERE" exec "$PYTHON" -m unittest discover -s tests -t tests ;;
*) echo "usage: conformance.sh describe|run|test" >&2; exit 2 ;;
esac
