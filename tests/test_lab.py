"""helpers.lab: the gradient lab's settings and computation without its view (the view,
``helpers.widgets.GradientLab``, is tested in test_widgets.py)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from helpers.dataset import ClipExcerpt
from helpers.lab import (
    LAB_CLIPS,
    LAB_LOSSES,
    LabComputation,
    apply_policy,
    lab_examples,
    loss_knobs,
    make_setting,
)


@pytest.fixture(scope="module")
def computation():
    return LabComputation(clips={"silent": LAB_CLIPS["silent"]})


def test_a_setting_keeps_only_the_knobs_its_loss_takes():
    per_frame = make_setting("silent", "per-frame (question)", else_scale="1e-10",
                             silence_weight="3")
    masked = make_setting("silent", "masked", else_scale="1e-10", silence_weight="3")
    assert (per_frame.else_scale, per_frame.silence_weight) == ("1e-10", None)
    assert (masked.else_scale, masked.silence_weight) == (None, "3")
    assert loss_knobs(LAB_LOSSES["masked"]) == ("silence_weight",)
    with pytest.raises(ValueError, match="mode must be one of 'eager', 'tf.function'; got"):
        make_setting("silent", "masked", mode="graph")


def test_a_clip_excerpt_gives_its_frames_under_the_labs_name():
    clip = lab_examples({"mine": ClipExcerpt("vowel_a", 10, 26)})["mine"]
    assert clip.name == "mine" and clip.num_frames == 16 and clip.labels.voiced.all()
    assert not np.array_equal(clip.audio, clip.clean)  # seeded noise added


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
    with pytest.raises(ValueError, match="policy must be one of 'None', 'zeros', 'skip'"):
        apply_policy(grads, variables, "ignore")
