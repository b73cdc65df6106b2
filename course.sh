#!/usr/bin/env bash
# Gradient Clinic: ./course.sh lab | test | lint | doctor | portability | regenerate | student |
# site | nbgrader | lock | contributor (scripts/course.py says what each does). This script only finds a Python the course runs on
# (3.11, 3.12 or 3.13; PYTHON=path picks one), makes the environment .venv with it
# (VENV=path moves it), and hands over to scripts/course.py in that environment.
set -euo pipefail
cd "$(dirname "$0")"
VENV=${VENV:-.venv}

runs_the_course() {
  "$1" -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' 2>/dev/null
}

if [ ! -x "$VENV/bin/python" ]; then
  python=
  for candidate in ${PYTHON:-python3.11 python3.12 python3.13 python3}; do
    if command -v "$candidate" >/dev/null 2>&1 && runs_the_course "$candidate"; then
      python=$candidate
      break
    fi
  done
  if [ -z "$python" ]; then
    if [ -n "${PYTHON:-}" ]; then found="PYTHON=$PYTHON is another"; else found="this machine has none"; fi
    echo "PROBLEM  Python: the course runs on Python 3.11, 3.12 or 3.13, and $found." \
         "Fix: sudo apt-get install -y python3.11-venv (Debian, Ubuntu) or brew install" \
         "python@3.11 (macOS)" >&2
    exit 1
  fi
  if ! "$python" -m venv "$VENV"; then
    echo "PROBLEM  Python: $python cannot make a virtual environment (it has no ensurepip)." \
         "Fix: sudo apt-get install -y python3.11-venv (the venv package of your Python)" >&2
    exit 1
  fi
fi
exec "$VENV/bin/python" scripts/course.py "$@"
