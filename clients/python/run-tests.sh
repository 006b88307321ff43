#!/usr/bin/env bash
# The Python client's test suite: a virtual environment (clients/python/.venv, or $EVALGATE_PYTHON_VENV)
# with the package and its dev extras (pytest, pandas, tqdm, openai), then pytest against a live server
# started by the tests from the repository's dist/ (built here when missing). Extra arguments go to pytest.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${EVALGATE_PYTHON_VENV:-$here/.venv}"

# The venv with the package and its dev extras (reinstalled only when they changed).
bash "$here/venv.sh"
if [ ! -f "$root/dist/bundle/evalgate.js" ]; then
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
