"""Checkers for the exercises of 01_gru_state_reproduce and 02_gru_state_fix.

Each checker runs the learner's function on a small step model whose weights come from a
local seeded generator (the notebook's global random state is not touched), compares it with
``helpers.recurrence.unroll``, and counts the step model's calls: a loop over frames calls it
exactly once per frame, each time on one frame.
"""

from __future__ import annotations

from functools import cache

import keras
import numpy as np
import tensorflow as tf

from helpers.audio import HOP_LENGTH, stft
from helpers.course import sig
from helpers.diagnosis import max_abs_diff, variable_name
from helpers.exercises import CheckResult, run_check
from helpers.models import apply_masks, denoising_loss, make_gru_step_model
from helpers.recurrence import unroll, zero_state


@cache
def _small_model(units: int, bins: int) -> keras.Model:
    model = make_gru_step_model(units=units, bins=bins)
    rng = np.random.default_rng(1234)
    model.set_weights(
        [0.4 * rng.standard_normal(w.shape).astype(np.float32) for w in model.get_weights()]
    )
    return model


class _CallLog(keras.layers.Layer):
    """Calls the step model and records the shape of the frame it was given, and the state
    tensor it was given (eagerly), so a checker can ask the tape how the loss depends on it."""

    def __init__(self, step_model, **kwargs):
        super().__init__(**kwargs)
        self.step_model = step_model
        self.frame_shapes: list[tuple] = []
        object.__setattr__(self, "states", [])  # a plain list: Keras must not track tensors
        object.__setattr__(self, "_last", None)

    def call(self, inputs):
        # keras.layers.RNN steps its cell once on the first frame to learn the output's
        # structure, then again in its loop: where ``forgive_repeats`` is set (streaming, 2.1),
        # a call that repeats the one before it exactly (same frame, same state) is that probe.
        if all(hasattr(x, "numpy") for x in inputs):  # eager values (not the model's build)
            frame, state = (np.asarray(x) for x in inputs)
            repeat = self.frame_shapes and _same(self._last, (frame, state))
            if not (repeat and getattr(self, "forgive_repeats", False)):
                self.frame_shapes.append(tuple(inputs[0].shape))
                self.states.append(inputs[1])
            object.__setattr__(self, "_last", (frame, state))
        return self.step_model(inputs)


def _same(last, current) -> bool:
    return last is not None and all(
        a.shape == b.shape and np.array_equal(a, b) for a, b in zip(last, current)
    )


@cache
def _counted(units: int, bins: int) -> tuple[keras.Model, _CallLog]:
    """The small step model behind a functional model of the same inputs, outputs and
    variables, whose calls are logged (eagerly: one entry per call)."""
    model = _small_model(units, bins)
    log = _CallLog(model, name="step")
    inputs = [keras.Input((bins,), name="noisy_magnitude"), keras.Input((units,), name="state")]
    counted = keras.Model(inputs, log(inputs), name="step_model")
    return counted, log


def _calls_fault(log: _CallLog, frames: int, batch: int, features: int) -> str | None:
    """What is wrong with the logged calls for ``frames`` frames, or None."""
    shapes = log.frame_shapes
    if len(shapes) != frames:
        return (
            f"The step model was called {len(shapes)} times for {frames} frames; a loop "
            "over the frames calls it exactly once per frame."
        )
    wrong = next((s for s in shapes if s != (batch, features)), None)
    if wrong is not None:
        return (
            f"The step model was given an input of shape {wrong}; each call takes one "
            f"frame, shape {(batch, features)}."
        )
    return None


def _gradient_fault(grads, expected_grads, variables) -> str | None:
    missing = [variable_name(v) for g, v in zip(grads, variables) if g is None]
    if missing:
        return f"The gradients of {', '.join(missing)} are None."
    differing = [
        variable_name(v)
        for g, e, v in zip(grads, expected_grads, variables)
        if max_abs_diff(g, e) > 1e-5 * (float(tf.reduce_max(tf.abs(e))) + 1e-12)
    ]
    if differing:
        return (
            f"The gradients of {', '.join(differing)} differ from a full unroll's: "
            "backprop through time is being cut somewhere."
        )
    return None


# --------------------------------------------------------------------------- exercise 1.1


_SEQUENCE_FRAMES = 40  # longer than any truncation period a learner tries


def _first_cut(tape, states) -> int | None:
    """The first step whose state is not connected, on the tape, to the state the step
    before received: there the chain through time is cut (``stop_gradient``, NumPy, a
    Variable), whatever the period. From step 2: the first state, the learner's zeros, is
    on no tape."""
    for t in range(2, len(states)):
        if isinstance(states[t], tf.Variable) or states[t] is states[t - 1]:
            return t  # a Variable: what the step reads was assigned, not computed
        if tape.gradient(states[t], states[t - 1]) is None:
            return t
    return None


def check_sequence_loss(function) -> CheckResult:
    """``function(step_model, noisy_spectrum, clean_audio)`` must return the denoising loss
    of a hand-threaded loop: one step-model call per frame, each given the state the step
    before returned (as a tensor), the masks turned into audio in TensorFlow; the same value
    and gradients as a full unroll. Checked on 40 frames, and the tape must connect the state
    each step receives to the one the step before received, so truncating the state anywhere
    (``stop_gradient`` every k frames, NumPy, a Variable) fails at that step."""

    def check(fn):
        model, log = _counted(4, 257)
        samples = (_SEQUENCE_FRAMES - 1) * HOP_LENGTH
        rng = np.random.default_rng(6)
        clean = tf.constant(0.1 * rng.standard_normal((1, samples)), tf.float32)
        noisy_spectrum = stft(clean + 0.05 * rng.standard_normal((1, samples)).astype("float32"))
        frames = noisy_spectrum.shape[1]
        variables = model.trainable_weights
        with tf.GradientTape() as tape:
            masks, _ = unroll(model, tf.abs(noisy_spectrum))
            expected = denoising_loss(clean, apply_masks(masks, noisy_spectrum, samples))
        expected_grads = tape.gradient(expected, variables)
        log.frame_shapes.clear()
        log.states.clear()
        with tf.GradientTape(persistent=True) as tape:
            loss = fn(model, noisy_spectrum, clean)
        if not isinstance(loss, tf.Tensor) or loss.shape.rank != 0:
            return (
                False,
                f"Expected a scalar tensor loss; got {type(loss).__name__} "
                f"with shape {getattr(loss, 'shape', None)}.",
            )
        fault = _calls_fault(log, frames, 1, 257)
        if fault:
            return False, fault
        if abs(float(loss) - float(expected)) > 1e-5 * abs(float(expected)):
            return (
                False,
                f"Your loss is {sig(float(loss))}; a loop that passes each state "
                f"on gives {sig(float(expected))}.",
            )
        cut = _first_cut(tape, log.states)
        if cut is not None:
            return (
                False,
                f"The same loss, but the state step {cut} receives is cut off from the step "
                "before it: backprop through time stops there, so earlier steps learn nothing "
                "from what comes after. Pass each step the very tensor the step before "
                "returned.",
            )
        fault = _gradient_fault(tape.gradient(loss, variables), expected_grads, variables)
        if fault:
            return False, fault
        return (
            True,
            "One call per frame, each given the state the step before returned: the same "
            "loss and gradients as a full unroll, over 40 frames.",
        )

    return run_check(
        "Exercise 1.1 (the hand-threaded loop)",
        function,
        check,
        hint="The tape follows operations, not names or containers: each frame's "
        "step must take the state the step before it returned, and the masks "
        "must stay tensors all the way to the loss.",
    )


# --------------------------------------------------------------------------- exercise 2.1

_STREAM_BINS, _STREAM_UNITS, _STREAM_FRAMES = 16, 4, 10


class _Arrivals:
    """Chunks that arrive one at a time; remembers how many step-model calls had been made
    each time the next chunk was asked for."""

    def __init__(self, frames: tf.Tensor, sizes: list[int], log: _CallLog):
        self.frames, self.sizes, self.log = frames, sizes, log
        self.calls_at_request: list[int] = []

    def __iter__(self):
        start = 0
        for size in self.sizes:
            self.calls_at_request.append(len(self.log.frame_shapes))
            yield self.frames[:, start : start + size]
            start += size
        self.calls_at_request.append(len(self.log.frame_shapes))


def _chunk_sizes(frames: int, chunk_size: int) -> list[int]:
    return [min(chunk_size, frames - start) for start in range(0, frames, chunk_size)]


def check_truncated_unroll(function) -> CheckResult:
    """``function(step_model, chunks)`` gets the frames as chunks ``(1, n, features)`` that
    arrive one at a time (an iterable) and must return all outputs ``(1, time, features)``:
    each chunk run as it arrives from the state the previous chunk ended with, and backprop
    through time cut at every chunk edge, and only there (truncated BPTT on chunks of any
    size).

    Checked for chunks of 3 (10 frames: the last chunk has 1), 4, 10 and 1 frames and uneven
    chunks: the outputs equal one full unroll; the step model is called once per frame, on
    one frame, and every frame of a chunk before the next chunk is read. On chunks of 3, 4
    and 3: the variables' gradients equal those of a run cut at every edge, not a full
    run's; the last output has no gradient with respect to the first chunk, and the one it
    has with respect to its own chunk is intact."""

    def check(fn):
        model, log = _counted(_STREAM_UNITS, _STREAM_BINS)
        object.__setattr__(log, "forgive_repeats", True)  # keras.layers.RNN's output probe
        rng = np.random.default_rng(7)
        frames = tf.constant(
            0.1 * rng.standard_normal((1, _STREAM_FRAMES, _STREAM_BINS)), tf.float32
        )
        expected, _ = unroll(model, frames)
        plans = {f"chunks of {n}": _chunk_sizes(_STREAM_FRAMES, n) for n in (3, 4, 10, 1)}
        plans["chunks of 2, 5 and 3"] = [2, 5, 3]
        for label, sizes in plans.items():
            log.frame_shapes.clear()
            arrivals = _Arrivals(frames, sizes, log)
            got = tf.convert_to_tensor(fn(model, iter(arrivals)))
            if tuple(got.shape) != tuple(expected.shape):
                return (
                    False,
                    f"With {label} you returned shape {tuple(got.shape)}; "
                    f"expected {tuple(expected.shape)}.",
                )
            fault = _calls_fault(log, _STREAM_FRAMES, 1, _STREAM_BINS)
            if fault:
                return False, f"With {label}, {fault[0].lower()}{fault[1:]}"
            done = [int(n) for n in np.cumsum([0, *sizes])]
            if arrivals.calls_at_request != done:
                return (
                    False,
                    f"With {label}, the step model had been called "
                    f"{arrivals.calls_at_request[:-1]} times when each chunk was "
                    f"read; each chunk is run before the next arrives ({done[:-1]}).",
                )
            difference = max_abs_diff(got, expected)
            if difference > 1e-5:
                per_frame = tf.reduce_max(tf.abs(got - expected), axis=[0, 2]).numpy()
                first_bad = int(np.flatnonzero(per_frame > 1e-5)[0])
                return (
                    False,
                    f"With {label} your outputs differ from one full unroll by up "
                    f"to {sig(difference)}, first at frame {first_bad}: the forward pass "
                    "must carry the state's value across every edge.",
                )
        return _cut_at_every_edge(fn, model, frames, rng)

    return run_check(
        "Exercise 2.1 (truncate at the chunk edges)",
        function,
        check,
        hint="What crosses a chunk edge is the state: its value must cross, its "
        "history must not. Cut there, and nowhere else.",
    )


def _cut_at_every_edge(fn, model, frames, rng) -> tuple[bool, str]:
    """Compare the learner's gradients on chunks of 3, 4 and 3 with a full run's and with a
    run whose state crosses each edge through ``tf.stop_gradient``."""
    sizes = [3, 4, 3]
    edges = [int(n) for n in np.cumsum([0, *sizes])]
    chunks = [frames[:, a:b] for a, b in zip(edges, edges[1:])]
    weights = tf.constant(rng.standard_normal(frames.shape[:2] + (_STREAM_BINS,)), tf.float32)
    variables = model.trainable_variables
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(chunks)
        got = tf.convert_to_tensor(fn(model, iter(chunks)))
        runs = {"yours": got, "full": unroll(model, tf.concat(chunks, axis=1))[0]}
        state, cut = zero_state(model), []
        for chunk in chunks:
            outputs, state = unroll(model, chunk, tf.stop_gradient(state))
            cut.append(outputs)
        runs["cut"] = tf.concat(cut, axis=1)
        losses = {name: tf.reduce_sum(run * weights) for name, run in runs.items()}
        last = {name: tf.reduce_sum(run[:, -1]) for name, run in runs.items()}
    grads = {name: tape.gradient(loss, variables) for name, loss in losses.items()}
    across = tape.gradient(last["yours"], chunks[:-1])  # every earlier chunk
    within = {name: tape.gradient(last[name], chunks[-1]) for name in ("yours", "cut")}
    del tape
    missing = [variable_name(v) for g, v in zip(grads["yours"], variables) if g is None]
    if missing:
        return (
            False,
            f"The outputs are right, but {', '.join(missing)} get no gradient: the cut "
            "stops more than the state. Stop only what crosses a chunk edge.",
        )
    if _gradient_fault(grads["yours"], grads["full"], variables) is None:
        return (
            False,
            "The outputs are right, but the gradients are a full run's: nothing is cut. "
            "The state crosses each chunk edge with its history; let only its value cross.",
        )
    reached = [i for i, g in enumerate(across) if g is not None and float(tf.reduce_max(tf.abs(g)))]
    if reached:
        return (
            False,
            f"The last output still has a gradient with respect to chunk {reached[-1] + 1} "
            f"of {len(chunks)}: the state crosses a chunk edge with its history.",
        )
    if within["yours"] is None or max_abs_diff(within["yours"], within["cut"]) > 1e-5 * float(
        tf.reduce_max(tf.abs(within["cut"]))
    ):
        return (
            False,
            "The gradient is cut inside a chunk too: the last output does not reach the "
            "frames of its own chunk as it should. Cut at the chunk edges only.",
        )
    if _gradient_fault(grads["yours"], grads["cut"], variables) is not None:
        return (
            False,
            "The gradients differ from a run cut at every chunk edge and only there.",
        )
    return (
        True,
        "Each chunk run as it arrives from the state the previous one ended with (the "
        "outputs of one full run), and backprop cut at every chunk edge, nowhere else.",
    )
