"""helpers.diagnosis.report: the gradient report, ``gradients_of`` and ``max_abs_diff``. How the
report prints its norms (``~0``, ``0``) is in tests/test_printing.py."""

import html
import math
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.diagnosis import GradientReport, gradient_report, gradients_of, max_abs_diff


def _grads(loss_fn, variables):
    with tf.GradientTape() as tape:
        loss = loss_fn()
    return tape.gradient(loss, variables)


@pytest.fixture
def variables():
    return [
        tf.Variable([1.0, 2.0], name="a"),
        tf.Variable(tf.ones((3, 2)), name="b"),
        tf.Variable(1.0, name="c"),
        tf.Variable(3.0, name="unused"),
    ]


def test_ok_only(variables):
    a = variables[0]
    report = gradient_report(_grads(lambda: tf.reduce_sum(a * 3.0), [a]), [a])
    assert report.statuses == ["ok"]
    assert report[0].norm == pytest.approx(math.sqrt(18.0))
    assert report[0].name == "a" and report[0].shape == (2,)


def test_none_only(variables):
    a, unused = variables[0], variables[3]
    report = gradient_report(_grads(lambda: tf.reduce_sum(a), [unused]), [unused])
    assert report.statuses == ["none"]
    assert report[0].norm is None
    assert report.all("none")
    assert report.summary() == "1 variable: 1 none"


def test_zero_only(variables):
    b = variables[1]
    report = gradient_report(_grads(lambda: tf.reduce_sum(b * 0.0), [b]), [b])
    assert report.statuses == ["zero"] and report[0].norm == 0.0


def test_tiny_and_huge_gradients_of_every_float_dtype_are_ok_with_their_norm():
    """A status reads every value, not a norm (1e-200 squared underflows to 0, 1e300 squared
    overflows), and the norm is computed scaled, so neither under- nor overflows."""
    cases = [
        (tf.float64, [1e-200, 0.0], 1e-200),
        (tf.float64, [1e300, -1e300], math.sqrt(2) * 1e300),
        (tf.float64, [1e-50, 0.0], 1e-50),
        (tf.float32, [3e38, 3e38], math.sqrt(2) * float(np.float32(3e38))),
        (tf.float16, [65504.0, 65504.0], math.sqrt(2) * 65504.0),
        (tf.bfloat16, [1e-30, 0.0], float(tf.cast(tf.constant(1e-30, tf.bfloat16), tf.float64))),
    ]
    for dtype, values, norm in cases:
        gradient = tf.constant(values, dtype)
        report = gradient_report([gradient], [tf.Variable(tf.zeros(2, dtype))])
        assert report.statuses == ["ok"], (dtype, values, report.statuses)
        assert math.isclose(report[0].norm, norm, rel_tol=1e-6), (dtype, values, report[0].norm)


def test_nonfinite_nan_and_inf(variables):
    c = variables[2]
    inf = gradient_report(_grads(lambda: tf.math.log(c - 1.0), [c]), [c])  # d/dc log(0) = inf
    # the tf.where trap: the unused branch log(0) has gradient inf, and 0 * inf = nan
    nan = gradient_report(_grads(lambda: tf.where(c > 2.0, tf.math.log(c - 1.0), 0.0), [c]), [c])
    assert inf.statuses == ["nonfinite"] and math.isinf(inf[0].norm)
    assert nan.statuses == ["nonfinite"] and math.isnan(nan[0].norm)


def test_mixed_statuses_in_variable_order(variables):
    a, b, c, unused = variables
    grads = _grads(
        lambda: tf.reduce_sum(a) + tf.reduce_sum(b * 0.0) + tf.math.log(c - 1.0), variables
    )
    report = gradient_report(grads, variables)
    assert report.statuses == ["ok", "zero", "nonfinite", "none"]
    assert report.summary() == "4 variables: 1 ok, 1 zero, 1 nonfinite, 1 none"
    assert report.counts() == {"ok": 1, "zero": 1, "nonfinite": 1, "none": 1}
    text = repr(report)
    for name in ("a", "b", "c", "unused"):
        assert name in text
    assert "<table class='gradient-clinic-table'>" in report._repr_html_()


def test_indexed_slices_from_gather_sum_repeated_rows():
    table = tf.Variable(tf.ones((10, 4)), name="table")
    grads = _grads(lambda: tf.reduce_sum(tf.gather(table, [1, 1, 3])), [table])
    assert isinstance(grads[0], tf.IndexedSlices)
    report = gradient_report(grads, [table])
    # row 1 gets 2.0 in each of 4 columns, row 3 gets 1.0: norm sqrt(4*4 + 4*1)
    assert report.statuses == ["ok"] and report[0].norm == pytest.approx(math.sqrt(20.0))


def test_indexed_slices_from_embedding_layer():
    layer = keras.layers.Embedding(5, 3)
    layer.build((None,))
    grads = _grads(lambda: tf.reduce_sum(layer(tf.constant([0, 2]))), layer.trainable_weights)
    report = gradient_report(grads, layer.trainable_weights)
    assert report.statuses == ["ok"] and report[0].name.endswith("embeddings")


def test_keras_variable_names_use_path():
    layer = keras.layers.Dense(2, name="head")
    layer.build((None, 3))
    report = gradient_report([None, None], layer.trainable_weights)
    assert report.names == ["head/kernel", "head/bias"]


def test_mismatched_lengths_say_what_was_expected(variables):
    with pytest.raises(ValueError, match="2 gradients for 4 variables"):
        gradient_report([None, None], variables)


@pytest.mark.parametrize("bad", [None, tf.constant(1.0), np.ones(3), {"a": None}])
def test_non_list_inputs_are_rejected_clearly(bad, variables):
    with pytest.raises(TypeError, match="list"):
        gradient_report(bad, variables[:1])


def test_integer_gradient_is_rejected(variables):
    with pytest.raises(TypeError, match="floating"):
        gradient_report([tf.constant([1, 2])], variables[:1])


def test_status_queries_reject_unknown_status(variables):
    report = gradient_report([None], variables[:1])
    assert isinstance(report, GradientReport)
    with pytest.raises(ValueError, match="one of"):
        report.all("broken")


# --- gradients_of ------------------------------------------------------------------------------


@pytest.fixture
def dense():
    """A Keras layer (Keras 3 variables) and an unrelated Keras variable the loss never uses."""
    layer = keras.layers.Dense(2, name="head")
    layer.build((None, 3))
    other = keras.layers.Dense(1, name="unused")
    other.build((None, 2))
    return layer, other


def test_gradients_of_gives_zeros_for_unconnected_keras_variables(dense):
    layer, other = dense
    variables = [*layer.trainable_variables, *other.trainable_variables]
    with tf.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(layer(tf.ones((1, 3))))
    # TF 2.21 / Keras 3.15: a Keras variable's dtype is a string, and ZERO needs a DType.
    with pytest.raises(AttributeError, match="_type_enum"):
        tape.gradient(loss, variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    zeros = gradients_of(tape, loss, variables, tf.UnconnectedGradients.ZERO)
    assert gradient_report(zeros, variables).statuses == ["ok", "ok", "zero", "zero"]
    nones = gradients_of(tape, loss, variables)
    assert gradient_report(nones, variables).statuses == ["ok", "ok", "none", "none"]
    plain = tape.gradient(loss, variables)
    assert max_abs_diff(list(zeros[:2]), list(plain[:2])) == 0
    del tape


# --- max_abs_diff ------------------------------------------------------------------------------


def test_max_abs_diff_of_tensors_and_lists():
    assert max_abs_diff(tf.constant([1.0, -2.0]), np.array([1.5, 2.0])) == 4.0
    assert max_abs_diff([tf.ones(2), tf.zeros(3)], [tf.zeros(2), tf.zeros(3)]) == 1.0
    assert max_abs_diff((tf.ones(2),), (tf.ones(2),)) == 0.0
    assert max_abs_diff([], []) == 0.0
    # float64 arithmetic: a float32 roundoff-sized difference is not lost
    assert max_abs_diff(tf.constant(1.0), tf.constant(1.0 + 2**-23)) == 2**-23


def test_max_abs_diff_refuses_none_and_lists_of_different_lengths():
    with pytest.raises(ValueError, match="None"):
        max_abs_diff(None, tf.ones(1))
    with pytest.raises(ValueError, match="None"):
        max_abs_diff([tf.ones(1), None], [tf.ones(1), tf.ones(1)])
    with pytest.raises(ValueError, match="one length"):
        max_abs_diff([tf.ones(1)], [])


def test_max_abs_diff_of_complex_tensors_sees_the_imaginary_part():
    a = tf.constant([1 + 2j, 3 - 1j], tf.complex64)
    assert max_abs_diff(a, a) == 0
    assert max_abs_diff(a, tf.math.conj(a)) == 4.0
    assert max_abs_diff(tf.constant([3 + 4j], tf.complex64), np.zeros(1)) == 5.0


# -- names for tensor sources, and a hint for every row that is not ok ------------------------
def test_names_for_tensor_sources_and_bad_names():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(x * x)
    report = gradient_report([tape.gradient(loss, x)], [x], names=["input"])
    assert report.names == ["input"] and report.all("ok")
    assert gradient_report([None], [x]).names == ["source_0"]  # an eager tensor has no name
    for names in (["a", "b"], [""], [3]):
        with pytest.raises(ValueError, match="one per source"):
            gradient_report([None], [x], names=names)


def test_no_hint_column_when_every_row_is_ok(variables):
    a = variables[0]
    report = gradient_report(_grads(lambda: tf.reduce_sum(a), [a]), [a])
    assert report.hints == [""] and "hint" not in report.to_text()
    assert "hint" not in report._repr_html_().lower()


def test_a_hint_names_the_cause_family_of_each_row_that_is_not_ok(variables):
    a, b, c, unused = variables
    frozen = tf.Variable(1.0, trainable=False, name="frozen")
    steps = tf.Variable(2, name="steps")
    x = tf.constant(1.0)
    grads = [tf.zeros(2), tf.fill((3, 2), np.nan), None, None, None, None, None]
    sources = [a, b, c, unused, frozen, steps, x]
    report = gradient_report(grads, sources)
    hints = dict(zip(report.names, report.hints))
    assert "tf.sign" in hints["a"] and "NaN/inf" in hints["b"]
    assert "not used on the way" in hints["c"] and "not used on the way" in hints["unused"]
    assert "trainable_variables" in hints["frozen"] and "integer" in hints["steps"]
    assert "tape.watch" in hints["source_6"]
    assert "hint" in report.to_text() and ">hint</th>" in report._repr_html_()
    every_none = gradient_report([None, None], [a, c])
    assert all(h.startswith("cut: NumPy") for h in every_none.hints)


def test_a_hint_shared_by_every_row_is_said_once_under_the_table(variables):
    """The same long hint on every row would repeat and wrap: the HTML says it once, under
    the table; rows with different hints keep a column (the text form keeps its column)."""
    a, b, c, unused = variables
    report = gradient_report([tf.ones(2), None, None, None], [a, b, c, unused])
    markup = report._repr_html_()
    hint = report.hints[1]
    assert ">hint</th>" not in markup and markup.count(html.escape(hint, quote=False)) == 1
    assert report.hint_lines() == [f"Hint for the 3 none rows: {hint}"]
    assert "Hint for every row:" in gradient_report([None] * 2, [a, c])._repr_html_()
    assert (
        "Hint for b (zero):"
        in gradient_report([tf.ones(2), tf.zeros((3, 2))], [a, b])._repr_html_()
    )
    forced = report.to_html(hint_column=True, summary=False)
    assert ">hint</th>" in forced and report.summary() not in forced
    assert "hint" in report.to_text()  # unchanged: the text keeps its column


def test_headers_and_shapes_never_wrap(variables):
    a, b, c, unused = variables
    markup = gradient_report([tf.ones(2), None, None, None], [a, b, c, unused])._repr_html_()
    cells = re.findall(r"<t([hd]) style='([^']*)'>(.*?)</t[hd]>", markup)
    assert len(cells) == 4 * 5
    assert all("white-space:nowrap" in style for _, style, _ in cells)
    assert ("d", "text-align:left;white-space:nowrap", "(3, 2)") in cells


# --- op_gradient: what gradient one op has (notebook 05's table) -------------------------------


@pytest.mark.parametrize("traced", [False, True])
def test_op_gradient_tells_none_zero_ok_and_a_missing_registration(traced):
    from helpers.diagnosis import op_gradient

    w = tf.Variable([0.4, -1.3, 2.6])
    assert op_gradient(tf.round, w, traced).status == "none"
    assert op_gradient(tf.sign, w, traced).status == "zero"
    assert op_gradient(tf.square, w, traced).status == "ok"
    result = op_gradient(lambda v: tf.unique(v).y, w, traced)
    assert result.status is None
    assert result.error == ("StagingError" if traced else "LookupError")
    assert "gradient registry has no entry for" in result.message
    assert str(result) == f"raises {result.error}"
    assert str(op_gradient(tf.square, w)) == "ok" and op_gradient(tf.square, w).message == ""


def test_op_gradient_rejects_bad_inputs():
    from helpers.diagnosis import op_gradient

    with pytest.raises(TypeError, match="function of one tensor"):
        op_gradient("tf.round", tf.Variable([1.0]))
    with pytest.raises(TypeError, match="tf.Variable"):
        op_gradient(tf.round, tf.constant([1.0]))
