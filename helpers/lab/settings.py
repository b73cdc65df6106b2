"""The gradient lab's settings: its clips, losses and knobs (the course's by default, or a
learner's own, checked here), and one position of its controls (``LabSetting``).
``helpers.lab.computation`` computes what a setting gives; ``helpers.lab.view`` draws the controls.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np

from helpers.audio import Clip, ClipExcerpt, FrameLabels, check_audio, clip_excerpt, make_example
from helpers.course import check_choice, is_int
from helpers.models import is_step_model
from helpers.voicing import cond_loop_voicing_loss, masked_voicing_loss

# Clip choices: excerpts of course clips. 16 frames = 0.24 s keeps the eager per-frame loop
# well under a second.
LAB_CLIPS: dict[str, ClipExcerpt] = {
    "voiced": ClipExcerpt("vowel_a", 10, 26),
    "unvoiced": ClipExcerpt("fricative_s", 4, 20),
    "silent": ClipExcerpt("silence", 4, 20),
    "real": ClipExcerpt("arctic_a0009", 30, 46),
}
LAB_LOSSES: dict[str, Callable] = {
    "per-frame (question)": cond_loop_voicing_loss,
    "masked": masked_voicing_loss,
}
MODES = ("eager", "tf.function")
# The hack's scale, log-spaced from 1e-12 to 1 (every second decade; 1e-10 is the answer's).
ELSE_SCALES: dict[str, float | None] = {
    "off": None,
    "1e-12": 1e-12,
    "1e-10": 1e-10,
    "1e-8": 1e-8,
    "1e-6": 1e-6,
    "1e-4": 1e-4,
    "1e-2": 1e-2,
    "1": 1.0,
}
SILENCE_WEIGHTS: dict[str, float] = {
    "0": 0.0,
    "0.1": 0.1,
    "0.3": 0.3,
    "1": 1.0,
    "3": 3.0,
    "10": 10.0,
}
POLICIES = ("keep", "zeros", "skip")  # keep the tape's None, make them zeros, skip the step
# Keyword arguments of a loss that the lab sets from a slider, with each slider's options.
KNOBS: dict[str, dict[str, Any]] = {"else_scale": ELSE_SCALES, "silence_weight": SILENCE_WEIGHTS}
# Every control, in the order of the summary line.
CONTROL_NAMES = ("clip", "loss", "else_scale", "silence_weight", "mode", "policy")


def lab_examples(clips: Mapping[str, Any] | None = None) -> dict[str, Clip]:
    """The lab's clips as ``Clip``s (noisy input, clean reference, labels), by name.

    Each value may be a ``helpers.audio.ClipExcerpt`` ``(clip name, start frame, stop frame)``
    (like ``LAB_CLIPS``), a ``(clean audio, FrameLabels)`` pair (seeded noise is added by
    ``make_example``), or a ready ``helpers.audio.Clip``.
    """
    clips = LAB_CLIPS if clips is None else clips
    if not isinstance(clips, Mapping) or not clips:
        raise TypeError(
            f"clips must be a non-empty dict of name -> clip; got "
            f"{type(clips).__name__}{'' if clips else ' (empty)'}."
        )
    return {_check_name(name, "clip"): _as_example(name, value) for name, value in clips.items()}


def _as_example(name: str, value: Any) -> Clip:
    if isinstance(value, Clip):
        _check_clip_audio(name, value.audio, value.labels, "audio")
        _check_clip_audio(name, value.clean, value.labels, "clean")
        return value
    if (
        isinstance(value, tuple)
        and len(value) == 3
        and isinstance(value[0], str)
        and all(is_int(v) for v in value[1:])
    ):
        return dataclasses.replace(clip_excerpt(ClipExcerpt(*value)), name=name)
    if isinstance(value, tuple) and len(value) == 2:
        audio, labels = value
        _check_clip_audio(name, audio, labels, "audio")
        return make_example(name, np.asarray(audio, dtype=np.float32), labels, seed=0)
    raise TypeError(
        f"clip {name!r} must be (clean audio, FrameLabels), a helpers.audio.ClipExcerpt "
        f"(course clip name, start frame, stop frame) or a helpers.audio.Clip; got "
        f"{type(value).__name__}."
    )


def _check_clip_audio(name: str, audio: Any, labels: Any, what: str) -> None:
    if not isinstance(labels, FrameLabels):
        raise TypeError(
            f"clip {name!r}: labels must be helpers.audio.FrameLabels (one entry "
            f"per frame); got {type(labels).__name__}."
        )
    if not hasattr(audio, "shape"):
        audio = np.asarray(audio)
    check_audio(audio, f"clip {name!r} {what} (1-D float audio)")
    labels.check_fits(int(audio.shape[0]), labels.sample_rate)


def _check_name(name: Any, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"every {what} name must be a non-empty string; got {name!r}.")
    return name


def check_losses(losses: Mapping[str, Callable] | None = None) -> dict[str, Callable]:
    """The lab's losses by name; each is called ``loss(reference, estimate, labels)`` (the
    course's call shape, ``helpers.voicing.loss``) and returns a scalar tensor."""
    losses = LAB_LOSSES if losses is None else losses
    if not isinstance(losses, Mapping) or not losses:
        raise TypeError(
            f"losses must be a non-empty dict of name -> loss function; got "
            f"{type(losses).__name__}{'' if losses else ' (empty)'}."
        )
    for name, fn in losses.items():
        _check_name(name, "loss")
        if not callable(fn):
            raise TypeError(
                f"loss {name!r} must be callable as loss(reference, estimate, "
                f"labels); got {type(fn).__name__}."
            )
        try:
            inspect.signature(fn).bind(None, None, None)
        except TypeError as error:
            raise TypeError(
                f"loss {name!r} must take three arguments, (reference, estimate, labels): {error}."
            ) from error
        except ValueError:  # a builtin without a signature: let it run
            pass
    return dict(losses)


def loss_knobs(loss_fn: Callable) -> tuple[str, ...]:
    """The lab's knobs (``else_scale``, ``silence_weight``) that ``loss_fn`` takes by name."""
    try:
        parameters = inspect.signature(loss_fn).parameters
    except ValueError:
        return ()
    return tuple(
        k
        for k in KNOBS
        if k in parameters
        and parameters[k].kind
        in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    )


def check_model(model: Any) -> keras.Model:
    """A Keras denoiser ``enhance`` can run (a step model or a waveform model), with
    trainable variables."""
    is_step_model(model)  # raises TypeError for anything but a Keras model
    if not model.trainable_variables:
        raise ValueError("the model has no trainable variables: there is no gradient to show.")
    return model


@dataclass(frozen=True)
class LabSetting:
    """One position of the controls. Knobs the loss does not take are ``None``."""

    clip: str
    loss: str
    mode: str = "eager"
    policy: str = "keep"
    else_scale: str | None = None
    silence_weight: str | None = None

    def values(self) -> dict[str, str]:
        """``name -> value`` of every control that applies, in ``CONTROL_NAMES`` order."""
        return {
            name: getattr(self, name) for name in CONTROL_NAMES if getattr(self, name) is not None
        }

    def describe(self) -> str:
        return ", ".join(f"{name}={value}" for name, value in self.values().items())

    def loss_kwargs(self) -> dict[str, Any]:
        return {k: KNOBS[k][getattr(self, k)] for k in KNOBS if getattr(self, k) is not None}


def make_setting(
    clip: str,
    loss: str,
    mode: str = "eager",
    policy: str = "keep",
    else_scale: str = "off",
    silence_weight: str = "1",
    *,
    clips: Mapping[str, Any] | None = None,
    losses: Mapping[str, Callable] | None = None,
) -> LabSetting:
    """Check every value against its options; drop the knobs the loss does not take."""
    losses = LAB_LOSSES if losses is None else losses
    clip_names = LAB_CLIPS if clips is None else clips
    for value, options, what in (
        (clip, clip_names, "clip"),
        (loss, losses, "loss"),
        (mode, MODES, "mode"),
        (policy, POLICIES, "policy"),
    ):
        check_choice(value, options, what)
    knobs = loss_knobs(losses[loss])
    chosen = {"else_scale": else_scale, "silence_weight": silence_weight}
    for name, value in chosen.items():
        check_choice(value, KNOBS[name], name)
    return LabSetting(
        clip,
        loss,
        mode,
        policy,
        **{name: (value if name in knobs else None) for name, value in chosen.items()},
    )
