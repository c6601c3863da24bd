#!/usr/bin/env bash
# Regenerates models/ (model.json, manifest.json, fixtures.json per version, registry.json) from
# the simulator and trainer in this directory. Deterministic: running it twice gives
# byte-identical files. `make model` calls this script.
#
#   training/make-model.sh              uses python3 from PATH (3.11 is what it is pinned for)
#   PYTHON=/usr/bin/python3.11 training/make-model.sh
#   MODELS_OUT=/tmp/models training/make-model.sh    writes elsewhere (e.g. to compare)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${MODELS_OUT:-$here/../models}"
# The venv, recreated when requirements.txt changed since it was built, so pins are what run.
python="$("$here/venv.sh")"

mkdir -p "$out"
# Hash seed and thread counts fixed so nothing in the run depends on the host.
cd "$here"
PYTHONHASHSEED=0 OMP_NUM_THREADS=1 "$python" train.py --out "$out"
echo "models written to $(cd "$out" && pwd)"
