#!/usr/bin/env bash
# The Python client's virtual environment (clients/python/.venv, or $EVALGATE_PYTHON_VENV) with the
# package and its dev extras (pytest, pandas, tqdm, openai). Used by run-tests.sh, and by CI before
# `npm test`, whose docs test runs the docs' Python blocks with this venv's python.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${EVALGATE_PYTHON_VENV:-$here/.venv}"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
# No retries: an unreachable primary index then costs one refused connection, not several back-offs, before
# the configured extra indexes answer.
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check --retries 0)
# Reinstall only what changed since the last run: the dependencies when pyproject.toml changed, else the
# package alone when its code changed (built with the venv's hatchling, so no index is asked again).
# The docs' Python examples (run by the docs test) use the Anthropic SDK as well.
docs_deps=(anthropic)
deps_stamp="$( (cat "$here/pyproject.toml"; echo "${docs_deps[*]}") | sha256sum | cut -c1-16)"
code_stamp="$(cd "$here" && find evalgate pyproject.toml README.md -type f ! -name '*.pyc' -print0 | sort -z | xargs -0 cat | sha256sum | cut -c1-16)"
if [ "$(cat "$venv/.evalgate-deps" 2>/dev/null)" != "$deps_stamp" ]; then
  "${pip[@]}" hatchling
  "${pip[@]}" --no-build-isolation "$here[dev]" "${docs_deps[@]}"
  echo "$deps_stamp" > "$venv/.evalgate-deps"
  echo "$code_stamp" > "$venv/.evalgate-code"
elif [ "$(cat "$venv/.evalgate-code" 2>/dev/null)" != "$code_stamp" ]; then
  "${pip[@]}" --no-build-isolation --no-deps --force-reinstall "$here"
  echo "$code_stamp" > "$venv/.evalgate-code"
fi
