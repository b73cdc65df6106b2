"""helpers.lab.computation: the gradient lab's settings and computation without its view (the view,
``helpers.lab.GradientLab``, is tested in test_widgets.py)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from helpers.lab.computation import LabComputation, apply_policy
from helpers.lab.settings import LAB_CLIPS


@pytest.fixture(scope="module")
def computation():
    return LabComputation(clips={"silent": LAB_CLIPS["silent"]})


def test_the_computation_caches_each_setting_and_runs_without_a_view(computation):
    first = computation.result_for("silent", "per-frame (question)")
    assert computation.result_for("silent", "per-frame (question)") is first
    assert first.report.all("none") and first.adam.outcome == "raises"
    zeros = computation.result_for("silent", "per-frame (question)", policy="zeros")
    assert zeros.report.all("zero") and zeros.adam.outcome == "step"
    assert computation.tracing_count() == 0  # eager only so far


def test_apply_policy_turns_none_into_zeros_only_for_zeros():
    variables = [tf.Variable(tf.ones((2, 3))), tf.Variable(tf.ones(4))]
    grads = [None, tf.ones(4)]
    zeros = apply_policy(grads, variables, "zeros")
    assert zeros[0].shape == (2, 3) and not np.any(zeros[0].numpy()) and zeros[1] is grads[1]
    assert apply_policy(grads, variables, "skip") == grads
    with pytest.raises(ValueError, match="policy must be one of 'keep', 'zeros', 'skip'"):
        apply_policy(grads, variables, "ignore")
