#!/usr/bin/env bash
# The Python client's test suite: a virtual environment (clients/python/.venv, or $EVALGATE_PYTHON_VENV)
# with the package and its dev extras (pytest, pandas, tqdm, openai), then pytest against a live server
# started by the tests from the repository's dist/ (built here when missing). Extra arguments go to pytest.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
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
deps_stamp="$(cat "$here/pyproject.toml" | sha256sum | cut -c1-16)"
code_stamp="$(cd "$here" && find evalgate pyproject.toml README.md -type f ! -name '*.pyc' -print0 | sort -z | xargs -0 cat | sha256sum | cut -c1-16)"
if [ "$(cat "$venv/.evalgate-deps" 2>/dev/null)" != "$deps_stamp" ]; then
  "${pip[@]}" hatchling
  "${pip[@]}" --no-build-isolation "$here[dev]"
  echo "$deps_stamp" > "$venv/.evalgate-deps"
  echo "$code_stamp" > "$venv/.evalgate-code"
elif [ "$(cat "$venv/.evalgate-code" 2>/dev/null)" != "$code_stamp" ]; then
  "${pip[@]}" --no-build-isolation --no-deps --force-reinstall "$here"
  echo "$code_stamp" > "$venv/.evalgate-code"
fi
if [ ! -f "$root/dist/cli/main.js" ]; then
  (cd "$root" && npm run build)
fi

cd "$here"
set +e
# The installed package is what is tested (python -m pytest would put the source tree first on sys.path).
"$venv/bin/pytest" -q -p no:cacheprovider "$@"
code=$?
set -e
if [ "$code" -eq 5 ]; then
  # pytest's exit 5: no test was collected, which here means the suite is broken, not that it passed.
  echo "test:python: pytest collected no tests" >&2
  exit 1
fi
exit "$code"
