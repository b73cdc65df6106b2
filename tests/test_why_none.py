"""helpers.diagnosis.why_none: the one place that decides why a gradient is None, for the gradient
report's hint column and for the locator's causes (they cannot disagree)."""

from __future__ import annotations

import keras
import pytest
import tensorflow as tf

from helpers.diagnosis import GradientProbe, gradient_report
from helpers.diagnosis.why_none import HINTS, why_none

FLOAT = tf.Variable(1.0, name="w")
FROZEN = tf.Variable(1.0, trainable=False, name="frozen")
COUNT = tf.Variable(2, name="count")


@pytest.mark.parametrize(
    "source, watched, every_none, cause",
    [
        (FROZEN, None, False, "untrainable"),
        (FROZEN, True, False, "cut"),  # watched on purpose: then it is a plain variable
        (COUNT, None, False, "integer"),
        (tf.constant([1, 2]), True, False, "integer"),
        (tf.constant(1.0), None, False, "unwatched"),
        (tf.constant(1.0), False, False, "unwatched"),
        (tf.constant(1.0), True, False, "cut"),
        (FLOAT, None, True, "cut"),
        (FLOAT, None, False, "unused"),
        (FLOAT, False, False, "unread"),
        (FLOAT, True, False, "cut"),
        (keras.Variable(1.0, trainable=False), None, False, "untrainable"),
    ],
)
def test_the_causes(source, watched, every_none, cause):
    assert why_none(source, watched=watched, every_none=every_none) == cause
    assert HINTS[cause]


def test_report_hints_and_probe_causes_come_from_the_same_decision():
    x = tf.constant([1.0, 2.0])
    with GradientProbe() as probe:
        loss = tf.reduce_sum(x * FLOAT) + tf.cast(COUNT, tf.float32)
    sources = [FLOAT, x, COUNT, FROZEN]
    names = ["w", "x", "count", "frozen"]
    where = probe.locate(loss, sources, names=names)
    report = probe.report(loss, sources, names=names)
    assert where.causes == {"x": "unwatched", "count": "integer", "frozen": "untrainable"}
    for name, hint in zip(names, report.hints):
        if name in where.causes:
            assert hint == HINTS[where.causes[name]]
    plain = gradient_report([None, None], [FLOAT, x])
    assert plain.hints == [HINTS["cut"], HINTS["unwatched"]]
