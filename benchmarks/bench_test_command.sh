#!/usr/bin/env bash
# Wall seconds of the README test command (`./course.sh test`) at two commits, in one sitting.
#
#   bash benchmarks/bench_test_command.sh BASE_COMMIT BASE_VENV [ROUNDS]
#   TEST_ARGS="--ignore=tests/browser" bash benchmarks/bench_test_command.sh ...
#
# BASE_COMMIT is checked out into a temporary git worktree; BASE_VENV is a course environment
# with that commit's pinned packages (it gets `pip install --no-deps -e <worktree>`, so its
# `import helpers` points at the base). This checkout runs with its own .venv (VENV=...).
# The two commands run alternately, ROUNDS times each (default 2), after one untimed warm-up
# run each (numba's cache, Python's bytecode), so a shared machine treats them alike. Each
# keeps its fastest round. It prints every round (wall and CPU seconds), then `ratio: 0.NN`
# (this checkout / base), then the lowest wall time this checkout's CPU seconds allow on this
# machine's cores.
# A run that fails is still timed, and says so on stderr with its pytest summary line.
# TEST_ARGS (default none) go to both commands' pytest, e.g. to leave out the browser tests,
# which the base does not have (ignoring a folder that is not there changes nothing).
# Run it on an otherwise idle machine: the test command is CPU-bound on every core.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${1:?base commit}
BASE_VENV=$(cd "${2:?course environment for the base commit}" && pwd)
ROUNDS=${3:-2}
HERE=$PWD
VENV=$(cd "${VENV:-.venv}" && pwd)

WORKTREE=$(mktemp -d)/base
git worktree add --quiet --detach "$WORKTREE" "$BASE"
trap 'git -C "$HERE" worktree remove --force "$WORKTREE"' EXIT
"$BASE_VENV/bin/python" -m pip install --quiet --no-deps -e "$WORKTREE" >/dev/null 2>&1
touch "$BASE_VENV/.installed"  # the base's course.sh must not reinstall its packages

run() {  # run NAME DIR VENV: "wall user sys" seconds of `./course.sh test` in DIR with VENV
  # A failing run is timed all the same (the base may fail on this processor: issue 9), and
  # its pytest summary goes to stderr, so the figures never hide a red run. user and sys are
  # the CPU seconds of the command and of every process it waited for (workers, kernels,
  # JupyterLab, Chromium): bash's `time`, from getrusage.
  local log="/tmp/bench_test_command.$1.log" timing status=0
  timing=$( { TIMEFORMAT='%R %U %S'
              time (cd "$2" && VENV="$3" ./course.sh test -q ${TEST_ARGS:-} >"$log" 2>&1); } 2>&1 ) ||
    status=$?
  [ "$status" -eq 0 ] ||
    echo "$1: the test command failed: $(grep -E '(passed|failed)' "$log" | tail -1)" >&2
  echo "$timing"
}

echo "warm-up (untimed)"
run base "$WORKTREE" "$BASE_VENV" >/dev/null
run head "$HERE" "$VENV" >/dev/null
best_base=999999 best_head=999999
for round in $(seq "$ROUNDS"); do
  read -r base base_user base_sys < <(run base "$WORKTREE" "$BASE_VENV")
  read -r head head_user head_sys < <(run head "$HERE" "$VENV")
  base_cpu=$(echo "$base_user + $base_sys" | bc) head_cpu=$(echo "$head_user + $head_sys" | bc)
  printf 'round %d: base %s %.1f s (CPU %.0f s), this checkout %.1f s (CPU %.0f s)\n' \
    "$round" "$BASE" "$base" "$base_cpu" "$head" "$head_cpu"
  if [ "$(echo "$base < $best_base" | bc)" = 1 ]; then best_base=$base best_base_cpu=$base_cpu; fi
  if [ "$(echo "$head < $best_head" | bc)" = 1 ]; then best_head=$head best_head_cpu=$head_cpu; fi
done
cores=$(nproc)
printf 'fastest: base %.1f s, this checkout %.1f s\n' "$best_base" "$best_head"
printf 'ratio: %.2f\n' "$(echo "$best_head / $best_base" | bc -l)"
# The command is CPU-bound: on this machine's cores no schedule can finish in less wall time
# than its CPU seconds divided by the number of cores.
printf 'CPU of the fastest rounds: base %.0f s, this checkout %.0f s; on %d cores this checkout cannot take less than %.1f s (ratio %.2f)\n' \
  "$best_base_cpu" "$best_head_cpu" "$cores" "$(echo "$best_head_cpu / $cores" | bc -l)" \
  "$(echo "$best_head_cpu / $cores / $best_base" | bc -l)"
