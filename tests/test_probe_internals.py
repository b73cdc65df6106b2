"""helpers.diagnosis.probe.internals: every private or patched API the locator touches lives
there, each still works on the locked TensorFlow and Keras, and ``GradientProbe()`` names a
version it was not verified on. Also: a break at ``tf.stop_gradient`` or a constant
``tf.cond`` branch is named as such, never guessed to be a NumPy/SciPy call."""

from __future__ import annotations

import ast
import importlib
import inspect
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.diagnosis.probe import GradientProbe
from helpers.diagnosis.probe.internals import (
    VERIFIED,
    UnverifiedVersionWarning,
    creation_order,
    unverified_versions,
)

NUMPY_GUESS = "code that left TensorFlow (NumPy, SciPy)"


def test_private_and_patched_apis_are_touched_only_in_internals():
    """No other module of the probe reads a private id, imports TensorFlow's private
    modules, or sets, deletes or looks up attributes on a class or module by hand."""
    touches = {"_id", "uid", "setattr", "delattr", "__setattr__", "__delattr__", "__dict__"}
    users = []
    for name in ("", ".marks", ".exits", ".location", ".locate", ".keras_marks"):
        module = importlib.import_module(f"helpers.diagnosis.probe{name}")
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            used = (
                node.attr
                if isinstance(node, ast.Attribute)
                else node.id
                if isinstance(node, ast.Name)
                else node.value
                if isinstance(node, ast.Constant)
                else None
            )
            private = isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "tensorflow.python"
            )
            if used in touches or private:
                users.append((name, used or node.module))
    assert users == []


def test_the_private_creation_counter_still_works():
    """Fails loudly when a TensorFlow upgrade moves the counter behind ``tensor._id``."""
    first = tf.constant(1.0)
    second = first + 1.0
    between = creation_order()
    third = second * 2.0
    numbers = [creation_order(t) for t in (first, second)]
    assert all(isinstance(n, int) for n in [*numbers, between])
    assert numbers[0] < numbers[1] < between < creation_order(third)


def test_the_locked_versions_are_the_verified_ones():
    assert unverified_versions() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnverifiedVersionWarning)
        GradientProbe()


def test_an_unverified_version_is_named_in_one_sentence():
    message = unverified_versions({"TensorFlow": "2.22.0", "Keras": keras.__version__})
    assert message == (
        f"GradientProbe was verified on TensorFlow {VERIFIED['TensorFlow'][0]} and Keras "
        f"{VERIFIED['Keras'][0]}, not on TensorFlow 2.22.0: it goes on, but a break may be "
        "missed or misplaced if that release moved an API listed in "
        "helpers/diagnosis/probe/internals.py."
    )
    both = unverified_versions({"TensorFlow": "3.0.1", "Keras": "4.0.0"})
    assert "not on TensorFlow 3.0.1 and Keras 4.0.0:" in both
    assert unverified_versions({"TensorFlow": "2.21.7", "Keras": "3.15.0rc1"}) is None


def test_gradient_probe_warns_on_an_unverified_keras_and_goes_on(monkeypatch):
    monkeypatch.setattr(keras, "__version__", "3.99.0")
    with pytest.warns(UnverifiedVersionWarning, match=r"not on Keras 3\.99\.0: it goes on"):
        probe = GradientProbe()
    x = tf.Variable([1.0, 2.0])
    with probe:
        loss = tf.reduce_sum(x * x)
    assert probe.locate(loss, [x]).intact


def _stopped():
    encoder, decoder = keras.layers.Dense(3, name="enc"), keras.layers.Dense(3, name="dec")
    x = tf.ones((2, 3))
    with GradientProbe() as probe:
        hidden = probe.mark("hidden", encoder(x))
        loss = tf.reduce_mean(decoder(probe.mark("stopped", tf.stop_gradient(hidden))))
    return probe.locate(loss, [*encoder.trainable_variables, *decoder.trainable_variables])


def _constant_branch():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3)], name="net")
    x = tf.ones((2, 3))
    with GradientProbe() as probe:
        probe.mark_layers(model)
        energy = tf.reduce_mean(tf.square(model(x)))
        loss = tf.cond(energy > 1e6, lambda: energy, lambda: tf.constant(0.0))
    return probe.locate(loss, model.trainable_variables)


def _left_through_the_buffer():
    """A conversion the probe cannot see (the buffer protocol): the NumPy guess stays."""
    encoder = keras.layers.Dense(3, name="enc")
    x = tf.ones((2, 3))
    with GradientProbe() as probe:
        hidden = probe.mark("hidden", encoder(x))
        copied = np.frombuffer(hidden, np.float32).reshape(2, 3)
        loss = tf.reduce_mean(probe.mark("copied", tf.constant(copied) * 2.0))
    return probe.locate(loss, encoder.trainable_variables)


@pytest.mark.parametrize(
    "case, named",
    [
        (_stopped, "tf.stop_gradient() ran here"),
        (_constant_branch, "tf.cond() ran here"),
        (_left_through_the_buffer, NUMPY_GUESS),
    ],
)
def test_a_wall_is_named_and_only_an_unseen_exit_gets_the_numpy_guess(case, named):
    text = repr(case())
    assert named in text
    if named != NUMPY_GUESS:
        assert NUMPY_GUESS not in text


def test_the_walls_are_restored_after_the_block():
    before = (tf.stop_gradient, tf.cond, np.asarray)
    with GradientProbe():
        assert (tf.stop_gradient, tf.cond, np.asarray) != before
    assert (tf.stop_gradient, tf.cond, np.asarray) == before
