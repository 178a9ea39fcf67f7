# Sourced by scripts/demo, scripts/test and scripts/bench: create or reuse the
# virtual environment and install the project (editable) with its pinned
# dependencies. Reinstalls only when pyproject.toml changes.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${MCUNAS_VENV:-$ROOT/.venv}"
PY="${PYTHON:-$(command -v python3.11 || command -v python3)}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "mcunas: creating virtual environment in $VENV" >&2
  "$PY" -m venv "$VENV"
fi
EXTRAS="${MCUNAS_EXTRAS:-dev}"
STAMP="$VENV/.mcunas-installed"
WANT="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1) $EXTRAS"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  echo "mcunas: installing mcunas and its dependencies (a few minutes the first time)" >&2
  "$VENV/bin/python" -m pip install --quiet --upgrade pip >&2
  "$VENV/bin/python" -m pip install --quiet -e "$ROOT[$EXTRAS]" >&2
  echo "$WANT" > "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
cd "$ROOT"
