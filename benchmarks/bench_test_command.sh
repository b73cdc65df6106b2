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
# keeps its fastest round. It prints every round, then `ratio: 0.NN` (this checkout / base).
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

run() {  # run NAME DIR VENV: seconds of `./course.sh test` in DIR with VENV
  # A failing run is timed all the same (the base may fail on this processor: issue 9), and
  # its pytest summary goes to stderr, so the figures never hide a red run.
  local start end log="/tmp/bench_test_command.$1.log"
  start=$(date +%s.%N)
  (cd "$2" && VENV="$3" ./course.sh test -q ${TEST_ARGS:-} >"$log" 2>&1) ||
    echo "$1: the test command failed: $(grep -E '(passed|failed)' "$log" | tail -1)" >&2
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

echo "warm-up (untimed)"
run base "$WORKTREE" "$BASE_VENV" >/dev/null
run head "$HERE" "$VENV" >/dev/null
best_base=999999 best_head=999999
for round in $(seq "$ROUNDS"); do
  base=$(run base "$WORKTREE" "$BASE_VENV")
  head=$(run head "$HERE" "$VENV")
  printf 'round %d: base %s %.1f s, this checkout %.1f s\n' "$round" "$BASE" "$base" "$head"
  best_base=$(echo "if ($base < $best_base) $base else $best_base" | bc)
  best_head=$(echo "if ($head < $best_head) $head else $best_head" | bc)
done
printf 'fastest: base %.1f s, this checkout %.1f s\n' "$best_base" "$best_head"
printf 'ratio: %.2f\n' "$(echo "$best_head / $best_base" | bc -l)"
