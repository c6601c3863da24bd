#!/usr/bin/env bash
# Creates (or recreates, when requirements.txt changed since it was built) the trainer's venv in
# training/.venv from the pinned requirements, and prints the path of its python. make-model.sh,
# test.sh and the tests that train (e2e/feedback-loop.sh) use it.
#
#   PYTHON=/usr/bin/python3.11 training/venv.sh     the interpreter to build it from (python3)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"
venv="$here/.venv"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [[ ! -x "$venv/bin/python" || ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    rm -rf "$venv"
    "$python" -m venv "$venv" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
    echo "$want" > "$stamp"
fi
echo "$venv/bin/python"
