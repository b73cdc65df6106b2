"""helpers.diagnosis.probe.location: the verdict's words and picture. Every note and every line the
probe can print has a program that triggers it and a close one where it must not appear
(no note unless it is true); ``Location.plot()`` draws what the verdict says."""

from __future__ import annotations

import html
import re

import keras
import numpy as np
import pytest
import tensorflow as tf
from matplotlib.colors import to_hex

from helpers.course.tables import TABLE_CLASS, status_html
from helpers.diagnosis import GradientProbe
from helpers.diagnosis.plots import PATH_COLOURS


def _x(shape=(4, 6), seed=0):
    return tf.constant(np.random.default_rng(seed).normal(size=shape), tf.float32)


def _model():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((6,)), keras.layers.Dense(3)])


def _run(body, sources=None, traced=False):
    """Run ``body(probe, model) -> loss`` in a probe and locate it for the model's
    variables (or ``sources(model)``)."""
    model = _model()
    pick = sources or (lambda m: m.trainable_variables)
    if hasattr(body, "before"):  # what the program does before the block
        body.before(model)
    if not traced:
        with GradientProbe() as probe:
            loss = body(probe, model)
        return probe.locate(loss, pick(model))
    found = []

    @tf.function
    def step(x):
        with GradientProbe() as probe:
            loss = body(probe, model)
        found.append(probe.locate(loss, pick(model)))
        return x

    step(tf.constant(0.0))
    return found[0]


def _sum(t):
    return tf.reduce_sum(t)


def healthy(p, m):
    return _sum(p.mark("out", m(_x())))


def zero_gradient(p, m):
    return _sum(tf.sign(p.mark("out", m(_x()))))


def nan_gradient(p, m):
    return _sum(tf.sqrt(p.mark("out", m(_x())) * 0.0))


def side_branch(p, m):
    out = p.mark("out", m(_x()))
    p.mark("unused", out * 2.0)
    return _sum(out)


def stopped(p, m):
    return _sum(p.mark("stopped", tf.stop_gradient(p.mark("out", m(_x())))))


def stopped_last(p, m):
    p.mark("out", m(_x()))
    return _sum(tf.stop_gradient(m(_x())))


def numpy_between(p, m):
    out = p.mark("out", m(_x()))
    return _sum(p.mark("back", tf.constant(p.mark("array", out.numpy()))))


def variable_between(p, m):
    state = tf.Variable(tf.zeros((4, 3)), trainable=False)
    state.assign(p.mark("out", m(_x())))
    return _sum(p.mark("state", state))


def integer_between(p, m):
    codes = p.mark("codes", tf.cast(p.mark("out", m(_x())) * 10, tf.int32))
    return _sum(p.mark("decoded", tf.cast(codes, tf.float32)))


def no_gradient_op(p, m):  # 'stopped' depends on 'out', but its gradient raises
    out = p.mark("out", m(_x()))
    return _sum(p.mark("stopped", tf.image.adjust_contrast(out[..., None], 2.0)))


_WEIGHT = tf.Variable(0.5, name="loss_weight")


def python_float_weight(p, m):
    return float(_WEIGHT) * _sum(p.mark("out", m(_x())))


def py_function_numpy_body(p, m):
    out = p.mark("out", m(_x()))
    doubled = tf.py_function(lambda t: tf.constant(t.numpy() * 2.0), [out], tf.float32)
    return _sum(p.mark("after", tf.reshape(doubled, (4, 3))))


def _with_weight(m):
    return [*m.trainable_variables, _WEIGHT]


def side_read_then_stopped(p, m):
    out = m(_x())
    print(f"{float(tf.reduce_sum(out)):.1f}", end="\r")  # a side read, not the cut
    return _sum(p.mark("stopped", tf.stop_gradient(p.mark("out", out))))


def stopped_unmarked(p, m):
    return _sum(p.mark("stopped", tf.stop_gradient(m(_x()))))


def early_forward(p, m):
    return _sum(p.mark("out", _EARLY[m.name]))


_EARLY: dict[str, tf.Tensor] = {}


def early_input(p, m):
    return _sum(tf.round(p.mark("out", m(p.mark("input", _INPUT)))))


_INPUT = _x()


def numpy_loss(p, m):
    return np.float32(_sum(p.mark("out", m(_x()))))


def python_loss(p, m):
    return float(_sum(p.mark("out", m(_x()))))


def integer_loss(p, m):
    return tf.cast(_sum(p.mark("out", m(_x()))), tf.int32)


def asarray_between(p, m):
    return _sum(p.mark("back", tf.constant(np.asarray(p.mark("out", m(_x()))))))


def unseen_between(p, m):  # np.frombuffer reads the tensor's memory: not seen
    out = p.mark("out", m(_x()))
    return _sum(p.mark("back", tf.constant(np.frombuffer(out, np.float32))))


def assigned_unmarked(p, m):
    state = tf.Variable(tf.zeros((4, 3)), trainable=False, name="state")
    state.assign(p.mark("out", m(_x())))
    return _sum(p.mark("after", state * 1.0))


def py_function_after(p, m):
    out = p.mark("out", m(_x()))
    return _sum(tf.reshape(tf.py_function(lambda t: t * 2.0, [out], tf.float32), (4, 3)))


early_forward.before = lambda m: _EARLY.update({m.name: m(_x())})  # type: ignore[attr-defined]


_SOURCE = _x(seed=1)


def uses_unwatched(p, m):
    return _sum(p.mark("out", m(_SOURCE)))


def uses_watched(p, m):
    p.watch(_SOURCE)
    return _sum(p.mark("out", m(_SOURCE)))


def _untrainable(m):
    return [tf.Variable(1.0, trainable=False, name="frozen"), *m.trainable_variables]


def _source(m):
    return [_SOURCE]


def _ids(m):
    return [tf.constant([1, 2])]


# words -> (program that prints them, its sources; a close program that must not, its sources)
NOTES = {
    "side branch, not a break": (side_branch, None, healthy, None),
    "its gradient there is all zeros": (zero_gradient, None, healthy, None),
    "its gradient there is NaN or inf": (nan_gradient, None, healthy, None),
    "not trainable: the tape does not watch such variables": (healthy, _untrainable, healthy, None),
    "computed before the `with` block began": (early_forward, None, early_input, None),
    "computes its gradient only once": (py_function_after, None, healthy, None),
    "tape.gradient(loss, sources) itself raises": (
        py_function_numpy_body,
        None,
        py_function_after,
        None,
    ),
    "The loss is a NumPy float32": (numpy_loss, None, healthy, None),
    "The loss is a Python float": (python_loss, None, healthy, None),
    "The loss is an int32 tensor": (integer_loss, None, healthy, None),
    "reach no mark: the path breaks before": (stopped_unmarked, None, stopped, None),
    "'out'; the loss does not reach it": (stopped, None, healthy, None),
    "The loss reaches no mark that depends on": (stopped_last, None, stopped, None),
    "'stopped' does not depend on 'out' through the tape": (stopped, None, no_gradient_op, None),
    "'array' is a NumPy array": (numpy_between, None, healthy, None),
    "'state' is a variable": (variable_between, None, healthy, None),
    "'codes' is an int32 tensor": (integer_between, None, healthy, None),
    "has no usable gradient: tape.gradient raises LookupError": (
        no_gradient_op,
        None,
        stopped,
        None,
    ),
    "leaves TensorFlow at 'float() (conversion 1)'": (
        python_float_weight,
        _with_weight,
        side_read_then_stopped,
        None,
    ),
    "a tensor the tape never watched": (uses_unwatched, _source, uses_watched, _source),
    "an integer dtype: integers have no gradient": (healthy, _ids, uses_watched, _source),
    "cannot tell what cut the path": (
        unseen_between,
        None,
        asarray_between,
        None,
    ),
    "leave TensorFlow at 'np.asarray() (conversion 1)'": (
        asarray_between,
        None,
        unseen_between,
        None,
    ),
    "reach the loss only through 'state.assign() (assignment 1)'": (
        assigned_unmarked,
        None,
        variable_between,
        None,
    ),
}


@pytest.mark.parametrize("words", list(NOTES))
def test_each_line_appears_when_true_and_only_then(words):
    trigger, trigger_sources, quiet, quiet_sources = NOTES[words]
    assert words in repr(_run(trigger, trigger_sources))
    assert words not in repr(_run(quiet, quiet_sources))


def test_the_traced_note_appears_only_while_tracing():
    assert "located while tracing" in repr(_run(stopped, traced=True))
    assert "located while tracing" not in repr(_run(stopped))


@pytest.mark.parametrize("when", ["before", "inside", "after"])
def test_the_block_notes_of_the_loss_appear_only_when_true(when):
    model = _model()
    early = _sum(model(_x())) if when == "before" else None
    with GradientProbe() as probe:
        out = probe.mark("out", model(_x()))
        inside = _sum(out)
    loss = {"before": early, "inside": inside, "after": _sum(out) if when == "after" else None}[
        when
    ]
    text = repr(probe.locate(loss, model.trainable_variables))
    assert text.count("after the `with` block ended") == (when == "after")
    assert text.count("before the `with` block began, when the tape") == (when == "before")


def test_a_watched_tensor_is_named_not_called_the_variables():
    ids = tf.constant([[1, 2]])
    keras.utils.set_random_seed(0)
    embed = keras.layers.Embedding(4, 3)
    with GradientProbe() as probe:
        probe.watch(ids)
        loss = _sum(probe.mark("vectors", embed(ids)))
    named = repr(probe.locate(loss, [ids], names=["ids"]))
    by_position = repr(probe.locate(loss, [ids]))
    assert "between 'ids' and 'vectors'" in named and "where 'ids' is used" in named
    assert "between 'source_0' and 'vectors'" in by_position
    assert "the variables" not in named + by_position


def test_a_marked_source_that_the_loss_misses_is_not_said_to_reach_itself():
    """Grad-CAM's shape: the source is a marked feature map the loss never uses."""
    model = _model()
    with GradientProbe() as probe:
        feature_map = probe.mark("feature map", model(_x()))
        loss = _sum(model(_x(seed=1)))  # a second forward pass: not through feature_map
    text = repr(probe.locate(loss, [feature_map], names=["feature map"]))
    assert "The loss does not reach 'feature map'." in text
    assert "reaches 'feature map'" not in text


# -- a break from a tensor source: named in the structure as in the text --------------------
def _embedded(watch):
    ids = tf.constant([[1, 2]])
    keras.utils.set_random_seed(0)
    embed = keras.layers.Embedding(4, 3)
    with GradientProbe() as probe:
        if watch:
            probe.watch(ids)
        probe.mark("token_ids", ids)
        loss = _sum(probe.mark("embedded", embed(ids)))
    return probe.locate(loss, [ids])


@pytest.mark.parametrize("watch", [False, True], ids=["marked", "marked and watched"])
def test_broken_between_names_a_tensor_source_as_the_text_does(watch):
    where = _embedded(watch)
    assert where.broken_between == ("token_ids", "embedded")
    assert repr(where).startswith("Gradient path broken between 'token_ids' and 'embedded'.")
    assert "where 'token_ids' is used" in repr(where)
    ticks = [t.get_text() for t in where.plot().axes[0].get_xticklabels()]
    assert ticks == ["sources", "token_ids", "embedded", "loss"]  # no column of its own


def test_every_break_names_its_two_points_as_the_text_does():
    """Two unwatched inputs and a stopped variable: each break's pair is what its line says."""
    inputs = [_x(seed=3), _x(seed=4)]
    w = tf.Variable(2.0, name="w")
    with GradientProbe() as probe:
        out = probe.mark("out", inputs[0] * inputs[1] * w)
        loss = _sum(probe.mark("stopped", tf.stop_gradient(out)))
    where = probe.locate(loss, [*inputs, w], names=["left", "right", "w"])
    text = repr(where)
    assert where.breaks == [("left", "stopped"), ("right", "stopped"), ("out", "stopped")], text
    for number, (start, end) in enumerate(where.breaks, 1):
        assert f"{number}. between {start!r} and {end!r}." in text


# -- one line per cause -----------------------------------------------------------------------
_IDS = tf.constant([[1, 2]])


def int_source_marked(p, m):  # the integer source, marked: one integer line, not two
    p.mark("token_ids", _IDS)
    return _sum(p.mark("embedded", tf.gather(m(_x()), _IDS)))


def int_mark_and_int_loss(p, m):
    codes = p.mark("codes", tf.cast(p.mark("out", m(_x())) * 10, tf.int32))
    return tf.reduce_sum(codes)


def int_source_and_int_loss(p, m):
    p.watch(_IDS)
    return tf.reduce_sum(_IDS) + tf.cast(_sum(m(_x())), tf.int32)


def python_loss_with_a_python_mark(p, m):
    return p.mark("total", float(_sum(p.mark("out", m(_x())))))


def _ids_and_variables(m):
    return [_IDS, *m.trainable_variables]


CAUSES = {  # program, sources, the cause's words (a line that says it), how many breaks
    "integer source marked": (int_source_marked, _ids_and_variables, "integers", 1),
    "integer mark, integer loss": (int_mark_and_int_loss, None, "integers", 1),
    "integer source, integer loss": (int_source_and_int_loss, _ids_and_variables, "integers", 2),
    "NumPy mark after a conversion": (numpy_between, None, "TensorFlow", 1),
    "Python loss after float()": (python_loss, None, "TensorFlow", 1),
    "Python loss marked": (python_loss_with_a_python_mark, None, "TensorFlow", 1),
    "assigned, variable marked": (variable_between, None, "assign / assign_add", 1),
    "assigned": (assigned_unmarked, None, "assign / assign_add", 1),
    "op without a gradient": (no_gradient_op, None, "raises", 1),
    "NumPy body in a py_function": (py_function_numpy_body, None, "raises", 1),
}


@pytest.mark.parametrize("case", list(CAUSES))
def test_each_cause_is_said_once(case):
    program, sources, words, breaks = CAUSES[case]
    where = _run(program, sources)
    lines = where.explanation().splitlines()[1:]  # the lines under the verdict
    said = [line for line in lines if words in line and not line.lstrip().startswith("Look at")]
    assert len(where.breaks) == breaks and len(said) == 1, where.explanation()


# -- the verdict in HTML --------------------------------------------------------------------------


def _shown(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", markup))


@pytest.mark.parametrize(
    "program, status, cell",
    [
        (healthy, "ok", "yes"),
        (zero_gradient, "zero", "yes (zeros)"),
        (nan_gradient, "nonfinite", "yes (NaN/inf)"),
        (stopped, "none", "no"),
        (no_gradient_op, "error", "raises"),
    ],
)
def test_the_html_verdict_says_what_the_text_says_in_one_table_style(program, status, cell):
    """The verdict in HTML: every line of the explanation, the marks in the course's one
    table style, and the loss's reach of each mark in its status colour."""
    where = _run(program)
    markup = where._repr_html_()
    words = " ".join(_shown(markup).split())
    for line in where.explanation().splitlines():
        assert " ".join(line.split()) in words
    assert markup.count(f"<table class='{TABLE_CLASS}'>") == 1
    assert status_html(cell, status) in markup
    head = "ok" if where.intact else "error"
    assert markup.startswith(f"<p>{status_html(where.explanation().splitlines()[0], head)}")
    assert repr(where) == where.to_text()  # the text form stays for terminals and nbval


# -- the picture --------------------------------------------------------------------------------
def _artists(fig, gid):
    return [a for ax in fig.axes for a in ax.get_children() if a.get_gid() == gid]


def test_plot_draws_the_marks_in_order_the_reach_and_the_break_in_red():
    where = _run(numpy_between)
    fig = where.plot()
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == ["sources", *where.names, "loss"]
    dots = _artists(fig, "path-reach")  # one line of dots per source that reaches a mark
    assert len(dots) == len(where.variable_names) == 2
    assert sum(len(d.get_xdata()) for d in dots) == sum(len(m.variables) for m in where.marks)
    (band,) = _artists(fig, "path-break")
    assert to_hex(band.get_facecolor()) == PATH_COLOURS["break"]
    assert [
        t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_gid() == "path-no-gradient"
    ] == ["array"]


def test_plot_sets_apart_a_source_that_never_enters_the_path():
    where = _run(python_float_weight, _with_weight)
    fig = where.plot()
    assert len(_artists(fig, "path-apart")) == 1  # the weight, read as a Python float
    assert len(_artists(fig, "path-separator")) == 1
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[-1] == "loss_weight"  # set apart at the bottom


def test_plot_of_a_healthy_path_has_no_break():
    fig = _run(healthy).plot()
    assert _artists(fig, "path-break") == [] and _artists(fig, "path-apart") == []
    assert len(_artists(fig, "path-loss")) == 1 and len(_artists(fig, "path-source-ok")) == 2
