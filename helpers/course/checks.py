"""Argument checks shared by every helper (the lowest layer, like Keras's
``keras.src.utils.argument_validation``): each raises an error that says what was expected.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")


def is_int(value: Any) -> bool:
    """True for a Python or NumPy integer, False for a bool (``True`` is an ``int`` in Python)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_int(
    value: Any,
    name: str,
    low: int | None = None,
    high: int | None = None,
    error: type[Exception] = ValueError,
) -> int:
    """``value`` as an ``int``, if it is an integer in ``low..high`` (either bound optional)."""
    if (
        not is_int(value)
        or (low is not None and value < low)
        or (high is not None and value > high)
    ):
        raise error(f"{name} must be {_int_range(low, high)}; got {value!r}.")
    return int(value)


def _int_range(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"an integer in {low}..{high}"
    if low == 1:
        return "a positive integer"
    if low is not None:
        return f"an integer >= {low}"
    return "an integer" if high is None else f"an integer <= {high}"


def check_choice(
    value: T, choices: Collection, name: str, error: type[Exception] = ValueError
) -> T:
    """``value``, if it is one of ``choices``; else an error listing them."""
    try:
        known = value in choices
    except TypeError:  # an unhashable value is not one of the (hashable) choices
        known = False
    if not known:
        raise error(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}.")
    return value
