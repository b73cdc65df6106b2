"""helpers.diagnosis.probe.exits: where a value leaves TensorFlow inside the block (float(), int(),
.numpy(), np.asarray(), on tensors and variables) is noted while the block records eagerly,
and the conversion methods are restored afterwards, also after an error."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.diagnosis.probe import LOSS, VARIABLES, GradientProbe
from helpers.diagnosis.probe.exits import _owners, noting_exits


def _methods():
    return [(owner, name, owner.__dict__[name]) for owner, name, _ in _owners()]


@pytest.mark.parametrize(
    "convert, label",
    [
        (float, "float()"),
        (int, "int()"),
        (lambda t: t.numpy(), ".numpy()"),
    ],
)
def test_each_conversion_of_a_float_tensor_is_noted_once(convert, label):
    noted = []
    t = tf.constant(2.5)
    with noting_exits(lambda lab, tensor: noted.append((lab, tensor))):
        convert(t)
        convert(tf.constant(3))  # an integer tensor carries no gradient: not noted
    assert [lab for lab, _ in noted] == [label] and noted[0][1] is t


@pytest.mark.parametrize(
    "variable", [tf.Variable(0.5), keras.Variable(0.5)], ids=["tf.Variable", "keras.Variable"]
)
def test_a_variable_read_as_a_number_is_noted_as_the_variable(variable):
    noted = []
    with noting_exits(lambda lab, value: noted.append((lab, value))):
        float(variable)
        np.asarray(variable)
    assert [lab for lab, _ in noted] == ["float()", "np.asarray()"]
    assert all(value is variable for _, value in noted)


def test_numpy_constructors_and_ufuncs_are_seen_and_the_buffer_is_not():
    """np.asarray and the like are wrapped while the block records, and a ufunc (np.abs)
    calls the tensor's __array_wrap__. A known limit: np.frombuffer (as compiled code does)
    reads the tensor's memory through the buffer protocol, which has no Python method to
    wrap; the verdict then names leaving TensorFlow among what it cannot tell apart."""
    noted = []
    constructors = [getattr(np, name) for name in ("asarray", "array", "asanyarray")]
    with noting_exits(lambda lab, value: noted.append(lab)):
        np.asarray(tf.constant([1.0]))
        np.array([tf.constant(1.0), tf.constant(2)])  # the float item only
        assert isinstance(np.abs(tf.constant([-1.0])), np.ndarray)  # what NumPy gives
        np.frombuffer(tf.constant([1.0]), np.float32)
    assert noted == ["np.asarray()", "np.array()", "np.absolute()"]
    assert [getattr(np, name) for name in ("asarray", "array", "asanyarray")] == constructors
    assert not any("__array_wrap__" in vars(c) for c in type(tf.constant(0.0)).__mro__)


def test_methods_are_restored_after_the_block_and_after_an_error():
    before = _methods()
    with noting_exits(lambda *_: None):
        assert _methods() != before
    assert _methods() == before
    with pytest.raises(RuntimeError, match="inside"):
        with GradientProbe():
            raise RuntimeError("an error inside the block")
    assert _methods() == before


def test_nothing_is_wrapped_inside_tf_function():
    before = _methods()
    seen = []

    @tf.function
    def traced(x):
        with noting_exits(lambda *_: None):
            seen.append(_methods() == before)
        return x

    traced(tf.constant(1.0))
    assert seen == [True]


def test_the_probe_names_a_python_float_made_from_a_variable():
    weight = tf.Variable(0.5, name="weight")
    x = tf.constant([1.0, 2.0])
    with GradientProbe() as probe:
        scaled = probe.mark("scaled", x * 2.0)
        loss = float(weight) * tf.reduce_sum(scaled)
    where = probe.locate(loss, [weight])
    assert where.broken_between == (VARIABLES, "float() (conversion 1)")
    assert "'weight' leaves TensorFlow at 'float() (conversion 1)'" in repr(where)


def test_a_python_mark_right_after_the_conversion_names_the_exit():
    weight = tf.Variable(0.5, name="weight")
    with GradientProbe() as probe:
        factor = probe.mark("factor", float(weight))
        loss = factor * tf.reduce_sum(probe.mark("x", tf.constant([1.0, 2.0]) * 2.0))
    where = probe.locate(loss, [weight])
    assert where.broken_between == (VARIABLES, "factor")
    assert "'weight' leaves TensorFlow at 'factor'" in repr(where)
    assert "'factor' is a Python number" in repr(where)


def test_a_conversion_for_printing_is_no_break():
    weight = tf.Variable(0.5, name="weight")
    with GradientProbe() as probe:
        loss = weight * 3.0
        print(f"loss {float(loss):.2f}", end="\r")
    assert probe.locate(loss, [weight]).intact


# -- a tensor converted by a library call -----------------------------------------------------
def _lfilter(t):
    import scipy.signal

    return scipy.signal.lfilter([0.5, 0.5], [1.0, -0.2], t)


@pytest.mark.parametrize(
    "convert, label",
    [
        (lambda t: np.asarray(t), "np.asarray() (conversion 1)"),
        (_lfilter, "lfilter() (conversion 1)"),  # SciPy calls np.asarray(t) inside
        (lambda t: t.__array__(), "np.asarray() (conversion 1)"),
        (lambda t: np.abs(t), "np.absolute() (conversion 1)"),  # a ufunc
    ],
    ids=["np.asarray", "scipy.signal.lfilter", "__array__", "np.abs"],
)
def test_a_tensor_converted_by_a_library_call_is_named(convert, label):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)], name="net")
    with GradientProbe() as probe:
        out = probe.mark("out", model(tf.ones((4, 3))))
        loss = tf.reduce_sum(tf.constant(convert(out), tf.float32))
    where = probe.locate(loss, model.trainable_variables)
    text = repr(where)
    assert where.broken_between == ("out", LOSS)
    assert f"leave TensorFlow at {label!r} inside the block" in text
    assert "TensorFlow ops, not NumPy, SciPy" in text  # the fix for a library call
    assert "saw no conversion" not in text


def test_a_conversion_the_probe_cannot_see_is_still_suggested():
    """np.frombuffer reads the tensor through the buffer protocol: not seen, so the verdict
    names leaving TensorFlow among what it cannot tell apart."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)], name="net")
    with GradientProbe() as probe:
        out = probe.mark("out", model(tf.ones((4, 3))))
        loss = tf.reduce_sum(tf.constant(np.frombuffer(out, np.float32)))
    text = repr(probe.locate(loss, model.trainable_variables))
    assert "code that left TensorFlow (NumPy, SciPy) in a way it cannot see" in text
    assert "leave TensorFlow at" not in text


def test_numpy_is_restored_after_an_error_in_the_block():
    constructors = [getattr(np, name) for name in ("asarray", "array", "asanyarray")]
    with pytest.raises(RuntimeError, match="inside"):
        with GradientProbe():
            assert np.asarray is not constructors[0]  # wrapped while the block records
            raise RuntimeError("an error inside the block")
    assert [getattr(np, name) for name in ("asarray", "array", "asanyarray")] == constructors
    assert not any("__array_wrap__" in vars(c) for c in type(tf.constant(0.0)).__mro__)
