#!/usr/bin/env bash
# Rebuild requirements.txt from requirements.in: install the direct pins into a fresh
# virtual environment and freeze everything that came with them.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q --upgrade pip
"$tmp/venv/bin/pip" install -q -r requirements.in
{
  echo "# Exact versions the stored notebook outputs were produced with (Python 3.11)."
  echo "# Generated from requirements.in by scripts/lock_requirements.sh; do not edit by hand."
  # --all: setuptools (TensorFlow requires it) and wheel (astunparse) too, which a plain
  # freeze leaves out, so pip would take their newest releases; pip itself stays out.
  "$tmp/venv/bin/pip" freeze --all --exclude pip --exclude-editable | LC_ALL=C sort -f
  echo "# The course's own helpers, importable from every notebook and test:"
  echo "-e ."
} > requirements.txt
echo "requirements.txt: $(grep -c '==' requirements.txt) pinned packages"
