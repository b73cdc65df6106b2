"""helpers.diagnosis.probe.marks: what a mark is, the module-level ``mark`` for model code, and
the one private TensorFlow internal the probe uses, pinned."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.diagnosis import probe as probe_module
from helpers.diagnosis.probe import LOSS, GradientProbe
from helpers.diagnosis.probe.marks import classify


def _data(shape=(4, 6), seed=0):
    rng = np.random.default_rng(seed)
    return tf.constant(rng.normal(size=shape), tf.float32)


# -- a module-level mark for model code ---------------------------------------------
class _MarkedBlock(keras.layers.Layer):
    def build(self, input_shape):
        self.dense = keras.layers.Dense(3)

    def call(self, x):
        hidden = probe_module.mark("block/hidden", self.dense(x))
        return probe_module.mark("block/pair", {"a": hidden, "b": [tf.nn.relu(hidden)]})


def test_defect_8_module_level_mark_records_into_the_active_probe_only():
    keras.utils.set_random_seed(11)
    block = _MarkedBlock(name="block")
    x = _data()
    out = block(x)  # no probe: the marks do nothing
    assert set(out) == {"a", "b"}
    with GradientProbe() as probe:
        out = block(x)
        loss = tf.reduce_sum(out["b"][0])
    assert probe.marks == ["block/hidden", "block/pair['a']", "block/pair['b'][0]"]
    assert probe.locate(loss, block.trainable_variables).intact
    assert probe_module.mark("after", x) is x  # the probe is closed: a no-op again


def test_defect_8_module_level_mark_inside_one_tf_function_trace():
    keras.utils.set_random_seed(12)
    block = _MarkedBlock(name="block")
    x = _data()
    block(x)
    verdicts = []

    @tf.function
    def step(x):
        with GradientProbe() as probe:
            loss = tf.reduce_sum(block(x)["a"])
        verdicts.append(probe.locate(loss, block.trainable_variables))
        return loss

    step(x)
    assert verdicts[0].traced and verdicts[0].intact
    assert verdicts[0].names == ["block/hidden", "block/pair['a']", "block/pair['b'][0]"]
    assert "side branch" in repr(verdicts[0])  # the relu branch the loss does not read


# -- what a mark is ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value, kind, words",
    [
        (np.float32(0.5), "numpy", "NumPy array: the computation left TensorFlow here"),
        (np.ones(3), "numpy", "NumPy array"),
        (0.5, "python", "Python number: the computation left TensorFlow here"),
        (3, "python", "int()"),
        (tf.constant([1, 2]), "integer", "an int32 tensor"),
        (tf.Variable(1.0), "variable", "assign / assign_add cut the path"),
        (tf.constant(1.0), "float", ""),
    ],
)
def test_classify_names_where_a_value_leaves_tensorflow(value, kind, words):
    m = classify("m", value)
    assert m.kind == kind and words in m.note
    assert (m.note == "") == (kind == "float")


@pytest.mark.parametrize(
    "name, value, error, match",
    [
        ("", 1.0, ValueError, "non-empty name"),
        (3, 1.0, ValueError, "non-empty name"),
        (LOSS, 1.0, ValueError, "reserved"),
        ("empty", [], ValueError, "holds no tensor"),
        ("thing", object(), TypeError, "expected a tensor"),
        ("input", keras.Input((3,)), TypeError, "KerasTensor"),
        ("ragged", tf.ragged.constant([[1.0], [2.0, 3.0]]), TypeError, "dense tensor"),
    ],
)
def test_bad_marks(name, value, error, match):
    with GradientProbe() as probe, pytest.raises(error, match=match):
        probe.mark(name, value)
