#!/usr/bin/env bash
# Gradient Clinic: set up the environment, then open the course, test it, or regenerate it.
#
#   ./course.sh lab         install (first time) and open JupyterLab at 00_start_here
#   ./course.sh test        install (first time) and run every check CI runs
#   ./course.sh regenerate  install (first time) and re-execute the notebooks' stored outputs
#
# The environment lives in .venv (override with VENV=path). It is (re)installed from
# requirements.txt whenever that file changes. Nothing is downloaded after the install.
set -euo pipefail
cd "$(dirname "$0")"
VENV=${VENV:-.venv}

find_python() {
  for candidate in "${PYTHON:-}" python3.11 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      echo "$candidate"; return 0
    fi
  done
  echo "Gradient Clinic needs Python 3.11 (set PYTHON=/path/to/python3.11)." >&2
  return 1
}

setup() {
  if [ ! -x "$VENV/bin/python" ]; then
    "$(find_python)" -m venv "$VENV"
  fi
  if [ ! -f "$VENV/.installed" ] || [ requirements.txt -nt "$VENV/.installed" ] ||
     [ pyproject.toml -nt "$VENV/.installed" ]; then
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -r requirements.txt
    touch "$VENV/.installed"
  fi
}

command=${1:-}
[ $# -gt 0 ] && shift
case "$command" in
  lab)
    setup
    export PATH="$PWD/$VENV/bin:$PATH"  # kernels start from the course environment
    # root_dir: the file browser shows the whole course (helpers/, data/), not only notebooks/
    exec "$VENV/bin/jupyter" lab --ServerApp.root_dir="$PWD" notebooks/00_start_here.ipynb "$@"
    ;;
  test)
    setup
    "$VENV/bin/ruff" check .
    exec "$VENV/bin/python" -m pytest --nbval --nbval-current-env --durations=15 "$@"
    ;;
  regenerate)
    setup
    exec "$VENV/bin/python" scripts/regenerate_outputs.py "$@"
    ;;
  *)
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
