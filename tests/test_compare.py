"""How every checker decides (helpers.exercises.compare): traps first, then generated inputs,
a difference shrunk to the smallest input, the same verdict on every run."""

from __future__ import annotations

from hypothesis import strategies as st

from helpers.exercises.compare import error_text, first_difference, two_values

LISTS = st.lists(st.integers(0, 1000), max_size=20)


def reference(values: list[int]) -> int:
    return sum(values)


def capped(values: list[int]) -> int:  # wrong past ten values: a hard-coded length
    return sum(values[:10])


def differs_for(answer):
    def differs(values):
        got, expected = answer(values), reference(values)
        return None if got == expected else f"{values}: {got} != {expected}"

    return differs


def test_a_right_answer_has_no_difference():
    assert first_difference(LISTS, differs_for(sum), examples=50) is None


def test_a_difference_is_found_and_shrunk_to_the_smallest_input():
    found = first_difference(LISTS, differs_for(capped), examples=50)
    assert found is not None
    assert found.case == [0] * 10 + [1], found  # eleven values, the last one 1
    assert found.message == f"{found.case}: 0 != 1"


def test_traps_come_first_and_are_not_shrunk():
    trap = [5] * 12
    found = first_difference(LISTS, differs_for(capped), traps=[[1, 2], trap], examples=50)
    assert found.case == trap and found.message == f"{trap}: 50 != 60"


def test_the_verdict_is_the_same_on_every_run():
    runs = {repr(first_difference(LISTS, differs_for(capped), examples=50)) for _ in range(3)}
    assert len(runs) == 1, runs


def test_the_budget_counts_runs_not_seconds():
    calls = []

    def differs(values):
        calls.append(values)
        return differs_for(capped)(values)

    found = first_difference(LISTS, differs, examples=50, runs=7)
    assert len(calls) <= 7
    if found is not None:  # the smallest difference found within the budget
        assert capped(found.case) != reference(found.case)


def test_two_values_show_enough_digits_to_differ():
    assert two_values(0.0033337, 0.0033702) == ("0.00333", "0.00337")
    assert two_values(0.0033337, 0.0033342) == ("0.0033337", "0.0033342")
    assert two_values(1.0, 1.0) == ("1.0", "1.0")


def test_error_text_names_a_traced_errors_cause_without_addresses():
    error = ValueError("in user code:\n\n    File x\n    ValueError: object at 0x7f00ab12 bad")
    assert error_text(error) == "ValueError (object bad)"
    assert error_text(KeyError("k")) == "KeyError ('k')"


def _load_learner_module(folder, name: str, first: int):
    """A module of the learner's, loaded from outside site-packages, full of numbers that a
    search over LISTS could draw (Hypothesis reads the constants of every module it deems
    local): ``first``, ``first + 7`` and so on up to 1000."""
    import importlib
    import sys

    folder.mkdir()
    numbers = ", ".join(str(n) for n in range(first, 1001, 7))
    (folder / f"{name}.py").write_text(f"SHIFTS = [{numbers}]\n")
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(folder))


def test_a_search_leaves_no_file_behind(tmp_path, monkeypatch):
    from hypothesis import configuration

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    monkeypatch.chdir(workspace)  # Hypothesis's folder: .hypothesis/ in the working folder
    monkeypatch.setattr(configuration, "__hypothesis_home_directory", workspace / ".hypothesis")
    _load_learner_module(tmp_path / "code", "learner_constants_for_files", 102)
    assert first_difference(LISTS, differs_for(sum), examples=50) is None
    assert first_difference(LISTS, differs_for(capped), examples=50) is not None
    assert sorted(p.name for p in workspace.rglob("*")) == []


def test_the_inputs_do_not_depend_on_the_modules_loaded(tmp_path):
    before: list = []
    first_difference(LISTS, differs_for(sum), examples=50, tried=before)
    _load_learner_module(tmp_path / "code", "learner_constants_for_inputs", 103)
    after: list = []
    first_difference(LISTS, differs_for(sum), examples=50, tried=after)
    assert len(before) == 50 and after == before


def test_boundaries_come_after_the_traps_and_before_the_search():
    tried: list = []
    traps, boundaries = [[1, 2]], [[0], [0] * 20]  # capped is right on all three
    found = first_difference(
        LISTS, differs_for(capped), traps=traps, boundaries=boundaries, examples=50, tried=tried
    )
    assert tried[:3] == traps + boundaries and found.case == [0] * 10 + [1]
    big = [5] * 20
    tried = []
    found = first_difference(
        LISTS, differs_for(capped), traps=traps, boundaries=[[0], big], examples=50, tried=tried
    )
    assert found.case == big and found.message == f"{big}: 50 != 100"
    assert tried == [[1, 2], [0], big]  # a boundary is not shrunk, and the search did not run
