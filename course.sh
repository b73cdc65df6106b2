#!/usr/bin/env bash
# Gradient Clinic: ./course.sh lab | test | lint | doctor | portability | regenerate | student |
# site | nbgrader | hub | lock | contributor (scripts/course.py says what each does). This script only
# finds a Python the course runs on
# (3.11.5 or later, 3.12 or 3.13; PYTHON=path picks one), makes the environment .venv with it
# (VENV=path moves it), and hands over to scripts/course.py in that environment.
set -euo pipefail
cd "$(dirname "$0")"
VENV=${VENV:-.venv}
# The course lock's soupsieve 4.1.3 needs Python 3.11.5: Debian 12's python3 (3.11.2) passes
# a 3.11 check, then pip fails on the lock. scripts/course.py's check_python says the same.
NEEDS="the course runs on Python 3.11.5 or later, 3.12 or 3.13 (the course lock's soupsieve 4.1.3 needs 3.11.5)"

version_of() {
  "$1" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null
}

runs_the_course() {  # $1 is a version: 3.11.5 to 3.13.x
  local major minor micro
  IFS=. read -r major minor micro <<<"$1"
  [ "$major" = 3 ] && case "$minor" in 12 | 13) true ;; 11) [ "${micro:-0}" -ge 5 ] ;; *) false ;; esac
}

if [ ! -x "$VENV/bin/python" ]; then
  python=
  seen=
  for candidate in ${PYTHON:-python3.11 python3.12 python3.13 python3}; do
    command -v "$candidate" >/dev/null 2>&1 || continue
    version=$(version_of "$candidate") || version=
    if [ -n "$version" ] && runs_the_course "$version"; then
      python=$candidate
      break
    fi
    seen="$seen${seen:+, }$candidate is ${version:-not a Python that runs}"
  done
  if [ -z "$python" ]; then
    if [ -n "${PYTHON:-}" ]; then
      found="PYTHON=$PYTHON is ${version:-not a Python that runs}"
    else
      found=${seen:+"here $seen"}
      found=${found:-"this machine has none"}
    fi
    echo "PROBLEM  Python: $NEEDS, and $found. Fix: sudo apt-get install -y" \
         "python3-venv (Debian 13 and Ubuntu 24.04 ship 3.13 and 3.12) or brew install" \
         "python@3.11 (macOS); on Debian 12, whose python3 is 3.11.2: uv python install" \
         "3.12, then PYTHON=\$(uv python find 3.12) ./course.sh lab" >&2
    exit 1
  fi
  if ! "$python" -m venv "$VENV"; then
    echo "PROBLEM  Python: $python cannot make a virtual environment (it has no ensurepip)." \
         "Fix: sudo apt-get install -y python3.11-venv (the venv package of your Python)" >&2
    exit 1
  fi
fi
exec "$VENV/bin/python" scripts/course.py "$@"
