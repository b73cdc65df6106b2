"""``unroll``: run a step model over every frame, threading its state correctly.

A *step model* (``helpers.models.make_gru_step_model``) maps one frame and the previous
state to one output and the next state. ``unroll`` calls it per frame, as the tape needs:

* the state is threaded as **tensors** (never written into a ``tf.Variable``), so backprop
  reaches through every step back to the first;
* eagerly a plain Python loop; inside ``tf.function`` a ``tf.while_loop`` collecting into a
  ``tf.TensorArray`` (a Python list cannot collect from a graph loop). Same results;
* with ``chunk_size`` it carries the state across chunk edges through ``tf.stop_gradient``:
  truncated backprop through time, on purpose (same forward values, gradients cut there).

Beside it: the references it is checked against.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from helpers.course import check_int


def check_step_model(
    model: Any, name: str = "step_model", made_by: str = "helpers.models.make_gru_step_model()"
) -> Any:
    """``model``, if it is a Keras step model: two inputs ``[frame, state]`` and two outputs
    ``[output_frame, next_state]``; else a ``TypeError`` naming what makes one."""
    inputs = getattr(model, "inputs", None)
    if not isinstance(model, keras.Model) or inputs is None or len(inputs) != 2:
        raise TypeError(
            f"{name} must be a Keras model with two inputs, [frame, state], and two "
            f"outputs, [output_frame, next_state]; got {type(model).__name__}. "
            f"Build one with {made_by}."
        )
    return model


def state_size(step_model: keras.Model) -> int:
    """The size of the state the step model expects (its second input's last dimension)."""
    check_step_model(step_model)
    return int(step_model.inputs[1].shape[-1])


def frame_size(step_model: keras.Model) -> int:
    """The number of features per frame the step model expects (its first input)."""
    check_step_model(step_model)
    return int(step_model.inputs[0].shape[-1])


def zero_state(step_model: keras.Model, batch_size: int = 1) -> tf.Tensor:
    """An all-zero initial state ``(batch_size, state_size)``."""
    return tf.zeros((int(batch_size), state_size(step_model)))


# --------------------------------------------------------------------------- unroll


@tf.autograph.experimental.do_not_convert  # it builds its own graph loop; nothing to convert
def unroll(
    step_model: keras.Model,
    frames,
    initial_state=None,
    *,
    chunk_size: int | None = None,
    training: bool = False,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Run the step model over every frame, threading the state; ``(outputs, final_state)``.

    ``frames`` is ``(batch, time, features)``, ``initial_state`` ``(batch, state_size)`` (zeros
    when None); ``outputs`` is ``(batch, time, output_features)``. The state goes from one step
    to the next as a tensor, so the tape sees the whole chain. Eagerly this is a Python loop;
    inside ``tf.function`` it is a ``tf.while_loop`` collecting outputs in a ``TensorArray``.

    With ``chunk_size`` the frames are processed ``chunk_size`` at a time and the state carried
    into the next chunk goes through ``tf.stop_gradient``: truncated backprop through time.
    Outputs and final state are the same as without chunks; gradients stop at chunk edges.
    """
    frames, state = _checked_inputs(step_model, frames, initial_state)
    if chunk_size is None:
        return _unroll_span(step_model, frames, state, training)
    chunk_size = check_int(chunk_size, "chunk_size", 1)
    steps = frames.shape[1]
    if steps is None:
        raise ValueError(
            "chunked unroll needs a time dimension known when tracing; got frames "
            f"of shape {tuple(frames.shape)}. Call it eagerly, or give the "
            "tf.function an input_signature with a fixed number of frames."
        )
    outputs = []
    for start in range(0, steps, int(chunk_size)):
        if start > 0:
            state = tf.stop_gradient(state)  # the chunk edge: backprop stops here, on purpose
        chunk_outputs, state = _unroll_span(
            step_model, frames[:, start : start + chunk_size], state, training
        )
        outputs.append(chunk_outputs)
    return tf.concat(outputs, axis=1), state


def _unroll_span(step_model, frames, state, training):
    if tf.executing_eagerly():
        return _unroll_eager(step_model, frames, state, training)
    return _unroll_graph(step_model, frames, state, training)


def _unroll_eager(step_model, frames, state, training):
    """The plain loop: Python rebinding of ``state`` is fine, the tape records operations."""
    outputs = []
    for t in range(frames.shape[1]):
        output, state = step_model([frames[:, t], state], training=training)
        outputs.append(output)
    return tf.stack(outputs, axis=1), state


def _unroll_graph(step_model, frames, state, training):
    """Inside tf.function: one tf.while_loop, outputs in a TensorArray (as AutoGraph would)."""
    steps = tf.shape(frames)[1]
    time_major = tf.transpose(frames, [1, 0, 2])  # (time, batch, features): read frame t as [t]
    output_shape = step_model.outputs[0].shape  # (None, output_features)
    collected = tf.TensorArray(
        frames.dtype, size=steps, element_shape=tf.TensorShape([frames.shape[0], output_shape[-1]])
    )

    def body(t, state, collected):
        output, next_state = step_model([time_major[t], state], training=training)
        return t + 1, tf.ensure_shape(next_state, state.shape), collected.write(t, output)

    _, state, collected = tf.while_loop(
        lambda t, *_: t < steps, body, (tf.constant(0), state, collected)
    )
    stacked = collected.stack()  # (time, batch, output_features)
    stacked.set_shape([frames.shape[1], frames.shape[0], output_shape[-1]])  # keep known sizes
    return tf.transpose(stacked, [1, 0, 2]), state


def _checked_inputs(step_model, frames, initial_state):
    check_step_model(step_model)
    frames = tf.convert_to_tensor(frames)
    if not frames.dtype.is_floating:
        raise ValueError(f"frames must be floating point; got dtype {frames.dtype.name}.")
    frames = tf.cast(frames, step_model.inputs[0].dtype)  # float64 NumPy in, float32 model
    if frames.shape.rank != 3:
        raise ValueError(
            f"frames must have shape (batch, time, features); got shape "
            f"{tuple(frames.shape)} (rank {frames.shape.rank}). For one clip, add "
            "a batch axis: frames[tf.newaxis]."
        )
    features = frame_size(step_model)
    if frames.shape[-1] is not None and frames.shape[-1] != features:
        raise ValueError(
            f"frames have {frames.shape[-1]} features per frame; the step model expects {features}."
        )
    if frames.shape[1] == 0:
        raise ValueError("frames has no time steps; expected at least one frame.")
    units = state_size(step_model)
    batch = frames.shape[0]
    if initial_state is None:
        if batch is None:
            raise ValueError("pass an initial_state when the batch size is not known in advance.")
        return frames, tf.zeros((batch, units), frames.dtype)
    state = tf.convert_to_tensor(initial_state)
    if not state.dtype.is_floating:
        raise ValueError(f"initial_state must be floating point; got dtype {state.dtype.name}.")
    state = tf.cast(state, frames.dtype)
    if state.shape.rank != 2:
        raise ValueError(
            f"initial_state must have shape (batch, state_size) = ({batch}, "
            f"{units}); got shape {tuple(state.shape)}."
        )
    if state.shape[-1] is not None and state.shape[-1] != units:
        raise ValueError(
            f"initial_state has state size {state.shape[-1]}; the step model's "
            f"state size is {units}. Expected shape ({batch}, {units})."
        )
    if None not in (batch, state.shape[0]) and state.shape[0] != batch:
        raise ValueError(
            f"batch mismatch: frames have batch size {batch} but initial_state has "
            f"{state.shape[0]}. Expected initial_state of shape ({batch}, {units})."
        )
    return frames, state


# --------------------------------------------------------------------------- references


def reference_loop(step_model: keras.Model, frames, initial_state) -> tuple[tf.Tensor, tf.Tensor]:
    """The simplest correct loop, with no checks and no tricks: what ``unroll`` must equal."""
    state, outputs = initial_state, []
    for t in range(frames.shape[1]):
        output, state = step_model([frames[:, t], state])
        outputs.append(output)
    return tf.stack(outputs, axis=1), state


def keras_rnn_reference(
    step_model: keras.Model, frames, initial_state
) -> tuple[tf.Tensor, tf.Tensor]:
    """The same computation with ``keras.layers.RNN`` over the step model's own ``GRUCell``.

    For ``helpers.models.make_gru_step_model``: the per-frame layers (features, mask) run on
    all frames at once; Keras runs the recurrence. Same variables as the step model, so
    gradients can be compared one to one.
    """
    frames = tf.convert_to_tensor(frames)
    cell = step_model.get_layer("gru_cell")
    rnn = keras.layers.RNN(cell, return_sequences=True, return_state=True)
    features = step_model.get_layer("features")(frames)
    sequence, final_state = rnn(features, initial_state=[initial_state])
    return step_model.get_layer("mask")(sequence), final_state
