#!/usr/bin/env bash
# One command: set everything up (quick the second time) and run the whole test suite.
# Extra arguments go to pytest. Tests use temporary settings/data directories and a
# project-local model store (.cache/models), never the user's.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$ROOT/packaging/setup.sh" test
cd "$ROOT"
export SOTTO_MODELS_DIR=${SOTTO_MODELS_DIR:-$ROOT/.cache/models}
export QT_QPA_PLATFORM=offscreen
exec .venv/bin/python -m pytest -ra --durations=25 "$@"
