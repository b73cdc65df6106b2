"""helpers.lab.settings: the gradient lab's clips, losses, knobs and one setting of its
controls (bad input to the lab as a whole is tested in test_widgets.py)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.audio import ClipExcerpt
from helpers.lab.settings import LAB_LOSSES, lab_examples, loss_knobs, make_setting


def test_a_setting_keeps_only_the_knobs_its_loss_takes():
    per_frame = make_setting(
        "silent", "per-frame (question)", else_scale="1e-10", silence_weight="3"
    )
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
