#!/usr/bin/env bash
# Gradient Clinic: set up the environment, then open the course, test it, or regenerate it.
#
#   ./course.sh lab          install (first time) and open JupyterLab at 00_start_here
#   ./course.sh test         install (first time) and run the README's test command: ruff, the unit
#                            tests and every notebook under strict nbval, on two workers
#   ./course.sh regenerate   install (first time) and re-execute the notebooks' stored outputs
#
# Extra arguments to `test` go to pytest. The environment lives in .venv (override with VENV=path). It is (re)installed from
# requirements.txt whenever that file changes. Nothing is downloaded after the install.
set -euo pipefail
cd "$(dirname "$0")"
VENV=${VENV:-.venv}

# Strict nbval (every output compared) in a kernel from this environment. The sanitizer only
# hides audio players' base64 bytes (see the file and CONTRIBUTING.md).
NBVAL=(--nbval --nbval-current-env --nbval-sanitize-with="$PWD/tests/nbval_sanitize.cfg")
# Two workers; --dist loadfile keeps every cell of a notebook on one worker, in order, in one
# kernel (and every test file on one worker). Files are handed out in collection order, which
# puts the long notebooks first (testpaths in pyproject.toml).
WORKERS=(-n 2 --dist loadfile --no-loadscope-reorder)

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
  # librosa compiles its numba functions on first use (about 12 s per process) and caches
  # them (cache=True). Keep that cache with the environment it was compiled for, in a place
  # that is always writable, so every later process, kernels included, loads it instead.
  NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-$(cd "$VENV" && pwd)/numba-cache}
  export NUMBA_CACHE_DIR
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
    exec "$VENV/bin/python" -m pytest "${WORKERS[@]}" "${NBVAL[@]}" --durations=15 "$@"
    ;;
  regenerate)
    setup
    exec "$VENV/bin/python" scripts/regenerate_outputs.py "$@"
    ;;
  *)
    awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
    exit 2
    ;;
esac
