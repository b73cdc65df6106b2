#!/usr/bin/env bash
# Gradient Clinic: set up the environment, then open the course, test it, regenerate it, or write
# its student edition.
#
#   ./course.sh lab          install (first time) and open JupyterLab at 00_start_here
#   ./course.sh test         install (first time) and run the README's test command: ruff, the unit
#                            tests and every notebook under strict nbval, on two workers
#   ./course.sh portability  install (first time), then every notebook under strict nbval three
#                            times: as on an older x86-64 CPU (no AVX-512), on one thread, and
#                            on eight threads
#   ./course.sh regenerate   install (first time) and re-execute the notebooks' stored outputs
#   ./course.sh student [DIR]  install (first time) and write the student edition into DIR
#                            (default student/, relative to this folder): code outputs cleared
#                            except cells tagged keep-output, solutions removed (INSTRUCTORS.md)
#
# CI (.ci/run) runs `test`, then `portability`. Extra arguments to `test` and `portability` go to
# pytest. The environment lives in .venv (override with VENV=path). It is (re)installed from
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

# The AVX-512 groups numpy would use on this machine. numpy refuses to start when asked to
# disable one of its baseline features and ignores names it does not dispatch, so disable only
# those of X86_V4 AVX512_ICL AVX512_SPR that this numpy dispatches and this CPU has.
avx512_features() {
  env -u NPY_DISABLE_CPU_FEATURES "$VENV/bin/python" -c '
from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
wanted = ["X86_V4", "AVX512_ICL", "AVX512_SPR"]
print(" ".join(f for f in wanted if f in __cpu_dispatch__ and __cpu_features__.get(f)))'
}

# Every notebook under strict nbval three times, with the same sanitizer. All passes always run;
# the exit status is non-zero if any failed (pytest's 5, "no tests collected", included).
portability() {
  local older=skipped one_thread=passed eight_threads=passed status=0 paths=(notebooks)
  case " $* " in *.ipynb\ *) paths=() ;; esac  # notebooks named: only those
  if [ "$(uname -m)" = x86_64 ]; then
    local disable
    disable=$(avx512_features)
    echo "== portability 1/3: an older x86-64 CPU (AVX2, no AVX-512):" \
         "NPY_DISABLE_CPU_FEATURES=\"$disable\" OPENBLAS_CORETYPE=Haswell ONEDNN_MAX_CPU_ISA=AVX2"
    [ -n "$disable" ] || echo "   (numpy uses no AVX-512 on this CPU: nothing to disable there)"
    older=passed
    NPY_DISABLE_CPU_FEATURES="$disable" OPENBLAS_CORETYPE=Haswell ONEDNN_MAX_CPU_ISA=AVX2 \
      "$VENV/bin/python" -m pytest "${WORKERS[@]}" "${NBVAL[@]}" ${paths[@]+"${paths[@]}"} "$@" ||
      { older="FAILED ($?)"; status=1; }
  else
    echo "== portability 1/3: skipped, the older-CPU emulation is for x86-64 (this is $(uname -m))"
  fi
  echo "== portability 2/3: one thread:" \
       "TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1"
  TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
    "$VENV/bin/python" -m pytest "${WORKERS[@]}" "${NBVAL[@]}" ${paths[@]+"${paths[@]}"} "$@" ||
    { one_thread="FAILED ($?)"; status=1; }
  # A learner's laptop has more cores than CI: TensorFlow splits its work by thread count.
  echo "== portability 3/3: eight threads, as on an 8-core laptop:" \
       "TF_NUM_INTRAOP_THREADS=8 TF_NUM_INTEROP_THREADS=8 OMP_NUM_THREADS=8 OPENBLAS_NUM_THREADS=8"
  TF_NUM_INTRAOP_THREADS=8 TF_NUM_INTEROP_THREADS=8 OMP_NUM_THREADS=8 OPENBLAS_NUM_THREADS=8 \
    "$VENV/bin/python" -m pytest "${WORKERS[@]}" "${NBVAL[@]}" ${paths[@]+"${paths[@]}"} "$@" ||
    { eight_threads="FAILED ($?)"; status=1; }
  echo "== portability: older CPU $older; one thread $one_thread; eight threads $eight_threads"
  return "$status"
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
  portability)
    setup
    portability "$@"
    ;;
  regenerate)
    setup
    exec "$VENV/bin/python" scripts/regenerate_outputs.py "$@"
    ;;
  student)
    setup
    exec "$VENV/bin/python" scripts/make_student_edition.py "$@"
    ;;
  *)
    awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
    exit 2
    ;;
esac
