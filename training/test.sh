#!/usr/bin/env bash
# The trainer's own tests (training/test_*.py), in its venv (created if missing: venv.sh).
# `make test` runs this.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="$("$here/venv.sh")"
cd "$here"
PYTHONHASHSEED=0 OMP_NUM_THREADS=1 "$python" -m unittest -v test_train
