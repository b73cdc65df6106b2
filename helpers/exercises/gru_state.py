"""Checkers for the exercises of 01_gru_state_reproduce and 02_gru_state_fix.

Each checker runs the learner's function on a small step model whose weights come from a
local seeded generator (the notebook's global random state is not touched) and compares it with
the reference, ``helpers.recurrence.unroll``, on generated clips and chunk plans
(``helpers.exercises.compare``): outputs or loss, and every gradient, eagerly (where it also
counts the step model's calls: a loop over frames calls it exactly once per frame, on one
frame) and inside ``tf.function``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import keras
import numpy as np
import tensorflow as tf
from hypothesis import strategies as st

from helpers.audio import HOP_LENGTH, REAL_CLIP, load_clip, mix, num_frames, stft
from helpers.course import sig
from helpers.diagnosis import max_abs_diff, variable_name
from helpers.exercises import CheckResult, run_check
from helpers.exercises.compare import (
    GRAPH_ONLY,
    Search,
    error_text,
    first_difference_of,
    two_values,
)
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


def _differing(grads, expected_grads, names) -> list[str]:
    """The names whose gradient differs from the expected one beyond float32 roundoff (a
    relative 1e-4 of the expected gradient's largest value)."""
    return [
        name
        for g, e, name in zip(grads, expected_grads, names)
        if g is None or max_abs_diff(g, e) > 1e-4 * (float(tf.reduce_max(tf.abs(e))) + 1e-12)
    ]


def _gradient_fault(grads, expected_grads, variables) -> str | None:
    missing = [variable_name(v) for g, v in zip(grads, variables) if g is None]
    if missing:
        return f"the gradients of {', '.join(missing)} are None."
    differing = _differing(grads, expected_grads, [variable_name(v) for v in variables])
    if differing:
        return (
            f"the gradients of {', '.join(differing)} differ from a full unroll's: "
            "backprop through time is being cut somewhere."
        )
    return None


# --------------------------------------------------------------------------- exercise 1.1


@dataclass(frozen=True)
class SequenceInput:
    """A clip of random "speech" and noise, ``frames`` STFT frames long, from ``seed``."""

    frames: int
    seed: int

    def make(self) -> tuple[tf.Tensor, tf.Tensor]:
        """``(noisy_spectrum (1, frames, 257), clean_audio (1, samples))``."""
        samples = (self.frames - 1) * HOP_LENGTH
        rng = np.random.default_rng(self.seed)
        clean = tf.constant(0.1 * rng.standard_normal((1, samples)), tf.float32)
        noise = 0.05 * rng.standard_normal((1, samples)).astype("float32")
        return stft(clean + noise), clean

    def __repr__(self) -> str:
        return f"a clip of {self.frames} frames (noise seed {self.seed})"


@dataclass(frozen=True)
class CourseClipCase:
    """The course's clip ``name`` (its longest, by default: ``arctic_a0009``, 194 frames) in
    white noise at ``snr_db``, from ``seed``: the whole length a learner's loop meets."""

    name: str = REAL_CLIP
    snr_db: float = 5.0
    seed: int = 0

    @property
    def frames(self) -> int:
        # Counted from the samples, not from the STFT: importing the checkers runs no
        # TensorFlow op (the grader forks a child per answer from a process that imported them).
        return num_frames(len(load_clip(self.name).clean))

    def make(self) -> tuple[tf.Tensor, tf.Tensor]:
        """``(noisy_spectrum (1, frames, 257), clean_audio (1, samples))``."""
        return _course_clip(self)

    def __repr__(self) -> str:
        return (
            f"the course's clip {self.name} ({self.frames} frames) in white noise at "
            f"{self.snr_db:g} dB (seed {self.seed})"
        )


@cache
def _course_clip(clip: CourseClipCase) -> tuple[tf.Tensor, tf.Tensor]:
    clean = load_clip(clip.name).clean
    noise = np.random.default_rng(clip.seed).standard_normal(len(clean))
    noisy = mix(clean, noise, clip.snr_db)
    return stft(noisy[np.newaxis]), tf.constant(clean[np.newaxis], tf.float32)


@cache
def _graph_unroll(model: keras.Model):
    """``unroll``'s outputs inside one ``tf.function`` for any number of frames (traced once):
    the reference, fast enough to run on every generated clip."""
    spec = tf.TensorSpec((1, None, model.inputs[0].shape[-1]), tf.float32)
    return tf.function(lambda frames: unroll(model, frames)[0], input_signature=[spec])


def reference_sequence_loss(step_model, noisy_spectrum, clean_audio) -> tf.Tensor:
    """The reference answer to 1.1: ``unroll`` threads the state, ``apply_masks`` makes the
    audio, ``denoising_loss`` compares it with the clean audio."""
    masks = _graph_unroll(step_model)(tf.abs(noisy_spectrum))
    return denoising_loss(clean_audio, apply_masks(masks, noisy_spectrum, clean_audio.shape[-1]))


_SEQUENCE_FRAMES = 40  # the first clip: longer than any truncation period a learner tries


def _first_cut(tape, states) -> int | None:
    """The first step whose state is cut off, on the tape, from the state the step before
    received (``stop_gradient``, NumPy, a reset, a Variable), whatever the period, or None.

    One backward pass from the last state asks for its gradient with respect to every state
    before it: those before the last cut get None. The pass is repeated from the state before
    that cut until none is missing (one pass when nothing is cut). From step 2: the first
    state, the learner's zeros, is on no tape."""
    for t in range(1, len(states)):
        if isinstance(states[t], tf.Variable) or states[t] is states[t - 1]:
            return t  # a Variable: what the step reads was assigned, not computed
    first, end = None, len(states) - 1
    while end >= 2:
        reach = tape.gradient(states[end], states[1:end])
        missing = [t for t, gradient in enumerate(reach, 1) if gradient is None]
        if not missing:
            break
        first = missing[-1] + 1  # the first state the pass reaches, after the last one it does not
        end = first - 1
    return first


def _is_scalar(loss) -> str | None:
    if not isinstance(loss, tf.Tensor) or loss.shape.rank != 0:
        return (
            f"expected a scalar tensor loss; got {type(loss).__name__} with shape "
            f"{getattr(loss, 'shape', None)}."
        )
    return None


def _sequence_fault(fn, clip: SequenceInput | CourseClipCase, graph: bool) -> str | None:
    """How the learner's loss differs from the reference on ``clip``, or None."""
    model, log = _counted(4, 257)
    variables = model.trainable_weights
    spectrum, clean = clip.make()
    with tf.GradientTape() as tape:
        expected = reference_sequence_loss(_small_model(4, 257), spectrum, clean)
    expected_grads = tape.gradient(expected, variables)
    where = f"On {clip!r}" + (" inside tf.function" if graph else "")
    if graph:

        @tf.function
        def loss_and_grads():
            with tf.GradientTape() as tape:
                loss = fn(model, spectrum, clean)
            return loss, tape.gradient(loss, variables)

        try:
            loss, grads = loss_and_grads()
        except Exception as error:
            return f"{where} your code raised {error_text(error)}. {GRAPH_ONLY}"
        tape = None
    else:
        log.frame_shapes.clear()
        log.states.clear()
        try:
            with tf.GradientTape(persistent=True) as tape:
                loss = fn(model, spectrum, clean)
        except Exception as error:
            return f"{where} your code raised {error_text(error)}."
        if fault := _calls_fault(log, clip.frames, 1, 257):
            return f"{where}: {fault[0].lower()}{fault[1:]}"
        grads = None
    if fault := _is_scalar(loss):
        return f"{where}: {fault}"
    cut = None
    if tape is not None:
        grads = tape.gradient(loss, variables)
        cut = _first_cut(tape, list(log.states))
    if abs(float(loss) - float(expected)) > 1e-5 * abs(float(expected)):
        got, want = two_values(loss, expected)
        why = (
            f": the state step {cut} receives is not the one the step before returned (the "
            "starting zeros again, a reset, or a copy), so the loop forgets what came before"
            if cut is not None
            else ""
        )
        return f"{where} your loss is {got}; the reference (a full unroll) gives {want}{why}."
    if cut is not None:
        return (
            f"{where}: the same loss, but the state step {cut} receives is cut off from the "
            "step before it: backprop through time stops there, so earlier steps learn "
            "nothing from what comes after. Pass each step the very tensor the step before "
            "returned."
        )
    if fault := _gradient_fault(grads, expected_grads, variables):
        return f"{where}: {fault}"
    return None


# The longest clip of the course, run eagerly on every call: a loop must hold over the whole
# length a learner's clips have, and a cut at any frame of it fails there.
LONGEST_CLIP = CourseClipCase()
_CLIPS = st.builds(SequenceInput, st.integers(2, LONGEST_CLIP.frames), st.integers(0, 2**16))
# Inside tf.function a Python loop is traced frame by frame (about a minute for 194 frames):
# short clips there, where what can differ is the mode (a tensor without a value, a Variable
# made in the function), not the length.
_SHORT_CLIPS = st.builds(SequenceInput, st.integers(2, 6), st.integers(0, 2**16))


def _frames_text(clips) -> str:
    lengths = [str(clip.frames) for clip in clips]
    listed = lengths[0] if len(lengths) == 1 else f"{', '.join(lengths[:-1])} and {lengths[-1]}"
    return f"{len(lengths)} clip{'s' if len(lengths) > 1 else ''} of {listed} frames"


def check_sequence_loss(function) -> CheckResult:
    """``function(step_model, noisy_spectrum, clean_audio)`` must return the denoising loss
    of a hand-threaded loop: one step-model call per frame, each given the state the step
    before returned (as a tensor), the masks turned into audio in TensorFlow; the same value
    and gradients as the reference (a full unroll).

    The domain is the course's clips: 2 frames up to the longest, ``arctic_a0009`` (194
    frames; the utterances have 91 to 97). Compared eagerly on a 40-frame clip (the trap),
    then on the whole of ``arctic_a0009`` in noise (the boundary, on every call), then on 2
    generated clips of 2 to 194 frames; and inside ``tf.function`` on one generated clip of
    2 to 6 frames (tracing a Python loop of 194 frames takes about a minute). Eagerly the
    step model must be called once per frame, and the tape must connect the state each step
    receives to the step before it (a backward pass from the last state asks for its gradient
    with respect to every state before it), so a cut or a reset at any frame up to the clip's
    length fails, at that frame."""

    def check(fn):
        eager: list = []
        graph: list = []
        difference = first_difference_of(
            [
                Search(_CLIPS, lambda clip: _sequence_fault(fn, clip, False),
                       traps=[SequenceInput(_SEQUENCE_FRAMES, 6)], boundaries=[LONGEST_CLIP],
                       examples=2, runs=6, tried=eager),
                Search(_SHORT_CLIPS, lambda clip: _sequence_fault(fn, clip, True), examples=1,
                       runs=6, tried=graph),
            ]
        )  # fmt: skip
        if difference is not None:
            return False, difference.message
        return (
            True,
            "One call per frame, each given the state the step before returned: the "
            "reference's loss and gradients, and every step's state connected to the step "
            f"before it, eagerly on {_frames_text(eager)} (the {LONGEST_CLIP.frames}-frame "
            f"one is {LONGEST_CLIP.name}, the course's longest), and the same loss and "
            f"gradients inside tf.function on {_frames_text(graph)}.",
        )

    return run_check(
        "Exercise 1.1 (the hand-threaded loop)",
        function,
        check,
        hint="The tape follows operations, not names or containers: each frame's "
        "step must take the state the step before it returned, and the masks "
        "must stay tensors all the way to the loss. The clips have up to 194 frames.",
    )


# --------------------------------------------------------------------------- exercise 2.1

_STREAM_BINS, _STREAM_UNITS = 16, 4


class _Arrivals:
    """Chunks that arrive one at a time, read once (as from a microphone); remembers how many
    step-model calls had been made each time the next chunk was asked for."""

    def __init__(self, chunks: list[tf.Tensor], log: _CallLog | None):
        self.chunks, self.log = chunks, log
        self.calls_at_request: list[int] = []
        self._next = 0

    def __iter__(self):
        if self._next:
            raise RuntimeError(
                "the chunks arrive once, as from a microphone: a second pass over them "
                "finds nothing. Keep what you need of each chunk as it arrives."
            )
        return self

    def __next__(self) -> tf.Tensor:
        if self.log is not None:
            self.calls_at_request.append(len(self.log.frame_shapes))
        if self._next == len(self.chunks):
            self._next += 1
            raise StopIteration
        self._next += 1
        return self.chunks[self._next - 1]


@dataclass(frozen=True)
class ChunkPlan:
    """Frames of random features cut into chunks of the given sizes, from ``seed``."""

    sizes: tuple[int, ...]
    seed: int

    def make(self) -> tuple[tf.Tensor, list[tf.Tensor], tf.Tensor]:
        """``(frames (1, time, 16), the chunks, weights for a loss over the outputs)``."""
        rng = np.random.default_rng(self.seed)
        time = sum(self.sizes)
        frames = tf.constant(0.1 * rng.standard_normal((1, time, _STREAM_BINS)), tf.float32)
        edges = [int(n) for n in np.cumsum([0, *self.sizes])]
        chunks = [frames[:, a:b] for a, b in zip(edges, edges[1:])]
        weights = tf.constant(rng.standard_normal((1, time, _STREAM_BINS)), tf.float32)
        return frames, chunks, weights

    def __repr__(self) -> str:
        return f"chunks of {list(self.sizes)} frames (seed {self.seed})"


def reference_truncated_unroll(step_model, chunks) -> tf.Tensor:
    """The reference answer to 2.1: each chunk unrolled as it arrives from the state the one
    before ended with, that state's gradient stopped at the edge."""
    outputs, state = [], zero_state(step_model)
    for chunk in chunks:
        chunk_outputs, state = unroll(step_model, chunk, tf.stop_gradient(state))
        outputs.append(chunk_outputs)
    return tf.concat(outputs, axis=1)


@cache
def _cut_unroll(model: keras.Model):
    """The references of 2.1 as one ``tf.function`` (traced once): ``model`` unrolled over
    ``frames`` from zeros, the state's gradient stopped before every frame where ``cut`` is
    True; the outputs, and the gradients of ``sum(outputs * weights)`` with respect to the
    variables and to the frames. Cut at the chunk edges, it is the reference; nowhere, one
    full run; at every frame, a run that stops every gradient through time."""
    frames_spec = tf.TensorSpec((1, None, _STREAM_BINS), tf.float32)
    cut_spec = tf.TensorSpec((None,), tf.bool)

    @tf.function(input_signature=[frames_spec, cut_spec, frames_spec])
    def run(frames, cut, weights):
        variables = model.trainable_variables
        with tf.GradientTape() as tape:
            tape.watch(frames)
            steps = tf.shape(frames)[1]
            time_major = tf.transpose(frames, [1, 0, 2])
            collected = tf.TensorArray(tf.float32, size=steps, element_shape=(1, _STREAM_BINS))

            def body(t, state, collected):
                state = tf.where(cut[t], tf.stop_gradient(state), state)
                output, state = model([time_major[t], state])
                return t + 1, tf.ensure_shape(state, (1, _STREAM_UNITS)), collected.write(t, output)

            start = (tf.constant(0), zero_state(model), collected)
            _, _, collected = tf.while_loop(lambda t, *_: t < steps, body, start)
            outputs = tf.transpose(collected.stack(), [1, 0, 2])
            loss = tf.reduce_sum(outputs * weights)
        grads = tape.gradient(loss, [*variables, frames])
        return outputs, grads[:-1], grads[-1]

    return run


def _reference_run(plan: ChunkPlan, cut_at: str):
    """``(outputs, variable gradients, chunk gradients)`` of ``_cut_unroll`` on ``plan``, cut
    at ``"edges"`` (the reference), ``"nowhere"`` or ``"every frame"``."""
    frames, _, weights = plan.make()
    edges = [int(n) for n in np.cumsum([0, *plan.sizes])]
    cut = np.zeros(edges[-1], bool)
    if cut_at == "edges":
        cut[edges[1:-1]] = True
    elif cut_at == "every frame":
        cut[1:] = True
    outputs, grads, frame_grads = _cut_unroll(_small_model(_STREAM_UNITS, _STREAM_BINS))(
        frames, tf.constant(cut), weights
    )
    return outputs, grads, [frame_grads[:, a:b] for a, b in zip(edges, edges[1:])]


def _outputs_and_gradients(fn, model, plan: ChunkPlan, log, graph: bool):
    """``fn``'s outputs for the plan, and the gradients of a weighted sum of them with
    respect to the variables and to each chunk (eagerly, or all inside ``tf.function``)."""
    _, chunks, weights = plan.make()
    variables = model.trainable_variables
    arrivals = _Arrivals(chunks, log)

    def run():
        with tf.GradientTape() as tape:
            tape.watch(chunks)
            outputs = tf.convert_to_tensor(fn(model, arrivals))
            loss = tf.reduce_sum(outputs * weights) if outputs.shape == weights.shape else None
        if loss is None:
            return outputs, None, None
        grads = tape.gradient(loss, [*variables, *chunks])
        return outputs, grads[: len(variables)], grads[len(variables) :]

    if graph:
        return (*tf.function(run)(), arrivals)
    return (*run(), arrivals)


def _cut_inside_a_chunk(fn, plan: ChunkPlan) -> tuple[int, int] | None:
    """``(chunk, step)``, both from 1: the first step inside a chunk whose state the
    learner's code cut off from the step before it, found on the tape of an eager run (as
    ``_first_cut`` finds it in 1.1); None when no cut inside a chunk is found. A second run,
    made only to explain a difference."""
    model, log = _counted(_STREAM_UNITS, _STREAM_BINS)
    log.frame_shapes.clear()
    log.states.clear()
    _, chunks, _ = plan.make()
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(chunks)
        fn(model, _Arrivals(chunks, None))
    states = list(log.states)
    edges = [int(n) for n in np.cumsum([0, *plan.sizes])]
    if len(states) != edges[-1]:
        return None
    for number, (start, stop) in enumerate(zip(edges, edges[1:]), 1):
        cut = _first_cut(tape, states[start:stop])
        if cut is not None:
            return number, cut
    return None


def _stream_fault(fn, plan: ChunkPlan, graph: bool) -> str | None:
    """How the learner's truncated unroll differs from the reference on ``plan``, or None."""
    model, log = _counted(_STREAM_UNITS, _STREAM_BINS)
    object.__setattr__(log, "forgive_repeats", True)  # keras.layers.RNN's output probe
    log.frame_shapes.clear()
    where = f"With {plan!r}" + (" inside tf.function" if graph else "")
    try:
        got, grads, chunk_grads, arrivals = _outputs_and_gradients(
            fn, model, plan, None if graph else log, graph
        )
    except Exception as error:
        cause = ""
        if "_Arrivals" in str(error) or "generator" in str(error):
            cause = (
                " The chunks arrive one at a time, an iterator read once: loop over them "
                "(or make a list of them first); TensorFlow cannot take the iterator itself."
            )
        elif graph:
            cause = " " + GRAPH_ONLY
        return f"{where}, your code raised {error_text(error)}.{cause}"
    frames = sum(plan.sizes)
    shape = (1, frames, _STREAM_BINS)
    if tuple(got.shape) != shape:
        return f"{where} you returned shape {tuple(got.shape)}; expected {shape}."
    if not graph:
        if fault := _calls_fault(log, frames, 1, _STREAM_BINS):
            return f"{where}, {fault[0].lower()}{fault[1:]}"
        done = [int(n) for n in np.cumsum([0, *plan.sizes])]
        if arrivals.calls_at_request[: len(done)] != done:
            return (
                f"{where}, the step model had been called {arrivals.calls_at_request[:-1]} "
                f"times when each chunk was read; each chunk is run before the next arrives "
                f"({done[:-1]})."
            )
    expected, expected_grads, expected_chunk_grads = _reference_run(plan, "edges")
    difference = max_abs_diff(got, expected)
    if difference > 1e-5:
        per_frame = tf.reduce_max(tf.abs(got - expected), axis=[0, 2]).numpy()
        first_bad = int(np.flatnonzero(per_frame > 1e-5)[0])
        return (
            f"{where} your outputs differ from one full unroll by up to {sig(difference)}, "
            f"first at frame {first_bad}: the forward pass must carry the state's value "
            "across every edge."
        )
    variables = model.trainable_variables
    missing = [variable_name(v) for g, v in zip(grads, variables) if g is None]
    if missing:
        return (
            f"{where} the outputs are right, but {', '.join(missing)} get no gradient: the "
            "cut stops more than the state. Stop only what crosses a chunk edge."
        )
    names = [variable_name(v) for v in variables]
    chunk_names = [f"chunk {i + 1}" for i in range(len(plan.sizes))]
    if not _differing(grads, expected_grads, names) and not _differing(
        chunk_grads, expected_chunk_grads, chunk_names
    ):
        return None
    full_grads, full_chunk_grads = _reference_run(plan, "nowhere")[1:]
    if len(plan.sizes) > 1 and not _differing(grads, full_grads, names) + _differing(
        chunk_grads, full_chunk_grads, chunk_names
    ):
        return (
            f"{where} the outputs are right, but the gradients are a full run's: nothing is "
            "cut. The state crosses each chunk edge with its history; let only its value cross."
        )
    cut_grads, cut_chunk_grads = _reference_run(plan, "every frame")[1:]
    if not _differing(grads, cut_grads, names) + _differing(
        chunk_grads, cut_chunk_grads, chunk_names
    ):
        return (
            f"{where} the outputs are right, but the gradient is cut inside a chunk too, at "
            "every frame: an output does not reach the earlier frames of its own chunk as it "
            "should. Cut at the chunk edges only."
        )
    inside = None if graph else _cut_inside_a_chunk(fn, plan)
    if inside is not None:
        chunk, step = inside
        return (
            f"{where} the outputs are right, but backprop through time also stops inside "
            f"chunk {chunk}: the state its step {step} receives (of {plan.sizes[chunk - 1]}) "
            "is cut off from the step before it. Cut at the chunk edges only, however long a "
            "chunk is."
        )
    wrong = _differing(chunk_grads, expected_chunk_grads, chunk_names)
    if wrong:
        return (
            f"{where} the outputs are right, but the gradients with respect to "
            f"{', '.join(wrong)} differ from those of a run cut at every chunk edge and only "
            "there: a gradient crosses an edge it should not, or stops inside a chunk."
        )
    return (
        f"{where} the outputs are right, but the gradients of "
        f"{', '.join(_differing(grads, expected_grads, names))} differ from those of a run "
        "cut at every chunk edge and only there."
    )


@st.composite
def _chunk_plans(draw, most_frames: int, largest_chunk: int) -> ChunkPlan:
    sizes = draw(st.lists(st.integers(1, largest_chunk), min_size=1, max_size=6))
    while len(sizes) > 1 and sum(sizes) > most_frames:
        sizes.pop()
    return ChunkPlan(tuple(sizes), draw(st.integers(0, 2**16)))


# The domain: chunks of 1 to 100 frames, plans up to a whole clip (arctic_a0009, 194 frames).
# Its edge is run eagerly on every call: a whole clip in a 100-frame chunk and a 94-frame one,
# where an extra cut at any frame of either chunk, or a missing one at the edge, fails.
LARGEST_CHUNK = 100
WHOLE_CLIP_PLAN = ChunkPlan((LARGEST_CHUNK, LONGEST_CLIP.frames - LARGEST_CHUNK), 11)
_PLANS = _chunk_plans(LONGEST_CLIP.frames, LARGEST_CHUNK)
# Inside tf.function a Python loop over frames is traced frame by frame (about a minute for a
# whole clip): short plans there, where what can differ is the mode, not the length.
_SHORT_PLANS = _chunk_plans(8, 8)


def _plans_text(plans: list[ChunkPlan]) -> str:
    listed = [str(list(plan.sizes)) for plan in plans]
    shown = listed[0] if len(listed) == 1 else f"{', '.join(listed[:-1])} and {listed[-1]}"
    return f"{len(plans)} plan{'s' if len(plans) > 1 else ''} (chunks of {shown} frames)"


def check_truncated_unroll(function) -> CheckResult:
    """``function(step_model, chunks)`` gets the frames as chunks ``(1, n, features)`` that
    arrive one at a time (an iterator, read once) and must return all outputs
    ``(1, time, features)``: each chunk run as it arrives from the state the previous chunk
    ended with, and backprop through time cut at every chunk edge, and only there (truncated
    BPTT on chunks of any size).

    The domain: chunks of 1 to 100 frames, in plans up to a whole clip (194 frames, the
    course's longest). Compared with the reference eagerly on chunks of 3, 4 and 3 frames (the
    trap), then on a whole clip cut into 100 and 94 frames (the boundary, on every call), then
    on 2 generated plans (1 to 6 chunks of 1 to 100 frames, at most 194 in all); and inside
    ``tf.function`` on chunks of 2 and 3 frames and on one generated plan of at most 8 frames
    (tracing a Python loop over a whole clip takes about a minute). Compared: the outputs, and
    the gradients of a weighted sum of them with respect to every variable and every chunk.
    Eagerly the step model must be called once per frame, on one frame, and every frame of a
    chunk before the next chunk is read; a cut inside a chunk is named at its step."""

    def check(fn):
        eager: list[ChunkPlan] = []
        graph: list[ChunkPlan] = []
        difference = first_difference_of(
            [
                Search(_PLANS, lambda plan: _stream_fault(fn, plan, False),
                       traps=[ChunkPlan((3, 4, 3), 7)], boundaries=[WHOLE_CLIP_PLAN],
                       examples=2, runs=6, tried=eager),
                Search(_SHORT_PLANS, lambda plan: _stream_fault(fn, plan, True),
                       traps=[ChunkPlan((2, 3), 8)], examples=1, runs=6, tried=graph),
            ]
        )  # fmt: skip
        if difference is not None:
            return False, difference.message
        return (
            True,
            "Each chunk run as it arrives from the state the previous one ended with (the "
            "outputs of one full run), and backprop cut at every chunk edge, nowhere else: "
            f"the reference's outputs and gradients eagerly on {_plans_text(eager)}, and "
            f"inside tf.function on {_plans_text(graph)}.",
        )

    return run_check(
        "Exercise 2.1 (truncate at the chunk edges)",
        function,
        check,
        hint="What crosses a chunk edge is the state: its value must cross, its "
        "history must not. Cut there, and nowhere else, in a way that also works inside "
        "tf.function.",
    )
