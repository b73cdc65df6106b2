"""helpers.models.training: one loss-and-gradients pass, the tf.function training step for either
denoiser, and what an optimizer step does (snapshot, TrainingState, Adam's slots)."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.course import make_deterministic
from helpers.diagnosis import gradient_report
from helpers.models import enhance, make_conv_denoiser, make_gru_step_model
from helpers.models.training import (
    TrainingState,
    loss_and_gradients,
    make_train_step,
    mean_abs_change,
    optimizer_slot_norm,
    restore_weights,
    snapshot,
    what_one_step_does,
)
from helpers.voicing import cond_loop_voicing_loss, masked_voicing_loss

# --- loss_and_gradients ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["waveform", "step"])
def test_loss_and_gradients_line_up_with_the_variables(clips, kind):
    make_deterministic(0)
    model = make_conv_denoiser(seed=3) if kind == "waveform" else make_gru_step_model(units=8)
    example = clips["mixed"]
    loss, grads = loss_and_gradients(model, example, masked_voicing_loss)
    assert isinstance(loss, float) and np.isfinite(loss)
    assert loss == pytest.approx(
        float(masked_voicing_loss(example.clean, enhance(model, example.audio), example.labels)),
        rel=1e-6,
    )
    assert len(grads) == len(model.trainable_variables)
    for grad, variable in zip(grads, model.trainable_variables):
        assert grad.shape == variable.shape
    assert gradient_report(grads, model.trainable_variables).all("ok")


def test_loss_and_gradients_passes_loss_arguments_on(clips, model):
    with_silence, _ = loss_and_gradients(model, clips["silent"], masked_voicing_loss)
    without, grads = loss_and_gradients(
        model, clips["silent"], masked_voicing_loss, silence_weight=0.0
    )
    assert with_silence > without
    assert gradient_report(grads, model.trainable_variables).all("zero")


def test_loss_and_gradients_can_ask_for_zeros_instead_of_none(clips, model):
    _, none = loss_and_gradients(model, clips["silent"], cond_loop_voicing_loss)
    assert gradient_report(none, model.trainable_variables).all("none")
    _, zeros = loss_and_gradients(
        model, clips["silent"], cond_loop_voicing_loss, tf.UnconnectedGradients.ZERO
    )
    assert gradient_report(zeros, model.trainable_variables).all("zero")


# --- snapshot, mean_abs_change, TrainingState, optimizer_slot_norm ------------------------------


def test_snapshot_is_a_copy_and_mean_abs_change_measures_a_step():
    model = make_conv_denoiser(seed=5)
    before = snapshot(model)
    assert [b.shape for b in before] == [tuple(v.shape) for v in model.trainable_variables]
    assert mean_abs_change(before, model) == 0.0
    gain = next(v for v in model.trainable_variables if v.path == "skip/gain")
    gain.assign_add(0.5)
    total = sum(int(np.prod(v.shape)) for v in model.trainable_variables)
    assert mean_abs_change(before, model) == pytest.approx(0.5 / total)
    assert float(before[[v.path for v in model.trainable_variables].index("skip/gain")]) == 1.0
    restore_weights(model, before)
    assert mean_abs_change(before, model) == 0.0 and float(gain.numpy()) == 1.0


def test_restore_weights_wants_one_array_per_variable():
    model = make_conv_denoiser(seed=5)
    with pytest.raises(ValueError, match="one array per trainable variable"):
        restore_weights(model, snapshot(model)[:-1])


def test_adam_moves_on_zeros_after_voiced_steps_and_not_when_skipped(clips):
    model = make_conv_denoiser(seed=12)
    optimizer = keras.optimizers.Adam(1e-3)
    variables = model.trainable_variables
    voiced = clips["voiced"]
    for _ in range(3):
        optimizer.apply_gradients(
            zip(loss_and_gradients(model, voiced, masked_voicing_loss)[1], variables)
        )
    state = TrainingState(model, optimizer)
    before = snapshot(model)
    momentum = optimizer_slot_norm(optimizer)
    optimizer.apply_gradients(zip([tf.zeros_like(v) for v in variables], variables))
    assert mean_abs_change(before, model) > 1e-4
    assert int(optimizer.iterations) == 4
    assert optimizer_slot_norm(optimizer) == pytest.approx(0.9 * momentum, rel=1e-5)
    state.restore()
    assert mean_abs_change(before, model) == 0.0 and int(optimizer.iterations) == 3
    assert optimizer_slot_norm(optimizer) == momentum


def test_training_state_builds_an_unbuilt_optimizer():
    model = make_conv_denoiser(seed=13)
    optimizer = keras.optimizers.Adam(1e-3)
    state = TrainingState(model, optimizer)
    assert optimizer.built and optimizer_slot_norm(optimizer) == 0.0
    optimizer.apply_gradients(
        zip([tf.ones_like(v) for v in model.trainable_variables], model.trainable_variables)
    )
    assert optimizer_slot_norm(optimizer) > 0 and optimizer_slot_norm(optimizer, "velocity") > 0
    state.restore()
    assert optimizer_slot_norm(optimizer) == 0.0 and int(optimizer.iterations) == 0


def test_optimizer_slot_norm_is_the_global_norm_of_the_slot():
    model = make_conv_denoiser(seed=14)
    optimizer = keras.optimizers.Adam(1e-3, beta_1=0.9, beta_2=0.999)
    grads = [tf.fill(v.shape, 2.0) for v in model.trainable_variables]
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    size = sum(int(np.prod(v.shape)) for v in model.trainable_variables)
    # after one step: momentum = (1 - beta_1) * g, velocity = (1 - beta_2) * g**2
    assert optimizer_slot_norm(optimizer) == pytest.approx(0.1 * 2.0 * np.sqrt(size), rel=1e-5)
    assert optimizer_slot_norm(optimizer, "velocity") == pytest.approx(
        0.001 * 4.0 * np.sqrt(size), rel=1e-4
    )


def test_optimizer_slot_norm_refuses_an_optimizer_without_the_slot():
    model = make_conv_denoiser(seed=15)
    optimizer = keras.optimizers.SGD(1e-3)
    optimizer.build(model.trainable_variables)
    with pytest.raises(ValueError, match="no 'momentum' variables"):
        optimizer_slot_norm(optimizer)
    with pytest.raises(ValueError, match="no 'momentum' variables"):
        optimizer_slot_norm(keras.optimizers.Adam())  # not built yet


# --- make_train_step ------------------------------------------------------------------------


def _train(model, examples, optimizer, steps, **kwargs):
    step = make_train_step(model, optimizer, examples, **kwargs)
    losses = []
    for _ in range(steps):
        loss, grads = step()
        report = gradient_report(grads, model.trainable_variables)
        assert not report.any("none") and not report.any("nonfinite"), report
        losses.append(float(loss))
    assert step.experimental_get_tracing_count() == 1  # the optimizer was built before tracing
    return losses


def test_training_the_waveform_denoiser_on_a_mixed_batch(clips):
    make_deterministic(0)
    model = make_conv_denoiser()
    batch = [clips[name] for name in ("voiced", "unvoiced", "silent", "mixed")]
    losses = _train(model, batch, keras.optimizers.Adam(3e-3), 12)
    assert np.mean(losses[-3:]) < np.mean(losses[:3])


def test_training_the_gru_step_model(clips):
    make_deterministic(0)
    model = make_gru_step_model(units=16)
    batch = [clips[name] for name in ("voiced", "mixed")]
    before = snapshot(model)
    losses = _train(model, batch, keras.optimizers.Adam(1e-2), 8)
    assert losses[-1] < losses[0] and np.mean(losses[-3:]) < np.mean(losses[:3])
    assert mean_abs_change(before, model) > 0


def test_train_step_loss_is_the_batch_mean_and_takes_loss_arguments(clips):
    model = make_conv_denoiser(seed=21)
    batch = [clips["voiced"], clips["silent"]]
    expected = np.mean(
        [loss_and_gradients(model, ex, masked_voicing_loss, silence_weight=0.0)[0] for ex in batch]
    )
    step = make_train_step(
        model, keras.optimizers.SGD(0.0), batch, masked_voicing_loss, silence_weight=0.0
    )
    loss, _ = step()
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def test_make_train_step_needs_examples(model):
    with pytest.raises(ValueError, match="at least one example"):
        make_train_step(model, keras.optimizers.Adam(), [])


def test_graph_gradient_norm_tells_the_question_loss_from_the_fix():
    from helpers.audio import load_clip, make_example
    from helpers.models import make_conv_denoiser
    from helpers.models.training import graph_gradient_norm
    from helpers.voicing import cond_loop_voicing_loss, masked_voicing_loss

    clip = load_clip("silence")
    silent = make_example("silence", clip.clean, clip.labels, seed=0)
    model = make_conv_denoiser(seed=0)
    assert graph_gradient_norm(model, silent, cond_loop_voicing_loss) == 0.0
    assert graph_gradient_norm(model, silent, masked_voicing_loss) > 0.0


def test_trial_step_measures_one_step_and_puts_everything_back():
    model = make_conv_denoiser(seed=14)
    optimizer = keras.optimizers.Adam(1e-3)
    state = TrainingState(model, optimizer)
    before = snapshot(model)
    ones = [tf.ones_like(v) for v in model.trainable_variables]
    move = state.trial_step(ones)
    assert move == pytest.approx(1e-3, rel=1e-3)  # Adam's first step: lr per weight
    assert mean_abs_change(before, model) == 0.0 and int(optimizer.iterations) == 0
    assert state.trial_step(ones) == move  # the same point every time
    assert state.trial_step([tf.zeros_like(v) for v in model.trainable_variables]) == 0.0
    with pytest.raises(ValueError, match="one gradient per trainable variable"):
        state.trial_step(ones[:2])


def test_what_one_step_does_measures_adam_and_puts_everything_back(clips):
    model = make_conv_denoiser(seed=16)
    optimizer = keras.optimizers.Adam(1e-3)
    variables = model.trainable_variables
    for _ in range(3):
        optimizer.apply_gradients(
            zip(loss_and_gradients(model, clips["voiced"], masked_voicing_loss)[1], variables)
        )
    before, momentum = snapshot(model), optimizer_slot_norm(optimizer)
    zeros = what_one_step_does(model, optimizer, [tf.zeros_like(v) for v in variables])
    assert zeros.move > 1e-4 and zeros.steps == (3, 4)  # momentum moves the weights on zeros
    assert zeros.momentum == (momentum, pytest.approx(0.9 * momentum, rel=1e-5))
    skip = what_one_step_does(model, optimizer, None)
    assert skip == type(skip)(0.0, (3, 3), (momentum, momentum))
    assert mean_abs_change(before, model) == 0.0 and int(optimizer.iterations) == 3
    assert what_one_step_does(model, optimizer, [tf.zeros_like(v) for v in variables]) == zeros
    with pytest.raises(ValueError, match="or None to skip"):
        what_one_step_does(model, optimizer, [tf.zeros_like(variables[0])])
