"""helpers.course.checks: the argument checks every helper shares, and the errors they raise."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from helpers.course.checks import check_choice, check_int, is_int
from helpers.models import make_conv_denoiser, make_gru_step_model
from helpers.recurrence import check_step_model


def test_is_int_takes_python_and_numpy_integers_but_not_bools_or_floats():
    assert is_int(3) and is_int(np.int64(3)) and is_int(np.uint8(0))
    assert not any(is_int(v) for v in (True, np.bool_(False), 3.0, "3", None))


@pytest.mark.parametrize(
    "value, low, high, message",
    [
        (0, 1, None, "n must be a positive integer; got 0."),
        (True, None, None, "n must be an integer; got True."),
        (5, 0, 4, "n must be an integer in 0..4; got 5."),
        (-1, 0, None, "n must be an integer >= 0; got -1."),
        (2.0, None, 9, "n must be an integer <= 9; got 2.0."),
    ],
)
def test_check_int_says_what_was_expected(value, low, high, message):
    with pytest.raises(ValueError, match=f"^{message.replace('.', '[.]')}$"):
        check_int(value, "n", low, high)


def test_check_int_returns_a_python_int_and_can_raise_another_type():
    assert type(check_int(np.int32(4), "n", 1)) is int
    with pytest.raises(TypeError, match="n must be a positive integer"):
        check_int(0, "n", 1, error=TypeError)


def test_check_choice_lists_the_choices():
    assert check_choice("b", ("a", "b"), "letter") == "b"
    with pytest.raises(ValueError, match=r"^letter must be one of 'a', 'b'; got 'c'\.$"):
        check_choice("c", ("a", "b"), "letter")
    with pytest.raises(KeyError, match="letter must be one of 'a'"):
        check_choice(["a"], {"a": 1}, "letter", error=KeyError)  # unhashable: not a choice


def test_check_step_model_wants_two_inputs():
    model = make_gru_step_model(units=2, bins=3)
    assert check_step_model(model) is model
    with pytest.raises(TypeError, match="step_model must be a Keras model with two inputs"):
        check_step_model(make_conv_denoiser(seed=0))
    with pytest.raises(TypeError, match=r"got Dense\. Build one with train_denoiser\(\)"):
        check_step_model(keras.layers.Dense(2), made_by="train_denoiser()")
