"""Training: one step, the gradients it takes, and Adam's bookkeeping around it.

``make_train_step`` is the course's ``tf.function`` training step for either denoiser (returns
the loss *and* the gradients, so a notebook can report every step). ``snapshot``,
``TrainingState`` (with ``trial_step``: one step from a saved point, then back) and
``optimizer_slot_norm`` measure what an optimizer step does: how far the
weights move, and Adam's momentum, which keeps moving them when a gradient is zero;
``what_one_step_does`` measures all of it in one call (notebook 04).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import keras
import numpy as np
import tensorflow as tf

from helpers.audio import Clip
from helpers.diagnosis import gradients_of
from helpers.models.denoisers import enhance
from helpers.voicing import LossFn, masked_voicing_loss


def loss_and_gradients(
    model: keras.Model,
    example: Clip,
    loss_fn: LossFn,
    unconnected_gradients: tf.UnconnectedGradients = tf.UnconnectedGradients.NONE,
    **loss_kwargs,
) -> tuple[float, list[tf.Tensor | None]]:
    """One forward pass of the model (``helpers.models.enhance``) on ``example`` and the
    gradient of ``loss_fn`` with respect to its trainable variables (a list that lines up
    with them; entries may be None)."""
    with tf.GradientTape() as tape:
        estimate = enhance(model, example.audio)
        loss = loss_fn(example.clean, estimate, example.labels, **loss_kwargs)
    return float(loss), gradients_of(tape, loss, model.trainable_variables, unconnected_gradients)


def snapshot(model: keras.Model) -> list[np.ndarray]:
    """A copy of the model's trainable weights, to measure how far a step moves them."""
    return [np.array(v.numpy()) for v in model.trainable_variables]


def restore_weights(model: keras.Model, weights: list[np.ndarray]) -> None:
    """Put back the trainable weights ``snapshot`` took (an experiment's step undone)."""
    variables = model.trainable_variables
    if len(weights) != len(variables):
        raise ValueError(
            f"expected one array per trainable variable ({len(variables)}); got {len(weights)}."
        )
    for variable, value in zip(variables, weights):
        variable.assign(value)


def mean_abs_change(before: list[np.ndarray], model: keras.Model) -> float:
    """Mean absolute change of all trainable weights since ``snapshot`` (one number)."""
    after = snapshot(model)
    diffs = np.concatenate([np.abs(a - b).ravel() for a, b in zip(after, before)])
    return float(diffs.mean())


class TrainingState:
    """The weights of a model and the state of its optimizer (Adam's iteration count,
    momentum and velocity), saved so several "what if the next step were ..." experiments can
    start from exactly the same point. ``restore()`` puts them back."""

    def __init__(self, model: keras.Model, optimizer: keras.optimizers.Optimizer):
        if not optimizer.built:
            optimizer.build(model.trainable_variables)
        self.model, self.optimizer = model, optimizer
        self._variables = [*model.trainable_variables, *optimizer.variables]
        self._values = [np.array(v.numpy()) for v in self._variables]

    def restore(self) -> None:
        for variable, value in zip(self._variables, self._values):
            variable.assign(value)

    def step(self, grads: list | None) -> np.ndarray:
        """From the saved state, one optimizer step with ``grads`` (``None``: no step): every
        trainable weight's change, as one vector. The step stays applied until ``restore()``."""
        variables = self.model.trainable_variables
        self.restore()
        before = snapshot(self.model)
        if grads is not None:
            grads = list(grads)
            if len(grads) != len(variables):
                raise ValueError(
                    f"expected one gradient per trainable variable "
                    f"({len(variables)}), or None to skip; got {len(grads)}."
                )
            self.optimizer.apply_gradients(zip(grads, variables))
        return np.concatenate([(a - b).ravel() for a, b in zip(snapshot(self.model), before)])

    def trial_step(self, grads: list) -> float:
        """From the saved state, apply one optimizer step with ``grads`` and return how far
        it moved the weights (the mean absolute change); then restore the saved state, so the
        next trial starts from the same point."""
        try:
            return float(np.abs(self.step(grads)).mean())
        finally:
            self.restore()


def optimizer_slot_norm(optimizer: keras.optimizers.Optimizer, slot: str = "momentum") -> float:
    """Global norm of Adam's ``momentum`` (first moment) or ``velocity`` (second moment)."""
    values = [v for v in optimizer.variables if v.path.endswith("_" + slot)]
    if not values:
        raise ValueError(f"the optimizer has no '{slot}' variables (is it Adam, and built?).")
    return float(tf.linalg.global_norm([tf.convert_to_tensor(v) for v in values]))


@dataclass(frozen=True)
class StepEffect:
    """What one optimizer step did: the mean |change| of the weights, and the optimizer's step
    count and momentum norm (Adam's running mean of past gradients) before and after it."""

    move: float
    steps: tuple[int, int]
    momentum: tuple[float, float]


def what_one_step_does(
    model: keras.Model, optimizer: keras.optimizers.Optimizer, grads: list | None
) -> StepEffect:
    """Take one Adam step with ``grads`` from where model and optimizer are now (``None``: skip
    the step, as a training loop that skips a batch would), measure what it changed, and put
    the weights and the optimizer's state back, so the next "what if" starts from the same
    point (notebook 04)."""
    state = TrainingState(model, optimizer)
    steps, momentum = int(optimizer.iterations), optimizer_slot_norm(optimizer, "momentum")
    try:
        move = float(np.abs(state.step(grads)).mean())
        return StepEffect(
            move,
            (steps, int(optimizer.iterations)),
            (momentum, optimizer_slot_norm(optimizer, "momentum")),
        )
    finally:
        state.restore()


def make_step(
    model: keras.Model,
    optimizer: keras.optimizers.Optimizer,
    batch_loss: Callable[..., tf.Tensor],
    input_signature: list | None = None,
):
    """The course's one training step: ``step(*inputs) -> (loss, grads)``, a ``tf.function``
    that records ``batch_loss(*inputs)`` on a tape, takes the gradients of the model's
    trainable variables and applies one optimizer step. It returns the gradients too, so each
    step can be reported. The optimizer is built before tracing, so the step traces once."""
    variables = model.trainable_variables
    if not optimizer.built:  # build outside the trace: creating variables in it traces twice
        optimizer.build(variables)

    @tf.function(autograph=False, input_signature=input_signature)
    def step(*inputs):
        with tf.GradientTape() as tape:
            loss = batch_loss(*inputs)
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables))
        return loss, grads

    return step


def make_train_step(
    model: keras.Model,
    optimizer: keras.optimizers.Optimizer,
    examples: list[Clip],
    loss_fn: LossFn = None,
    **loss_kwargs,
):
    """``make_step`` over a fixed batch of examples (a Python list: the clips may differ in
    length): the mean loss over the batch. Works for either denoiser (``enhance`` runs the
    model). Returns ``step() -> (loss, grads)``."""
    loss_fn = loss_fn or masked_voicing_loss
    if not examples:
        raise ValueError("make_train_step needs at least one example.")

    def batch_loss():
        losses = [
            loss_fn(ex.clean, enhance(model, ex.audio), ex.labels, **loss_kwargs) for ex in examples
        ]
        return tf.add_n(losses) / len(losses)

    return make_step(model, optimizer, batch_loss)


# ------------------------------------------ checks that tell the fix from the question's loss


def graph_gradient_norm(model: keras.Model, example: Clip, loss_fn: LossFn, **loss_kwargs) -> float:
    """Global norm of the gradient of ``loss_fn`` on one example, inside ``tf.function`` (as
    in training; unconnected variables count as zero). "No None" cannot tell the question's loss
    from the fix inside ``tf.function``, where the question's loss gives zeros; this can: on a
    silent
    example the question's per-frame loss gives exactly 0, the masked loss a positive norm."""
    variables = model.trainable_variables

    @tf.function(autograph=False)
    def norm():
        with tf.GradientTape() as tape:
            loss = loss_fn(
                example.clean, enhance(model, example.audio), example.labels, **loss_kwargs
            )
        grads = tape.gradient(loss, variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        return tf.linalg.global_norm(grads)

    return float(norm())
