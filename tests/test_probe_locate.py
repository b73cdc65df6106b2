"""helpers.diagnosis.probe.locate: the search for the breaks, on the course's public-report cases, a
second set in the manner of the team's held-aside set, the defects learners found, and the
programs that used to crash it (tests/probe_cases.py holds the cases)."""

from __future__ import annotations

import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf
from probe_cases import ASIDE, PUBLIC, DerivedKernel

from helpers.diagnosis.probe import VARIABLES, GradientProbe
from helpers.diagnosis.probe.locate import Gradients


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
    model = keras.Sequential(
        [
            keras.Input((6,)),
            keras.layers.Dense(8, activation="relu"),
            keras.layers.Dense(3, activation="softmax", name="head"),
        ]
    )
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
    model = keras.Sequential(
        [
            keras.Input((16, 1)),
            keras.layers.Conv1D(4, 3, activation="relu"),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    with GradientProbe() as probe:
        x = probe.mark("x", _data((3, 16, 1)))
        p = probe.mark("p", model(x))
        loss = keras.losses.BinaryCrossentropy()(tf.constant([[1.0], [0.0], [1.0]]), p)
    where = probe.locate(loss, model.trainable_variables)
    assert where.intact and where.broken_between is None
    _agrees_with_report(where, probe, loss, model.trainable_variables)


def test_control_batch_norm_and_dropout_in_training_mode():
    keras.utils.set_random_seed(3)
    model = keras.Sequential(
        [
            keras.Input((6,)),
            keras.layers.Dense(5),
            keras.layers.BatchNormalization(),
            keras.layers.Dropout(0.3),
            keras.layers.Dense(1),
        ]
    )
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


# -- a Keras 3 activation output that the loss does not read is no break ------------
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


# -- a break before the first mark --------------------------------------------------
class _Frozen(keras.layers.Layer):
    def call(self, x):
        return tf.stop_gradient(x)


def test_defect_2_break_before_the_first_mark_is_not_intact():
    keras.utils.set_random_seed(6)
    model = keras.Sequential(
        [
            keras.Input((6,)),
            keras.layers.Dense(4, name="front"),
            _Frozen(),
            keras.layers.Dense(2, name="back"),
        ],
        name="m2",
    )
    with GradientProbe() as probe:
        loss = tf.reduce_mean(tf.square(probe.mark("out", model(_data()))))
    where = probe.locate(loss, model.trainable_variables)
    assert not where.intact
    assert where.broken_between == (VARIABLES, "out")
    assert "'m2/front/kernel', 'm2/front/bias' reach no mark" in repr(where)
    _agrees_with_report(where, probe, loss, model.trainable_variables)


# -- gradients with respect to tensors ----------------------------------------------
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


# -- every break, in forward order --------------------------------------------------
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


# -- variables never read inside the tape -------------------------------------------
def test_defect_5_derived_weights_are_never_read_inside_the_tape():
    keras.utils.set_random_seed(8)
    layer = DerivedKernel(2, name="wn")
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


# -- non-trainable variables in the list --------------------------------------------
def test_defect_6_moving_statistics_get_the_advice_to_pass_trainable_variables():
    keras.utils.set_random_seed(10)
    model = keras.Sequential(
        [keras.Input((6,)), keras.layers.Dense(3), keras.layers.BatchNormalization(name="bn")],
        name="m6",
    )
    with GradientProbe() as probe:
        loss = tf.reduce_mean(tf.square(probe.mark("out", model(_data(), training=True))))
    where = probe.locate(loss, model.variables)
    assert where.causes == {
        "m6/bn/moving_mean": "untrainable",
        "m6/bn/moving_variance": "untrainable",
    }
    assert where.breaks == [] and not where.intact
    text = repr(where)
    assert "Pass model.trainable_variables" in text and "Make them trainable" not in text


# -- the sentences agree with the table ---------------------------------------------
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


# -- the course's public-report cases --------------------------------------------------------
@pytest.mark.parametrize("case", list(PUBLIC), ids=lambda case: case.__name__)
def test_locator_and_report_on_a_real_case(case):
    broken, intact, causes, statuses, hint = PUBLIC[case]
    probe, loss, sources, names = case()
    if broken is TypeError:
        with pytest.raises(TypeError, match="model.inputs"):
            probe.locate(loss, sources, names)
        return
    where = probe.locate(loss, sources, names)
    assert where.broken_between == broken, repr(where)
    assert where.intact == intact
    assert causes <= set(where.causes.values())
    report = probe.report(loss, sources, names)
    kind, status = statuses.split()
    assert report.all(status) if kind == "all" else report.any(status) and not report.all(status), (
        report
    )
    assert where.intact == (not report.any("none"))  # the verdict agrees with the report
    first_hint = next((h for h in report.hints if h), None)
    assert (hint is None and first_hint is None) or hint in first_hint


# -- the second set: reduced public reports and healthy controls ----------------------------
@pytest.mark.parametrize("case", list(ASIDE), ids=lambda case: case.__name__)
def test_locator_on_the_second_set(case):
    broken, intact, causes, absent = ASIDE[case]
    probe, loss, sources, names = case()
    where = probe.locate(loss, sources, names)
    text = repr(where)
    assert where.broken_between == broken, text
    assert where.intact == intact, text
    assert causes <= set(where.causes.values()), text
    assert not [word for word in absent if word in text], text
    if intact:
        assert where.breaks == [] and not where.causes


def test_second_set_score():
    """The figure the issue asks for: right on at least 14 of 15, no false break."""
    right, false_breaks = 0, 0
    for case, (broken, intact, _, _) in ASIDE.items():
        probe, loss, sources, names = case()
        where = probe.locate(loss, sources, names)
        right += where.broken_between == broken and where.intact == intact
        false_breaks += intact and bool(where.breaks)
    assert (right, false_breaks) == (len(ASIDE), 0)


# -- each gradient asked for once -----------------------------------------------------------
def test_gradients_are_asked_for_once_and_batched():
    w1, w2 = tf.Variable(1.0, name="w1"), tf.Variable(2.0, name="w2")
    with tf.GradientTape(persistent=True) as tape:
        loss = w1 * w2
    counting = _CountingTape(tape)
    gradients = Gradients()
    first, error = gradients.of(counting, loss, [w1, w2])
    again, _ = gradients.of(counting, loss, [w2, w1])
    assert counting.calls == [2] and error == ""  # one batched call, the second from cache
    assert float(first[0]) == float(again[1]) == 2.0


def test_a_spent_py_function_is_an_answer_not_a_crash():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(3)])
    with GradientProbe() as probe:
        out = probe.mark("before", model(_data()))
        after = probe.mark(
            "after", tf.reshape(tf.py_function(lambda t: t * 2.0, [out], tf.float32), (4, 3))
        )
        loss = tf.reduce_sum(after)
    where = probe.locate(loss, model.trainable_variables)
    assert where.intact and where["before"].loss_reaches and where["before"].variables
    assert "computes its gradient only once" in repr(where)
    assert probe.report(loss, model.trainable_variables).all("ok")  # locate's gradients
    again = probe.locate(loss, model.trainable_variables)  # from the cache: no second pop
    assert again.intact


@pytest.mark.parametrize("body", ["py_function", "nested tf.function"])
def test_inside_tf_function_the_probes_gradients_never_run_with_the_step(body):
    """The probe's own gradient ops live in a graph that never runs: a py_function's gradient
    runs once, in the step's own gradient, and the step runs on every call."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(3)])
    inner = tf.function(lambda y: tf.reduce_sum(tf.square(y)))
    verdicts = []

    @tf.function
    def step(x):
        with GradientProbe() as probe:
            out = probe.mark("before", model(x))
            if body == "py_function":
                out = tf.reshape(tf.py_function(lambda t: t * 2.0, [out], tf.float32), (4, 3))
            loss = inner(probe.mark("after", out))
        verdicts.append(probe.locate(loss, model.trainable_variables))
        return probe.gradient(loss, model.trainable_variables)

    for _ in range(2):
        grads = step(_data())
        assert all(g is not None and bool(tf.reduce_any(g != 0.0)) for g in grads)
    assert len(verdicts) == 1 and verdicts[0].traced and verdicts[0].intact
    assert verdicts[0]["before"].loss_reaches and verdicts[0]["after"].variables


# -- the verdict does not depend on the order of report / locate / gradient ----------------
def _py_function_model():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((6,)), keras.layers.Dense(3, name="dense")], name="net")


def _through_py_function(body, out):
    return tf.reduce_sum(tf.reshape(tf.py_function(body, [out], tf.float32), (4, 3)))


def _py_function_program(body):
    """A Dense layer, its output through ``tf.py_function(body)``, summed."""
    model = _py_function_model()
    with GradientProbe() as probe:
        out = probe.mark("before", model(_data()))
        loss = probe.mark("after", _through_py_function(body, out))
    return probe, loss, model.trainable_variables


def _sums(grads):
    return [round(float(tf.reduce_sum(g)), 4) for g in grads]


def _answer(probe, loss, sources, call):
    """What one call says, as text: the summary, the verdict, the gradients' sums, or the
    error it raises."""
    try:
        if call == "report":
            return probe.report(loss, sources).summary()
        if call == "locate":
            return repr(probe.locate(loss, sources))
        return _sums(probe.gradient(loss, sources))
    except tf.errors.OpError as e:
        return type(e).__name__


PY_FUNCTION_BODIES = {
    "healthy tanh": tf.tanh,
    "NumPy body": lambda t: tf.constant(t.numpy() * 2.0),  # TensorFlow's gradient raises
}


@pytest.mark.parametrize("body", list(PY_FUNCTION_BODIES))
def test_py_function_verdicts_do_not_depend_on_the_order_of_calls(body):
    """A py_function's gradient can be taken once per forward pass; report, locate and
    gradient, in every order and each twice, must all say the same."""
    calls = ("report", "locate", "gradient")
    said = {call: [] for call in calls}
    for order in itertools.permutations(calls):
        probe, loss, sources = _py_function_program(PY_FUNCTION_BODIES[body])
        for call in order + order:
            said[call].append(_answer(probe, loss, sources, call))
    assert all(len({str(answer) for answer in said[call]}) == 1 for call in calls), said
    verdict = said["locate"][0]
    if body == "healthy tanh":
        assert verdict.startswith("Gradient path intact") and "spent" not in verdict
        assert said["report"][0] == "2 variables: 2 ok"
        model = _py_function_model()
        with tf.GradientTape() as tape:  # the same program on a plain tape
            loss = _through_py_function(tf.tanh, model(_data()))
        assert said["gradient"][0] == _sums(tape.gradient(loss, model.trainable_variables))
    else:
        assert verdict.startswith("Gradient path broken between 'before' and 'after'.")
        assert said["report"][0] == said["gradient"][0] == "InvalidArgumentError"


def test_a_first_question_about_other_sources_leaves_the_verdict_unchanged():
    """gradient() for one variable first, then locate() for every variable (non-trainable
    ones too): the first question already asked for all of them."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((6,)), keras.layers.Dense(3), keras.layers.BatchNormalization()]
    )
    with GradientProbe() as probe:
        out = probe.mark("before", model(_data(), training=True))
        loss = _through_py_function(tf.tanh, out)
    assert probe.gradient(loss, model.trainable_variables[0]) is not None
    where = probe.locate(loss, model.variables)
    assert where.breaks == [] and set(where.causes.values()) == {"untrainable"}
    assert "spent" not in repr(where)
    assert probe.report(loss, model.trainable_variables).all("ok")


def test_the_first_question_about_a_target_answers_the_later_ones():
    w1, w2, w3 = (tf.Variable(float(i), name=f"w{i}") for i in (1, 2, 3))
    unwatched = tf.Variable(4.0, trainable=False, name="unwatched")
    with tf.GradientTape(persistent=True) as tape:
        loss = w1 * w2 * w3
    counting = _CountingTape(tape)
    gradients = Gradients()
    gradients.of(counting, loss, [w1], extra=[w2, w3])
    later, error = gradients.of(counting, loss, [w3, w2, unwatched])
    assert counting.calls == [3] and error == ""  # one question, for all three
    assert [float(g) for g in later[:2]] == [2.0, 3.0] and later[2] is None


class _CountingTape:
    def __init__(self, tape):
        self.tape, self.calls = tape, []

    def gradient(self, target, sources):
        self.calls.append(len(sources))
        return self.tape.gradient(target, sources)

    def watched_variables(self):
        return self.tape.watched_variables()
