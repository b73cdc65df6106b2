"""The gradient lab's settings and computation, without a view (``helpers.widgets`` draws
it): the lab's clips, losses and knobs, one setting of its controls (``LabSetting``), and
``LabComputation``, which gives the loss, the gradient report (after a policy for missing
gradients) and the Adam panel (``AdamStep``) of any setting, cached per setting and traced
once per clip, loss and knob value inside ``tf.function``.
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from helpers.audio import check_audio
from helpers.checks import check_choice, is_int
from helpers.dataset import Clip, ClipExcerpt, clip_excerpt, make_example
from helpers.denoiser import enhance, is_step_model, make_gru_step_model
from helpers.gradients import GradientReport, gradient_report, gradients_of
from helpers.labels import FrameLabels
from helpers.printing import sig
from helpers.reproducibility import make_deterministic
from helpers.training import TrainingState, restore_weights, snapshot
from helpers.voicing_loss import cond_loop_voicing_loss, masked_voicing_loss

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
    "off": None, "1e-12": 1e-12, "1e-10": 1e-10, "1e-8": 1e-8, "1e-6": 1e-6, "1e-4": 1e-4,
    "1e-2": 1e-2, "1": 1.0}
SILENCE_WEIGHTS: dict[str, float] = {
    "0": 0.0, "0.1": 0.1, "0.3": 0.3, "1": 1.0, "3": 3.0, "10": 10.0}
POLICIES = ("None", "zeros", "skip")
# Keyword arguments of a loss that the lab sets from a slider, with each slider's options.
KNOBS: dict[str, dict[str, Any]] = {"else_scale": ELSE_SCALES,
                                    "silence_weight": SILENCE_WEIGHTS}
# Every control, in the order of the summary line.
CONTROL_NAMES = ("clip", "loss", "else_scale", "silence_weight", "mode", "policy")

ADAM_LEARNING_RATE = 1e-3  # notebook 04's
ADAM_WARMUP_STEPS = 5  # "after 5 voiced steps", as in notebook 04



def lab_examples(clips: Mapping[str, Any] | None = None) -> dict[str, Clip]:
    """The lab's clips as ``Clip``s (noisy input, clean reference, labels), by name.

    Each value may be a ``helpers.dataset.ClipExcerpt`` ``(clip name, start frame, stop frame)``
    (like ``LAB_CLIPS``), a ``(clean audio, FrameLabels)`` pair (seeded noise is added by
    ``make_example``), or a ready ``helpers.dataset.Clip``.
    """
    clips = LAB_CLIPS if clips is None else clips
    if not isinstance(clips, Mapping) or not clips:
        raise TypeError(f"clips must be a non-empty dict of name -> clip; got "
                        f"{type(clips).__name__}{'' if clips else ' (empty)'}.")
    return {_check_name(name, "clip"): _as_example(name, value) for name, value in clips.items()}


def _as_example(name: str, value: Any) -> Clip:
    if isinstance(value, Clip):
        _check_clip_audio(name, value.audio, value.labels, "audio")
        _check_clip_audio(name, value.clean, value.labels, "clean")
        return value
    if (isinstance(value, tuple) and len(value) == 3 and isinstance(value[0], str)
            and all(is_int(v) for v in value[1:])):
        return dataclasses.replace(clip_excerpt(ClipExcerpt(*value)), name=name)
    if isinstance(value, tuple) and len(value) == 2:
        audio, labels = value
        _check_clip_audio(name, audio, labels, "audio")
        return make_example(name, np.asarray(audio, dtype=np.float32), labels, seed=0)
    raise TypeError(
        f"clip {name!r} must be (clean audio, FrameLabels), a helpers.dataset.ClipExcerpt "
        f"(course clip name, start frame, stop frame) or a helpers.dataset.Clip; got "
        f"{type(value).__name__}.")


def _check_clip_audio(name: str, audio: Any, labels: Any, what: str) -> None:
    if not isinstance(labels, FrameLabels):
        raise TypeError(f"clip {name!r}: labels must be helpers.labels.FrameLabels (one entry "
                        f"per frame); got {type(labels).__name__}.")
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
    course's call shape, ``helpers.voicing_loss``) and returns a scalar tensor."""
    losses = LAB_LOSSES if losses is None else losses
    if not isinstance(losses, Mapping) or not losses:
        raise TypeError(f"losses must be a non-empty dict of name -> loss function; got "
                        f"{type(losses).__name__}{'' if losses else ' (empty)'}.")
    for name, fn in losses.items():
        _check_name(name, "loss")
        if not callable(fn):
            raise TypeError(f"loss {name!r} must be callable as loss(reference, estimate, "
                            f"labels); got {type(fn).__name__}.")
        try:
            inspect.signature(fn).bind(None, None, None)
        except TypeError as error:
            raise TypeError(f"loss {name!r} must take three arguments, (reference, estimate, "
                            f"labels): {error}.") from error
        except ValueError:  # a builtin without a signature: let it run
            pass
    return dict(losses)


def loss_knobs(loss_fn: Callable) -> tuple[str, ...]:
    """The lab's knobs (``else_scale``, ``silence_weight``) that ``loss_fn`` takes by name."""
    try:
        parameters = inspect.signature(loss_fn).parameters
    except ValueError:
        return ()
    return tuple(k for k in KNOBS if k in parameters
                 and parameters[k].kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                            inspect.Parameter.KEYWORD_ONLY))


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
    policy: str = "None"
    else_scale: str | None = None
    silence_weight: str | None = None

    def values(self) -> dict[str, str]:
        """``name -> value`` of every control that applies, in ``CONTROL_NAMES`` order."""
        return {name: getattr(self, name) for name in CONTROL_NAMES
                if getattr(self, name) is not None}

    def describe(self) -> str:
        return ", ".join(f"{name}={value}" for name, value in self.values().items())

    def loss_kwargs(self) -> dict[str, Any]:
        return {k: KNOBS[k][getattr(self, k)] for k in KNOBS if getattr(self, k) is not None}


def make_setting(clip: str, loss: str, mode: str = "eager", policy: str = "None",
                 else_scale: str = "off", silence_weight: str = "1", *,
                 clips: Mapping[str, Any] | None = None,
                 losses: Mapping[str, Callable] | None = None) -> LabSetting:
    """Check every value against its options; drop the knobs the loss does not take."""
    losses = LAB_LOSSES if losses is None else losses
    clip_names = LAB_CLIPS if clips is None else clips
    for value, options, what in ((clip, clip_names, "clip"), (loss, losses, "loss"),
                                 (mode, MODES, "mode"), (policy, POLICIES, "policy")):
        check_choice(value, options, what)
    knobs = loss_knobs(losses[loss])
    chosen = {"else_scale": else_scale, "silence_weight": silence_weight}
    for name, value in chosen.items():
        check_choice(value, KNOBS[name], name)
    return LabSetting(clip, loss, mode, policy,
                      **{name: (value if name in knobs else None)
                         for name, value in chosen.items()})


@dataclass(frozen=True)
class AdamStep:
    """What one Adam step with a setting's gradients does, after ``ADAM_WARMUP_STEPS`` steps
    on a voiced clip: ``outcome`` is ``"step"`` (``fraction`` of a voiced step), ``"raises"``
    (``message``: Keras refused every-``None`` gradients) or ``"skipped"`` (policy skip)."""

    outcome: str
    fraction: float
    voiced_move: float
    warmup: str
    message: str = ""

    def describe(self) -> str:
        head = f"Adam after {ADAM_WARMUP_STEPS} steps on {self.warmup}: one more step"
        if self.outcome == "raises":
            return (f"{head} raises {self.message}; the weights do not move (a training loop "
                    "stops here)")
        if self.outcome == "skipped":
            return (f"{head} is skipped (no gradient is non-zero): the weights and Adam's "
                    "state stay as they were, 0% of a voiced step")
        return (f"{head} with these gradients moves the weights {self.fraction:.0%} as far as "
                f"a voiced step (mean |dw| {sig(self.voiced_move)})")


@dataclass(frozen=True)
class LabResult:
    """What one lab setting gives: the loss value and the gradient report (after the
    policy), and, in the lab, the Adam panel."""

    setting: LabSetting
    loss: float
    report: GradientReport
    adam: AdamStep | None = None

    def describe(self) -> str:
        """The summary line: the setting, then the loss value and the report's summary."""
        return f"{self.setting.describe()}: loss {sig(self.loss)}; {self.report.summary()}"


def lab_model(seed: int = 0) -> keras.Model:
    """A fresh, untrained step model with repeatable weights."""
    make_deterministic(seed)
    return make_gru_step_model()


def _loss_and_grads(model: keras.Model, example: Clip, loss_fn: Callable,
                    loss_kwargs: dict[str, Any]) -> tuple[tf.Tensor, list]:
    """The loss and the tape's gradients (``None`` where the loss does not reach)."""
    variables = model.trainable_variables
    clean = tf.constant(example.clean)
    with tf.GradientTape() as tape:
        estimate = enhance(model, example.audio)
        loss = loss_fn(clean, estimate, example.labels, **loss_kwargs)
    loss = tf.convert_to_tensor(loss)
    if loss.shape.rank != 0 or not loss.dtype.is_floating:
        raise ValueError(f"a lab loss must return a float scalar; got shape "
                         f"{tuple(loss.shape)}, dtype {loss.dtype.name}.")
    return loss, gradients_of(tape, loss, variables)


def apply_policy(grads: list, variables: list, policy: str) -> list:
    """``zeros``: every ``None`` gradient becomes zeros of its variable's shape; ``None`` and
    ``skip`` keep the tape's gradients (skip acts on the update, not on the gradients)."""
    if check_choice(policy, POLICIES, "policy") != "zeros":
        return list(grads)
    return [tf.zeros(v.shape, v.dtype) if g is None else g for g, v in zip(grads, variables)]


def _bind(model: keras.Model, example: Clip, loss_fn: Callable,
          fixed: dict[str, Any]) -> Callable[..., tuple[tf.Tensor, list]]:
    """``compute(**knobs)``: the loss and gradients with ``fixed`` and ``knobs`` (tensors
    inside ``tf.function``) as the loss's keyword arguments."""
    def compute(**knobs):
        return _loss_and_grads(model, example, loss_fn, {**fixed, **knobs})
    return compute


def _moves_anything(grads: list) -> bool:
    """Whether any gradient is there and non-zero (else an update has nothing to do)."""
    return any(g is not None and bool(tf.reduce_any(g != 0)) for g in grads)


def _tensor_knobs(loss_fn: Callable) -> tuple[str, ...]:
    """Knobs ``loss_fn`` can take as a tensor inside ``tf.function`` (no Python decision on
    their value): the question's loss multiplies by ``else_scale``, whatever it is."""
    base = loss_fn.func if isinstance(loss_fn, partial) else loss_fn
    return ("else_scale",) if base is cond_loop_voicing_loss else ()



class LabComputation:
    """The lab without its view: ``result_for`` gives any setting's ``LabResult``, cached.

    ``LabComputation(model=None, losses=None, clips=None)``: a Keras denoiser (default: a
    fresh ``lab_model()``), losses ``{name: loss(reference, estimate, labels)}`` (default
    ``LAB_LOSSES``) and clips (default ``LAB_CLIPS``; see ``lab_examples``). It never changes
    the model's weights (the Adam panel puts them back).
    """

    def __init__(self, model: keras.Model | None = None, *,
                 losses: Mapping[str, Callable] | None = None,
                 clips: Mapping[str, Any] | None = None):
        self.model = check_model(model) if model is not None else lab_model()
        self.losses = check_losses(losses)
        self.examples = lab_examples(clips)
        self._graphs: dict[tuple, Callable] = {}
        self._grads: dict[tuple, tuple[float, list]] = {}
        self._results: dict[LabSetting, LabResult] = {}
        self._adam: tuple[TrainingState, float, str] | None = None

    def setting(self, clip: str, loss: str, mode: str = "eager", policy: str = "None",
                else_scale: str = "off", silence_weight: str = "1") -> LabSetting:
        """A checked setting of this lab's clips and losses."""
        return make_setting(clip, loss, mode, policy, else_scale, silence_weight,
                            clips=self.examples, losses=self.losses)

    def result_for(self, clip: str, loss: str, mode: str = "eager", policy: str = "None",
                   else_scale: str = "off", silence_weight: str = "1") -> LabResult:
        """The result of any setting (cached)."""
        return self.result(self.setting(clip, loss, mode, policy, else_scale, silence_weight))

    def tracing_count(self) -> int:
        """How many times the lab's ``tf.function``s have traced, all together."""
        return sum(fn.experimental_get_tracing_count() for fn in self._graphs.values())

    def result(self, setting: LabSetting) -> LabResult:
        if setting not in self._results:
            loss, grads = self._loss_and_grads(setting)
            variables = self.model.trainable_variables
            grads = apply_policy(grads, variables, setting.policy)
            self._results[setting] = LabResult(setting, loss, gradient_report(grads, variables),
                                               self._adam_step(grads, setting.policy))
        return self._results[setting]

    def _loss_and_grads(self, setting: LabSetting) -> tuple[float, list]:
        """The tape's gradients for a setting (before the policy), cached. Inside
        ``tf.function``, one trace per clip, loss and knob value, except that the question's
        loss takes the hack's scale as a tensor: one trace for every scale but ``off``.
        Mode and policy changes reuse a trace."""
        kwargs = setting.loss_kwargs()
        key = (setting.clip, setting.loss, tuple(sorted(kwargs.items())), setting.mode)
        if key not in self._grads:
            example, loss_fn = self.examples[setting.clip], self.losses[setting.loss]
            if setting.mode == "eager":
                loss, grads = _bind(self.model, example, loss_fn, kwargs)()
            else:
                tensors = {k: v for k, v in kwargs.items()
                           if k in _tensor_knobs(loss_fn) and v is not None}
                fixed = {k: v for k, v in kwargs.items() if k not in tensors}
                graph_key = (setting.clip, setting.loss, tuple(sorted(fixed.items())),
                             tuple(sorted(tensors)))
                if graph_key not in self._graphs:
                    self._graphs[graph_key] = tf.function(
                        _bind(self.model, example, loss_fn, fixed), autograph=False)
                loss, grads = self._graphs[graph_key](
                    **{k: tf.constant(v, tf.float32) for k, v in tensors.items()})
            self._grads[key] = (float(loss), list(grads))
        return self._grads[key]

    def _warmup(self) -> tuple[TrainingState, float, str]:
        """Adam after ``ADAM_WARMUP_STEPS`` steps on the most voiced clip (``voiced`` by
        default) with the ``masked`` loss (else the first), and the size of one more voiced
        step; the model's own weights are put back."""
        if self._adam is None:
            clip = "voiced" if "voiced" in self.examples else max(
                self.examples, key=lambda n: int(self.examples[n].labels.voiced.sum()))
            loss = "masked" if "masked" in self.losses else next(iter(self.losses))
            compute = _bind(self.model, self.examples[clip], self.losses[loss], {})
            variables = self.model.trainable_variables
            original = snapshot(self.model)
            optimizer = keras.optimizers.Adam(learning_rate=ADAM_LEARNING_RATE)
            try:
                for _ in range(ADAM_WARMUP_STEPS):
                    grads = compute()[1]
                    if not _moves_anything(grads):
                        raise ValueError(
                            f"the Adam panel warms Adam up with loss {loss!r} on clip "
                            f"{clip!r}, and it gives no gradient there: pass a clip with "
                            "voiced frames and a loss that reaches the model.")
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # a None among the gradients
                        optimizer.apply_gradients(zip(grads, variables))
                state = TrainingState(self.model, optimizer)
                voiced_move = state.trial_step(compute()[1])
            finally:
                restore_weights(self.model, original)
            self._adam = (state, voiced_move, f"{clip} ({loss})")
        return self._adam

    def _adam_step(self, grads: list, policy: str) -> AdamStep:
        state, voiced_move, warmup = self._warmup()
        if policy == "skip" and not _moves_anything(grads):
            return AdamStep("skipped", 0.0, voiced_move, warmup)
        original = snapshot(self.model)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Keras warns about a None among the grads
                move = state.trial_step(grads)
        except ValueError as error:
            return AdamStep("raises", 0.0, voiced_move, warmup,
                            f"ValueError ({str(error).strip()})")
        finally:
            restore_weights(self.model, original)
        return AdamStep("step", move / voiced_move, voiced_move, warmup)
