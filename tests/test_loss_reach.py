"""helpers.loss_reach: how far back from a voicing loss the gradient reaches (notebook 04)."""

from __future__ import annotations

import numpy as np
import pytest

import helpers  # noqa: F401
from helpers.denoiser import make_step_model
from helpers.loss_reach import frames_reached, locate_break
from helpers.reproducibility import make_deterministic
from helpers.voicing_loss import cond_loop_voicing_loss, masked_voicing_loss, voicing_masks


def test_the_loop_reaches_exactly_the_masked_frames(clips, model):
    for name in ("mixed", "silent"):
        example = clips[name]
        masks = voicing_masks(example.labels)
        reached = frames_reached(model, example)
        assert reached.shape == (example.num_frames,) and reached.dtype == bool
        assert np.array_equal(reached, masks.harmonic | masks.formant)
    assert not frames_reached(model, clips["silent"]).any()


def test_the_masked_loss_also_reaches_the_frames_that_are_not_voiced(clips, model):
    example = clips["mixed"]
    masks = voicing_masks(example.labels)
    voicing_terms = masks.harmonic | masks.formant
    assert np.array_equal(frames_reached(model, example, masked_voicing_loss),
                          voicing_terms | masks.silence)
    assert np.array_equal(frames_reached(model, example, masked_voicing_loss,
                                         silence_weight=0.0), voicing_terms)
    assert masks.silence.any() and not (voicing_terms | masks.silence).all()  # a real test


def test_locate_break_names_the_loss_as_the_break(clips, model):
    silent = locate_break(model, clips["silent"])
    assert silent.all("none") and silent.names[-2:] == ["estimate (model output)",
                                                        "|STFT| of estimate"]
    assert len(silent) == len(model.trainable_variables) + 2
    assert locate_break(model, clips["voiced"]).all("ok")
    assert locate_break(model, clips["silent"], masked_voicing_loss).all("ok")
    assert locate_break(model, clips["silent"], masked_voicing_loss, silence_weight=0.0).all(
        "zero")


def test_locate_break_works_for_the_gru_step_model(clips):
    make_deterministic(0)
    step_model = make_step_model(units=4)
    assert locate_break(step_model, clips["silent"]).all("none")
    assert locate_break(step_model, clips["mixed"]).all("ok")


def test_unknown_losses_are_refused(clips, model):
    def other_loss(reference, estimate, labels):
        return cond_loop_voicing_loss(reference, estimate, labels)

    with pytest.raises(ValueError, match="cond_loop_voicing_loss and masked_voicing_loss"):
        locate_break(model, clips["voiced"], other_loss)


def test_frames_reached_refuses_unknown_losses_clearly(clips, model):
    with pytest.raises(ValueError, match="cond_loop_voicing_loss and masked_voicing_loss"):
        frames_reached(model, clips["voiced"], lambda r, e, lab: masked_voicing_loss(r, e, lab))

