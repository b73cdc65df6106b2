"""helpers.probe against the nine defects of issue 10 (each test failed on the probe before
the fix), and healthy controls that must come out intact. Fresh tiny models, none of them
used by a notebook."""

from __future__ import annotations

import ast
import importlib
import inspect

import keras
import numpy as np
import tensorflow as tf

import helpers  # noqa: F401
from helpers import probe as probe_module
from helpers.probe import VARIABLES, GradientProbe


def _data(shape=(4, 6), seed=0):
    rng = np.random.default_rng(seed)
    return tf.constant(rng.normal(size=shape), tf.float32)


def _agrees_with_report(where, probe, loss, sources):
    """The verdict never contradicts the gradient report: intact exactly when no None."""
    report = probe.report(loss, sources)
    assert where.intact == (not report.any("none"))
    assert (where.broken_between is not None) <= report.any("none")


# -- healthy controls -----------------------------------------------------------------------
def test_control_softmax_cross_entropy_classifier():
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(3, activation="softmax", name="head")])
    labels = tf.one_hot([0, 2, 1, 0], 3)
    with GradientProbe() as probe:
        probs = probe.mark("probs", model(_data()))
        loss = keras.losses.CategoricalCrossentropy()(labels, probs)
    where = probe.locate(loss, model.trainable_variables)
    assert where.intact and where.breaks == []
    assert repr(where).startswith("Gradient path intact")
    _agrees_with_report(where, probe, loss, model.trainable_variables)


def test_control_sigmoid_binary_cross_entropy_conv_net():
    keras.utils.set_random_seed(2)
    model = keras.Sequential([keras.Input((16, 1)), keras.layers.Conv1D(4, 3, activation="relu"),
                              keras.layers.GlobalAveragePooling1D(),
                              keras.layers.Dense(1, activation="sigmoid")])
    with GradientProbe() as probe:
        x = probe.mark("x", _data((3, 16, 1)))
        p = probe.mark("p", model(x))
        loss = keras.losses.BinaryCrossentropy()(tf.constant([[1.0], [0.0], [1.0]]), p)
    where = probe.locate(loss, model.trainable_variables)
    assert where.intact and where.broken_between is None
    _agrees_with_report(where, probe, loss, model.trainable_variables)


def test_control_batch_norm_and_dropout_in_training_mode():
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(5),
                              keras.layers.BatchNormalization(), keras.layers.Dropout(0.3),
                              keras.layers.Dense(1)])
    with GradientProbe() as probe:
        out = probe.mark("out", model(_data(), training=True))
        loss = tf.reduce_mean(tf.square(out - 1.0))
    where = probe.locate(loss, model.trainable_variables)
    assert where.intact and where.breaks == []
    _agrees_with_report(where, probe, loss, model.trainable_variables)


def test_control_hand_threaded_recurrent_loop():
    keras.utils.set_random_seed(4)
    cell = keras.layers.GRUCell(3)
    head = keras.layers.Dense(1)
    frames = _data((2, 5, 4))
    with GradientProbe() as probe:
        state = tf.zeros((2, 3))
        outputs = []
        for t in range(5):
            out, [state] = cell(frames[:, t], [state])
            state = probe.mark(f"state_{t}", state)
            outputs.append(head(out))
        loss = tf.reduce_mean(tf.square(probe.mark("outputs", tf.stack(outputs, 1))))
    sources = cell.trainable_variables + head.trainable_variables
    where = probe.locate(loss, sources)
    assert where.intact and where.breaks == []
    _agrees_with_report(where, probe, loss, sources)


# -- defect 1: a Keras 3 activation output that the loss does not read is no break ------------
def test_defect_1_keras_logits_behind_a_sigmoid_output_is_not_a_break():
    keras.utils.set_random_seed(5)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(1, activation="sigmoid")])
    with GradientProbe() as probe:
        p = probe.mark("p", model(_data()))
        loss = keras.losses.BinaryCrossentropy()(tf.ones((4, 1)), p)
    where = probe.locate(loss, model.trainable_variables)
    assert not where["p"].loss_reaches  # Keras reads the logits behind it, not 'p' itself
    assert where.broken_between is None and where.intact
    assert "side branch, not a break" in repr(where)


# -- defect 2: a break before the first mark --------------------------------------------------
class _Frozen(keras.layers.Layer):
    def call(self, x):
        return tf.stop_gradient(x)


def test_defect_2_break_before_the_first_mark_is_not_intact():
    keras.utils.set_random_seed(6)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4, name="front"),
                              _Frozen(), keras.layers.Dense(2, name="back")], name="m2")
    with GradientProbe() as probe:
        loss = tf.reduce_mean(tf.square(probe.mark("out", model(_data()))))
    where = probe.locate(loss, model.trainable_variables)
    assert not where.intact
    assert where.broken_between == (VARIABLES, "out")
    assert "'m2/front/kernel', 'm2/front/bias' reach no mark" in repr(where)
    _agrees_with_report(where, probe, loss, model.trainable_variables)


# -- defect 3: gradients with respect to tensors ----------------------------------------------
def test_defect_3_tensor_sources_watched_unwatched_and_integer():
    keras.utils.set_random_seed(7)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(2)])
    watched, unwatched = _data(), _data(seed=1)
    ids = tf.constant([1, 0, 3])
    with GradientProbe() as probe:
        probe.watch(watched)
        out = probe.mark("out", model(watched) + model(unwatched))
        loss = tf.reduce_sum(out) + tf.reduce_sum(tf.gather(tf.ones(4), ids))
    where = probe.locate(loss, [watched, unwatched, ids], names=["x", "x2", "ids"])
    assert where.loss_reaches_variables == (True, False, False)
    assert where.causes == {"x2": "unwatched", "ids": "integer"}
    text = repr(where)
    assert "never watched" in text and "integer dtype" in text and "assign_add" in text
    report = probe.report(loss, [watched, unwatched, ids], names=["x", "x2", "ids"])
    assert report.names == ["x", "x2", "ids"] and report.statuses == ["ok", "none", "none"]


# -- defect 4: every break, in forward order --------------------------------------------------
def test_defect_4_two_breaks_are_both_reported_in_forward_order():
    w1, w2 = tf.Variable(1.5, name="w1"), tf.Variable(0.5, name="w2")
    x = _data()
    with GradientProbe() as probe:
        a = probe.mark("a", x * w1)
        b = probe.mark("b", tf.stop_gradient(a))
        c = probe.mark("c", b * w2)
        d = probe.mark("d", tf.round(c))
        loss = tf.reduce_sum(d)
    where = probe.locate(loss, [w1, w2])
    assert where.breaks == [("a", "b"), ("c", "d")]
    assert where.broken_between == ("a", "b")
    assert "broken in 2 places" in repr(where)


# -- defect 5: variables never read inside the tape -------------------------------------------
class _DerivedWeight(keras.layers.Layer):
    """Weight normalisation done wrong: the unit-norm kernel is computed once, in build()."""

    def build(self, input_shape):
        self.v = self.add_weight(shape=(input_shape[-1], 2), name="v")
        self.kernel = self.v / tf.norm(self.v)

    def call(self, x):
        return x @ self.kernel


def test_defect_5_derived_weights_are_never_read_inside_the_tape():
    keras.utils.set_random_seed(8)
    layer = _DerivedWeight(name="wn")
    layer(_data())
    with GradientProbe() as probe:
        loss = tf.reduce_sum(probe.mark("out", layer(_data())))
    where = probe.locate(loss, layer.trainable_variables)
    assert where.causes == {"wn/v": "unread"}
    assert where.broken_between == (VARIABLES, "out")
    assert "never read inside the `with` block" in repr(where)
    assert "not used on the way" not in repr(where)


def test_defect_5_a_mark_made_on_a_tensor_computed_before_the_block_is_flagged():
    keras.utils.set_random_seed(9)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(2)])
    early = model(_data())
    with GradientProbe() as probe:
        loss = tf.reduce_sum(probe.mark("out", early))
    where = probe.locate(loss, model.trainable_variables)
    assert set(where.causes.values()) == {"unread"}
    assert "'out' was computed before the `with` block began" in repr(where)


# -- defect 6: non-trainable variables in the list --------------------------------------------
def test_defect_6_moving_statistics_get_the_advice_to_pass_trainable_variables():
    keras.utils.set_random_seed(10)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(3),
                              keras.layers.BatchNormalization(name="bn")], name="m6")
    with GradientProbe() as probe:
        loss = tf.reduce_mean(tf.square(probe.mark("out", model(_data(), training=True))))
    where = probe.locate(loss, model.variables)
    assert where.causes == {"m6/bn/moving_mean": "untrainable",
                            "m6/bn/moving_variance": "untrainable"}
    assert where.breaks == [] and not where.intact
    text = repr(where)
    assert "Pass model.trainable_variables" in text and "Make them trainable" not in text


# -- defect 7: the sentences agree with the table ---------------------------------------------
def test_defect_7_the_explanation_never_contradicts_the_table():
    w1, w2 = tf.Variable(1.5, name="w1"), tf.Variable(0.5, name="w2")
    x = _data()
    with GradientProbe() as probe:
        a = probe.mark("a", x * w1)
        out = probe.mark("out", tf.stop_gradient(a) * w2)
        loss = tf.reduce_sum(out)
    where = probe.locate(loss, [w1, w2])
    assert where.broken_between == ("a", "out") and where["out"].variables == ("w2",)
    text = repr(where)
    assert "the variables do not" not in text
    assert "'out' does not depend on 'a' through the tape; the loss reaches it." in text


# -- defect 8: a module-level mark for model code ---------------------------------------------
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


# -- defect 9: public TensorFlow API only, the one exception pinned ---------------------------
def test_defect_9_private_internals_live_in_one_function():
    modules = [probe_module, *(importlib.import_module(f"helpers.probe.{name}") for name in
                               ("marks", "exits", "location", "locate", "keras_marks"))]
    tree = ast.parse("\n".join(inspect.getsource(module) for module in modules))
    private = {"_id", "uid", "_keras_logits"}
    users = set()
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef):
            for node in ast.walk(function):
                name = (node.attr if isinstance(node, ast.Attribute)
                        else node.value if isinstance(node, ast.Constant) else None)
                module = node.module if isinstance(node, ast.ImportFrom) else ""
                if name in private or (module or "").startswith("tensorflow.python"):
                    users.add(function.name)
    assert users == {"_creation_order"}


def test_defect_9_the_private_creation_counter_still_works():
    """Pins ``_creation_order``: fails loudly when a TensorFlow upgrade moves the counter."""
    first = tf.constant(1.0)
    second = first + 1.0
    between = probe_module._creation_order()
    third = second * 2.0
    numbers = [probe_module._creation_order(t) for t in (first, second)]
    assert all(isinstance(n, int) for n in [*numbers, between])
    assert numbers[0] < numbers[1] < between < probe_module._creation_order(third)


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
