#!/usr/bin/env bash
# Creates (or recreates, when requirements.txt changed since it was built) the trainer's venv in
# training/.venv from the pinned requirements, and prints the path of its python. make-model.sh,
# test.sh and the tests that train (e2e/feedback-loop.sh) use it.
#
#   PYTHON=/usr/bin/python3.11 training/venv.sh     the interpreter to build it from (python3)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sh "$here/../scripts/venv.sh" "$here/.venv" "$here/requirements.txt" trainer
echo "$here/.venv/bin/python"
