"""The gradient lab's computation, without a view (``helpers.lab.view`` draws it; its
settings are ``helpers.lab.settings``): ``LabComputation`` gives the loss, the gradient report
(after a policy for missing gradients) and the Adam panel (``AdamStep``: the size and the
direction of one more Adam step) of any setting, cached per setting and traced once per clip,
loss and knob value inside ``tf.function``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from helpers.audio import Clip
from helpers.course import check_choice, sig
from helpers.diagnosis import GradientReport, gradient_report, gradients_of
from helpers.lab.settings import (
    POLICIES,
    LabSetting,
    check_losses,
    check_model,
    lab_examples,
    make_setting,
)
from helpers.models import TrainingState, enhance, make_gru_step_model, restore_weights, snapshot
from helpers.voicing import cond_loop_voicing_loss

ADAM_LEARNING_RATE = 1e-3  # notebook 04's
ADAM_WARMUP_STEPS = 5  # "after 5 voiced steps", as in notebook 04


@dataclass(frozen=True)
class AdamStep:
    """What one Adam step with a setting's gradients does, after ``ADAM_WARMUP_STEPS`` steps
    on a voiced clip: ``outcome`` is ``"step"``, ``"raises"`` (``message``: Keras refused
    every-``None`` gradients) or ``"skipped"`` (policy skip). Its size, ``fraction``, is the
    mean |change| of the weights over a voiced step's from the same state; its direction,
    ``cosine``, is the cosine with the last voiced step Adam took: near 1, the step only
    repeats Adam's momentum; lower, the gradients brought something new."""

    outcome: str
    fraction: float
    voiced_move: float
    warmup: str
    message: str = ""
    cosine: float | None = None  # None when nothing moves

    def describe(self) -> str:
        head = f"Adam after {ADAM_WARMUP_STEPS} steps on {self.warmup}: one more step"
        if self.outcome == "raises":
            return (
                f"{head} raises {self.message}; the weights do not move (a training loop "
                "stops here)"
            )
        if self.outcome == "skipped":
            return (
                f"{head} is skipped (no gradient is non-zero): the weights and Adam's "
                "state stay as they were, 0% of a voiced step"
            )
        return (
            f"{head} with these gradients moves the weights {self.fraction:.0%} as far as "
            f"a voiced step (mean |dw| {sig(self.voiced_move)}), {self._direction()} "
            "(1: straight on, where Adam's momentum points)"
        )

    def _direction(self) -> str:
        return (
            "in no direction"
            if self.cosine is None
            else f"at cosine {sig(self.cosine, 2)} to the last voiced step"
        )

    def short(self) -> str:
        """The step's size and direction in a few words (or what happened instead)."""
        if self.outcome != "step":
            return "raises" if self.outcome == "raises" else "skipped: 0% of a voiced step"
        return f"{self.fraction:.0%} of a voiced step, {self._direction()}"


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
    return make_gru_step_model(seed=seed)


def _loss_and_grads(
    model: keras.Model, example: Clip, loss_fn: Callable, loss_kwargs: dict[str, Any]
) -> tuple[tf.Tensor, list]:
    """The loss and the tape's gradients (``None`` where the loss does not reach)."""
    variables = model.trainable_variables
    clean = tf.constant(example.clean)
    with tf.GradientTape() as tape:
        estimate = enhance(model, example.audio)
        loss = loss_fn(clean, estimate, example.labels, **loss_kwargs)
    loss = tf.convert_to_tensor(loss)
    if loss.shape.rank != 0 or not loss.dtype.is_floating:
        raise ValueError(
            f"a lab loss must return a float scalar; got shape "
            f"{tuple(loss.shape)}, dtype {loss.dtype.name}."
        )
    return loss, gradients_of(tape, loss, variables)


def apply_policy(grads: list, variables: list, policy: str) -> list:
    """``zeros``: every ``None`` gradient becomes zeros of its variable's shape; ``keep`` and
    ``skip`` keep the tape's gradients (skip acts on the update, not on the gradients)."""
    if check_choice(policy, POLICIES, "policy") != "zeros":
        return list(grads)
    return [tf.zeros(v.shape, v.dtype) if g is None else g for g, v in zip(grads, variables)]


def _bind(
    model: keras.Model, example: Clip, loss_fn: Callable, fixed: dict[str, Any]
) -> Callable[..., tuple[tf.Tensor, list]]:
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


def _trial_update(state: TrainingState, grads: list) -> np.ndarray:
    """From ``state``, one Adam step with ``grads``: every weight's change, as one vector;
    then the state is put back."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Keras warns about a None among the gradients
        try:
            return state.step(grads)
        finally:
            state.restore()


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """The cosine of the angle between two steps (1: the same direction, 0: at right angles)."""
    return float(np.clip(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), -1.0, 1.0))


class LabComputation:
    """The lab without its view: ``result_for`` gives any setting's ``LabResult``, cached.

    ``LabComputation(model=None, losses=None, clips=None)``: a Keras denoiser (default: a
    fresh ``lab_model()``), losses ``{name: loss(reference, estimate, labels)}`` (default
    ``LAB_LOSSES``) and clips (default ``LAB_CLIPS``; see ``lab_examples``). It never changes
    the model's weights (the Adam panel puts them back).
    """

    def __init__(
        self,
        model: keras.Model | None = None,
        *,
        losses: Mapping[str, Callable] | None = None,
        clips: Mapping[str, Any] | None = None,
    ):
        self.model = check_model(model) if model is not None else lab_model()
        self.losses = check_losses(losses)
        self.examples = lab_examples(clips)
        self._graphs: dict[tuple, Callable] = {}
        self._grads: dict[tuple, tuple[float, list]] = {}
        self._results: dict[LabSetting, LabResult] = {}
        self._adam: tuple[TrainingState, np.ndarray, np.ndarray, str] | None = None

    def setting(self, clip: str, loss: str, *choices: str, **named: str) -> LabSetting:
        """A checked setting of this lab's clips and losses; the other choices (mode, policy,
        else_scale, silence_weight) and their defaults are ``make_setting``'s."""
        return make_setting(clip, loss, *choices, **named, clips=self.examples, losses=self.losses)

    def result_for(self, clip: str, loss: str, *choices: str, **named: str) -> LabResult:
        """The result of any setting (cached), the choices as ``setting`` takes them."""
        return self.result(self.setting(clip, loss, *choices, **named))

    def tracing_count(self) -> int:
        """How many times the lab's ``tf.function``s have traced, all together."""
        return sum(fn.experimental_get_tracing_count() for fn in self._graphs.values())

    def result(self, setting: LabSetting) -> LabResult:
        if setting not in self._results:
            loss, grads = self._loss_and_grads(setting)
            variables = self.model.trainable_variables
            grads = apply_policy(grads, variables, setting.policy)
            self._results[setting] = LabResult(
                setting,
                loss,
                gradient_report(grads, variables),
                self._adam_step(grads, setting.policy),
            )
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
                tensors = {
                    k: v for k, v in kwargs.items() if k in _tensor_knobs(loss_fn) and v is not None
                }
                fixed = {k: v for k, v in kwargs.items() if k not in tensors}
                graph_key = (
                    setting.clip,
                    setting.loss,
                    tuple(sorted(fixed.items())),
                    tuple(sorted(tensors)),
                )
                if graph_key not in self._graphs:
                    self._graphs[graph_key] = tf.function(
                        _bind(self.model, example, loss_fn, fixed), autograph=False
                    )
                loss, grads = self._graphs[graph_key](
                    **{k: tf.constant(v, tf.float32) for k, v in tensors.items()}
                )
            self._grads[key] = (float(loss), list(grads))
        return self._grads[key]

    def _warmup(self) -> tuple[TrainingState, np.ndarray, np.ndarray, str]:
        """Adam after ``ADAM_WARMUP_STEPS`` steps on the most voiced clip (``voiced`` by
        default) with the ``masked`` loss (else the first): its state, the last of those
        steps and one more voiced step (weight changes); the model's weights are put back."""
        if self._adam is None:
            clip = (
                "voiced"
                if "voiced" in self.examples
                else max(self.examples, key=lambda n: int(self.examples[n].labels.voiced.sum()))
            )
            loss = "masked" if "masked" in self.losses else next(iter(self.losses))
            compute = _bind(self.model, self.examples[clip], self.losses[loss], {})
            original = snapshot(self.model)
            optimizer = keras.optimizers.Adam(learning_rate=ADAM_LEARNING_RATE)
            optimizer.build(self.model.trainable_variables)
            try:
                for _ in range(ADAM_WARMUP_STEPS):
                    grads = compute()[1]
                    if not _moves_anything(grads):
                        raise ValueError(
                            f"the Adam panel warms Adam up with loss {loss!r} on clip "
                            f"{clip!r}, and it gives no gradient there: pass a clip with "
                            "voiced frames and a loss that reaches the model."
                        )
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # a None among the gradients
                        last = TrainingState(self.model, optimizer).step(grads)  # kept
                state = TrainingState(self.model, optimizer)
                voiced = _trial_update(state, compute()[1])
            finally:
                restore_weights(self.model, original)
            self._adam = (state, last, voiced, f"{clip} ({loss})")
        return self._adam

    def _adam_step(self, grads: list, policy: str) -> AdamStep:
        state, last, voiced, warmup = self._warmup()
        voiced_move = float(np.abs(voiced).mean())
        if policy == "skip" and not _moves_anything(grads):
            return AdamStep("skipped", 0.0, voiced_move, warmup)
        original = snapshot(self.model)
        try:
            update = _trial_update(state, grads)
        except ValueError as error:
            return AdamStep(
                "raises", 0.0, voiced_move, warmup, f"ValueError ({str(error).strip()})"
            )
        finally:
            restore_weights(self.model, original)
        return AdamStep(
            "step",
            float(np.abs(update).mean()) / voiced_move,
            voiced_move,
            warmup,
            cosine=cosine(update, last) if np.any(update) else None,
        )
