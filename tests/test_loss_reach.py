"""helpers.loss_reach and the probe on a voicing loss: which frames it reaches, where its path
breaks (notebook 04)."""

from __future__ import annotations

import numpy as np
import pytest

import helpers  # noqa: F401
from helpers.denoiser import enhance, make_gru_step_model
from helpers.loss_reach import frames_reached
from helpers.probe import LOSS, GradientProbe
from helpers.reproducibility import make_deterministic
from helpers.voicing_loss import (
    cond_loop_loss_on_magnitudes,
    magnitudes,
    masked_loss_on_magnitudes,
    masked_voicing_loss,
    voicing_masks,
)


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


def _probe_the_loss(model, example, core=cond_loop_loss_on_magnitudes, **kwargs):
    """Notebook 04's step 1: the probe with a mark on the estimate and on its magnitudes."""
    with GradientProbe() as probe:
        estimate = probe.mark("estimate", enhance(model, example.audio))
        reference_mag, estimate_mag = magnitudes(example.clean, estimate)
        probe.mark("|STFT| of estimate", estimate_mag)
        loss = core(reference_mag, estimate_mag, example.labels, **kwargs)
    variables = model.trainable_variables
    return probe.locate(loss, variables), probe.report(loss, variables)


def test_the_probe_names_the_loss_as_the_break(clips, model):
    where, report = _probe_the_loss(model, clips["silent"])
    assert where.broken_between == ("|STFT| of estimate", LOSS) and report.all("none")
    assert len(where["estimate"].variables) == len(model.trainable_variables)
    where, report = _probe_the_loss(model, clips["voiced"])
    assert where.intact and report.all("ok")
    where, report = _probe_the_loss(model, clips["silent"], masked_loss_on_magnitudes)
    assert where.intact and report.all("ok")
    where, report = _probe_the_loss(model, clips["silent"], masked_loss_on_magnitudes,
                                    silence_weight=0.0)
    assert where.intact and report.all("zero")


def test_the_probe_on_the_gru_step_model(clips):
    make_deterministic(0)
    step_model = make_gru_step_model(units=4)
    where, report = _probe_the_loss(step_model, clips["silent"])
    assert where.broken_between == ("|STFT| of estimate", LOSS) and report.all("none")
    assert _probe_the_loss(step_model, clips["mixed"])[0].intact


def test_frames_reached_refuses_unknown_losses_clearly(clips, model):
    with pytest.raises(ValueError, match="cond_loop_voicing_loss and masked_voicing_loss"):
        frames_reached(model, clips["voiced"], lambda r, e, lab: masked_voicing_loss(r, e, lab))

