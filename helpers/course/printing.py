"""How the course prints numbers, so a stored output reads the same on any processor.

Two kinds of number appear in the notebooks (CONTRIBUTING.md, "Stored outputs"):

* a **teaching quantity** (a loss, an SNR, a ratio, a healthy gradient norm) is printed at a
  precision that roundoff cannot reach, 2-3 significant digits (``sig``), and the claim it
  supports is asserted in the same cell;
* a **roundoff quantity** (a difference that should be zero, the norm of a term that should
  vanish) is never printed as digits: its digits depend on the processor's summation order.
  ``bound_text`` prints the bound it is below, and refuses to if it is not.

``norm_text`` applies the same rule to the gradient report: a norm below
``ROUNDOFF_FLOOR`` times the largest norm of the report is shown as ``~0``, not as digits.
"""

from __future__ import annotations

import math

ROUNDOFF_FLOOR = 1e-6  # relative to the largest norm of a report; float32 roundoff is ~1e-7


def sig(value: float, digits: int = 3) -> str:
    """A teaching quantity with ``digits`` significant digits (``0.00325``, ``9.56``)."""
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    return f"{value:.{digits}g}"


def bound_text(value: float, bound: float) -> str:
    """``"< 1e-6"`` for a roundoff quantity below ``bound``; raises if it is not below.

    The text depends only on the bound, chosen in advance, so it is the same on every
    processor; the check keeps the claim honest.
    """
    value, bound = abs(float(value)), float(bound)
    if not bound > 0:
        raise ValueError(f"bound must be a positive number; got {bound}.")
    if not value < bound:  # also catches NaN
        raise AssertionError(
            f"expected a roundoff-level value below {_short(bound)}; got {value:.3g}."
        )
    return f"< {_short(bound)}"


def difference_text(value: float, bound: float) -> str:
    """A difference that settles "identical, equal to rounding, or different?": ``"0.0"``
    when it is exactly zero, ``"above 0, below 1e-9"`` for a roundoff quantity under
    ``bound``, else the value itself (``sig``). Exact zeros are the same on every processor;
    roundoff digits are not, so they print only as a bound."""
    value, bound = abs(float(value)), float(bound)
    if not bound > 0:
        raise ValueError(f"bound must be a positive number; got {bound}.")
    if value != value:  # NaN
        raise ValueError("the difference is NaN: compare finite numbers.")
    if value == 0.0:
        return "0.0"
    if value < bound:
        return f"above 0, below {_short(bound)}"
    return sig(value)


def norm_text(
    norm: float | None, largest: float | None = None, floor: float = ROUNDOFF_FLOOR
) -> str:
    """A gradient norm for a report table: ``-`` (None), ``nan``/``inf``, ``0`` (exactly),
    ``~0`` (below ``floor * largest``: roundoff, no digits), else three significant digits."""
    if norm is None:
        return "-"
    if math.isnan(norm):
        return "nan"
    if math.isinf(norm):
        return "inf"
    if norm == 0:
        return "0"
    if largest is not None and math.isfinite(largest) and norm < floor * largest:
        return "~0"
    return sig(norm)


def _short(bound: float) -> str:
    """``1e-06`` -> ``1e-6``, ``0.0001`` -> ``1e-4``; ``0.5`` stays ``0.5``."""
    one_digit = f"{bound:.0e}"
    text = one_digit if bound < 1e-3 and float(one_digit) == bound else f"{bound:g}"
    mantissa, _, exponent = text.partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else mantissa
