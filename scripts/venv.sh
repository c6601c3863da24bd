#!/bin/sh
# A Python venv with pinned requirements, made again whenever the pins change (the hash of the
# requirements file is kept beside it): the trainer's, schemathesis' and Selenium's.
#
#   sh scripts/venv.sh VENV REQUIREMENTS [NAME]      NAME prefixes the messages (default venv)
#
# PYTHON: the interpreter that makes the venv (default python3). Exits 2, saying what to install,
# when the venv cannot be made.
set -eu
VENV=$1 REQUIREMENTS=$2 NAME=${3:-venv}
PYTHON=${PYTHON:-python3}
want=$(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
    echo "$NAME: installing $(basename "$REQUIREMENTS") into $VENV" >&2
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" >&2 || { echo "$NAME: '$PYTHON -m venv' failed (Debian: apt-get install python3-venv)" >&2; exit 2; }
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQUIREMENTS" >&2
    echo "$want" >"$VENV/.requirements.sha256"
fi
