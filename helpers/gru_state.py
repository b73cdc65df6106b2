"""The frame-by-frame GRU denoiser of seed 000, and ``unroll``, which threads its state correctly.

The seed's model is a *step model*: it sees one noisy frame and the previous GRU state, and
returns one enhanced frame and the next state. Somebody has to call it once per frame and hand
each step's state to the next. ``unroll`` does that, and does it the way the tape needs:

* the state is threaded as **tensors** (never written into a ``tf.Variable``), so backprop
  reaches through every step back to the first;
* eagerly it is a plain Python loop; inside ``tf.function`` it is a ``tf.while_loop`` whose
  outputs are collected in a ``tf.TensorArray`` (a Python list cannot collect values from a
  graph loop). Both give the same outputs, final state and gradients;
* with ``chunk_size`` it runs chunk by chunk, carrying the state across chunk edges through
  ``tf.stop_gradient``: truncated backprop through time, on purpose. The forward values are
  exactly those of the full run; only the gradients are cut at the edges.

The model itself (``make_step_model``) is a small spectral-mask denoiser built on
``keras.layers.GRUCell``: frame -> log-magnitude spectrum -> GRU -> per-bin mask in [0, 1] ->
masked spectrum -> enhanced frame. Frames are the centred frames of ``helpers.audio.frame``
and the enhanced frames go back to audio with ``helpers.audio.overlap_add``
(``tf.signal.overlap_and_add``). With a mask of ones the whole path gives back its input.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import keras
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf
from matplotlib.figure import Figure

from helpers.audio import FRAME_LENGTH, HOP_LENGTH, frame, overlap_add

UNITS = 32  # GRU state size: small enough to train in seconds on a CPU
EPS = 1e-3  # magnitude floor of the log spectrum (keeps gradients bounded near silence)
# Fixed affine map of the log magnitude to roughly zero mean, unit spread on the course clips,
# so the GRU gates start unsaturated (tests/test_gru_state.py checks it on utterance_1).
FEATURE_OFFSET = -0.7
FEATURE_SCALE = 1.0


# --------------------------------------------------------------------------- the step model


class LogMagnitude(keras.layers.Layer):
    """Frame ``(..., frame_length)`` -> scaled log magnitude ``(..., frame_length // 2 + 1)``.

    ``0.5 * log(|X|^2 + eps^2)`` instead of ``log(|X|)``: finite, with bounded gradients, on
    silent frames (FACTS.md, audio side).
    """

    def __init__(self, eps: float = EPS, offset: float = FEATURE_OFFSET,
                 scale: float = FEATURE_SCALE, **kwargs):
        super().__init__(**kwargs)
        self.eps, self.offset, self.scale = float(eps), float(offset), float(scale)

    def call(self, frames):
        spectrum = tf.signal.rfft(frames)
        power = tf.math.real(spectrum) ** 2 + tf.math.imag(spectrum) ** 2
        return (0.5 * tf.math.log(power + self.eps**2) - self.offset) / self.scale

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], input_shape[-1] // 2 + 1)

    def get_config(self):
        return {**super().get_config(), "eps": self.eps, "offset": self.offset,
                "scale": self.scale}


class ApplyMask(keras.layers.Layer):
    """``[frame, mask]`` -> ``irfft(mask * rfft(frame))``: the frame with each bin scaled."""

    def call(self, inputs):
        frames, mask = inputs
        spectrum = tf.signal.rfft(frames)
        length = frames.shape[-1]
        return tf.signal.irfft(spectrum * tf.cast(mask, spectrum.dtype), fft_length=[length])

    def compute_output_shape(self, input_shape):
        return input_shape[0]


def make_step_model(units: int = UNITS, frame_length: int = FRAME_LENGTH) -> keras.Model:
    """The seed's step model: ``[noisy_frame, previous_state] -> [enhanced_frame, next_state]``.

    Shapes: ``noisy_frame`` and ``enhanced_frame`` are ``(batch, frame_length)``, the states
    ``(batch, units)``. Five trainable variables: ``gru_cell/{kernel, recurrent_kernel, bias}``
    and ``mask/{kernel, bias}``. Layer names are fixed, so variable names are the same however
    many models a notebook builds. Call ``make_deterministic`` first for repeatable weights.
    """
    if int(units) <= 0:
        raise ValueError(f"units must be a positive integer; got {units}.")
    if int(frame_length) <= 0 or int(frame_length) % 2:
        raise ValueError(f"frame_length must be a positive even number; got {frame_length}.")
    bins = frame_length // 2 + 1
    noisy_frame = keras.Input((frame_length,), name="noisy_frame")
    previous_state = keras.Input((units,), name="previous_state")
    features = LogMagnitude(name="features")(noisy_frame)
    gru_output, [next_state] = keras.layers.GRUCell(units, name="gru_cell")(
        features, [previous_state])
    mask = keras.layers.Dense(bins, activation="sigmoid", name="mask")(gru_output)
    enhanced_frame = ApplyMask(name="apply_mask")([noisy_frame, mask])
    return keras.Model([noisy_frame, previous_state], [enhanced_frame, next_state],
                       name="step_model")


def state_size(step_model: keras.Model) -> int:
    """The size of the state the step model expects (its second input's last dimension)."""
    _check_step_model(step_model)
    return int(step_model.inputs[1].shape[-1])


def frame_size(step_model: keras.Model) -> int:
    """The number of features per frame the step model expects (its first input)."""
    _check_step_model(step_model)
    return int(step_model.inputs[0].shape[-1])


def zero_state(step_model: keras.Model, batch_size: int = 1) -> tf.Tensor:
    """An all-zero initial state ``(batch_size, state_size)``."""
    return tf.zeros((int(batch_size), state_size(step_model)))


# --------------------------------------------------------------------------- unroll


@tf.autograph.experimental.do_not_convert  # it builds its own graph loop; nothing to convert
def unroll(step_model: keras.Model, frames, initial_state=None, *, chunk_size: int | None = None,
           training: bool = False) -> tuple[tf.Tensor, tf.Tensor]:
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
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) \
            or chunk_size <= 0:
        raise ValueError(f"chunk_size must be a positive integer or None; got {chunk_size!r}.")
    steps = frames.shape[1]
    if steps is None:
        raise ValueError("chunked unroll needs a time dimension known when tracing; got frames "
                         f"of shape {tuple(frames.shape)}. Call it eagerly, or give the "
                         "tf.function an input_signature with a fixed number of frames.")
    outputs = []
    for start in range(0, steps, int(chunk_size)):
        if start > 0:
            state = tf.stop_gradient(state)  # the chunk edge: backprop stops here, on purpose
        chunk_outputs, state = _unroll_span(step_model, frames[:, start:start + chunk_size],
                                            state, training)
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
    """Inside tf.function: one ``tf.while_loop``, outputs written into a ``TensorArray``.

    This is what AutoGraph makes of ``for t in tf.range(steps): ... ta = ta.write(t, output)``.
    It is written out so it also works where AutoGraph is off.
    """
    steps = tf.shape(frames)[1]
    time_major = tf.transpose(frames, [1, 0, 2])  # (time, batch, features): read frame t as [t]
    output_shape = step_model.outputs[0].shape  # (None, output_features)
    collected = tf.TensorArray(frames.dtype, size=steps,
                               element_shape=tf.TensorShape([frames.shape[0], output_shape[-1]]))

    def body(t, state, collected):
        output, next_state = step_model([time_major[t], state], training=training)
        return t + 1, tf.ensure_shape(next_state, state.shape), collected.write(t, output)

    _, state, collected = tf.while_loop(lambda t, *_: t < steps, body,
                                        (tf.constant(0), state, collected))
    stacked = collected.stack()  # (time, batch, output_features)
    stacked.set_shape([frames.shape[1], frames.shape[0], output_shape[-1]])  # keep known sizes
    return tf.transpose(stacked, [1, 0, 2]), state


def _check_step_model(step_model) -> None:
    inputs = getattr(step_model, "inputs", None)
    if not isinstance(step_model, keras.Model) or inputs is None or len(inputs) != 2:
        raise TypeError("step_model must be a Keras model with two inputs, [frame, state], "
                        f"and two outputs, [output_frame, next_state]; got "
                        f"{type(step_model).__name__}. Build one with make_step_model().")


def _checked_inputs(step_model, frames, initial_state):
    _check_step_model(step_model)
    frames = tf.convert_to_tensor(frames)
    if not frames.dtype.is_floating:
        raise ValueError(f"frames must be floating point; got dtype {frames.dtype.name}.")
    frames = tf.cast(frames, step_model.inputs[0].dtype)  # float64 NumPy in, float32 model
    if frames.shape.rank != 3:
        raise ValueError(f"frames must have shape (batch, time, features); got shape "
                         f"{tuple(frames.shape)} (rank {frames.shape.rank}). For one clip, add "
                         "a batch axis: frames[tf.newaxis].")
    features = frame_size(step_model)
    if frames.shape[-1] is not None and frames.shape[-1] != features:
        raise ValueError(f"frames have {frames.shape[-1]} features per frame; the step model "
                         f"expects {features}.")
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
        raise ValueError(f"initial_state must have shape (batch, state_size) = ({batch}, "
                         f"{units}); got shape {tuple(state.shape)}.")
    if state.shape[-1] is not None and state.shape[-1] != units:
        raise ValueError(f"initial_state has state size {state.shape[-1]}; the step model's "
                         f"state size is {units}. Expected shape ({batch}, {units}).")
    if None not in (batch, state.shape[0]) and state.shape[0] != batch:
        raise ValueError(f"batch mismatch: frames have batch size {batch} but initial_state has "
                         f"{state.shape[0]}. Expected initial_state of shape ({batch}, {units}).")
    return frames, state


# --------------------------------------------------------------------------- references


def reference_loop(step_model: keras.Model, frames, initial_state) -> tuple[tf.Tensor, tf.Tensor]:
    """The simplest correct loop, with no checks and no tricks: what ``unroll`` must equal."""
    state, outputs = initial_state, []
    for t in range(frames.shape[1]):
        output, state = step_model([frames[:, t], state])
        outputs.append(output)
    return tf.stack(outputs, axis=1), state


def keras_rnn_reference(step_model: keras.Model, frames, initial_state
                        ) -> tuple[tf.Tensor, tf.Tensor]:
    """The same computation with ``keras.layers.RNN`` over the step model's own ``GRUCell``.

    The per-frame layers (features, mask, apply_mask) run on all frames at once; Keras runs
    the recurrence. Same variables as the step model, so gradients can be compared one to one.
    """
    frames = tf.convert_to_tensor(frames)
    cell = step_model.get_layer("gru_cell")
    rnn = keras.layers.RNN(cell, return_sequences=True, return_state=True)
    features = step_model.get_layer("features")(frames)
    sequence, final_state = rnn(features, initial_state=[initial_state])
    mask = step_model.get_layer("mask")(sequence)
    return step_model.get_layer("apply_mask")([frames, mask]), final_state


def numpy_overlap_add(outputs_by_frame: Mapping[int, tf.Tensor], length: int,
                      hop_length: int = HOP_LENGTH) -> tf.Tensor:
    """The seed's output helper, written the way many people write it: **it cuts the tape**.

    Same numbers as ``helpers.audio.overlap_add`` (Hann-weighted overlap-add of batch-1
    frames, trimmed to ``length``), but the frames leave TensorFlow through ``.numpy()``: the
    tensor it returns is a new constant the tape has never seen produced. Notebook 01 shows it.
    """
    frames = [outputs_by_frame[t].numpy()[0] for t in range(len(outputs_by_frame))]
    frame_length = frames[0].shape[-1]
    window = np.hanning(frame_length + 1)[:-1].astype(np.float32)  # periodic Hann
    buffer = np.zeros(frame_length + hop_length * (len(frames) - 1), np.float32)
    coverage = np.zeros_like(buffer)
    for t, values in enumerate(frames):
        buffer[t * hop_length:t * hop_length + frame_length] += values * window
        coverage[t * hop_length:t * hop_length + frame_length] += window
    audio = buffer / np.maximum(coverage, 1e-3)
    start = frame_length // 2
    return tf.convert_to_tensor(audio[None, start:start + length])


# --------------------------------------------------------------------------- data and audio


def crop(clip, seconds: float):
    """The first ``seconds`` of a ``helpers.dataset.Clip`` (audio, clean and labels), so a
    notebook can run an eager per-frame loop in a second or two instead of ten."""
    from helpers.audio import num_frames

    samples = int(round(seconds * clip.sample_rate))
    if not 0 < samples <= len(clip.audio):
        raise ValueError(f"seconds must be in (0, {clip.duration:.3f}] for {clip.name}; "
                         f"got {seconds}.")
    return dataclasses.replace(clip, audio=clip.audio[:samples], clean=clip.clean[:samples],
                               labels=clip.labels.slice(0, num_frames(samples)))


def clip_frames(audio) -> tf.Tensor:
    """Centred frames of one clip, as a batch of one: ``(1, time, FRAME_LENGTH)``."""
    return frame(np.asarray(audio, np.float32))[tf.newaxis]


def batch_of(clips: Sequence) -> tuple[tf.Tensor, tf.Tensor]:
    """Noisy frames ``(batch, time, FRAME_LENGTH)`` and clean audio ``(batch, samples)`` of
    ``helpers.dataset.Clip`` objects of one length (for instance ``crop`` of each)."""
    lengths = {len(c.audio) for c in clips}
    if len(lengths) != 1:
        raise ValueError(f"clips in one batch must have one length; got "
                         f"{ {c.name: len(c.audio) for c in clips} }.")
    noisy = tf.stack([frame(c.audio) for c in clips])
    clean = tf.constant(np.stack([c.clean for c in clips]), tf.float32)
    return noisy, clean


def noisy_crops(clips: Sequence, samples: int, rng: np.random.Generator
                ) -> tuple[tf.Tensor, tf.Tensor]:
    """One training batch: a random ``samples``-long window of each clip, with fresh noise.

    The noise of a noisy clip (``audio - clean``) is rolled by a random amount before it is
    added back, so the same white noise meets the speech at a new place every step and the
    model cannot learn one noise waveform by heart. Returns ``batch_of``'s two tensors.
    """
    noisy, clean = [], []
    for clip in clips:
        if not 0 < samples <= len(clip.audio):
            raise ValueError(f"samples must be in 1..{len(clip.audio)} for {clip.name}; "
                             f"got {samples}.")
        start = int(rng.integers(0, len(clip.audio) - samples + 1))
        noise = np.roll(clip.audio - clip.clean, int(rng.integers(0, len(clip.audio))))
        clean.append(clip.clean[start:start + samples])
        noisy.append((clip.clean + noise)[start:start + samples].astype(np.float32))
    return tf.stack([frame(a) for a in noisy]), tf.constant(np.stack(clean), tf.float32)


def denoising_loss(clean_audio, enhanced_audio) -> tf.Tensor:
    """Mean squared error of each clip, summed over the batch (the seed's ``total_loss``)."""
    return tf.reduce_sum(tf.reduce_mean(tf.square(clean_audio - enhanced_audio), axis=-1))


def frames_to_audio(frames, length: int) -> tf.Tensor:
    """Enhanced frames ``(batch, time, FRAME_LENGTH)`` -> audio ``(batch, length)``, in TF."""
    return overlap_add(frames, hop_length=HOP_LENGTH, length=length)


def enhance(step_model: keras.Model, noisy_audio, chunk_size: int | None = None) -> tf.Tensor:
    """One ``(samples,)`` noisy clip -> the enhanced ``(samples,)`` clip, all in TensorFlow:
    frame, ``unroll``, overlap-add. Differentiable, and usable inside ``tf.function``."""
    noisy_audio = np.asarray(noisy_audio, np.float32)
    outputs, _ = unroll(step_model, clip_frames(noisy_audio), chunk_size=chunk_size)
    return frames_to_audio(outputs, len(noisy_audio))[0]


def denoise(step_model: keras.Model, noisy_audio, chunk_size: int | None = None) -> np.ndarray:
    """Enhance one clip (inference); returns audio with the input's length as a NumPy array."""
    return enhance(step_model, noisy_audio, chunk_size).numpy()


def diff_text(difference: float) -> str:
    """A rounding-noise difference as a decade bound (``"< 1e-7"``), or ``"0"`` if exact.

    The digits of a 3e-8 difference depend on the CPU's summation order; its decade is what
    the lesson needs, and it does not change from one machine to the next.
    """
    if difference == 0:
        return "0"
    if not np.isfinite(difference):
        return str(difference)
    return f"< 1e{int(np.floor(np.log10(difference))) + 1}"


def max_abs_diff(a, b) -> float:
    """Largest absolute difference between two tensors, or two equal-length lists of them."""
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            raise ValueError(f"got {len(a)} and {len(b)} tensors; expected lists of one length.")
        if not a:
            return 0.0
        return max(max_abs_diff(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        raise ValueError("cannot compare a None gradient; make every gradient non-None first.")
    return float(tf.reduce_max(tf.abs(tf.cast(a, tf.float64) - tf.cast(b, tf.float64))))


# --------------------------------------------------------------------------- picture


def plot_state_gradients(curves: Mapping[str, Sequence[float | None]],
                         title: str = "how far back the loss reaches: |d loss / d state_t|"
                         ) -> Figure:
    """One line per way of running the loop: the norm of d loss / d state_t at each step t.

    A step whose gradient is None is drawn as a grey cross on the bottom edge, not as a value.
    """
    if not curves:
        raise ValueError("plot_state_gradients needs at least one curve, e.g. {'full': norms}.")
    fig, ax = plt.subplots(figsize=(7.5, 3.4), layout="constrained")
    finite = [v for norms in curves.values() for v in norms if v]
    lo = 10 ** np.floor(np.log10(min(finite)) - 0.5) if finite else 1e-6
    for (label, norms), style in zip(curves.items(), ["-", "--", ":", "-."]):
        steps = np.arange(len(norms))
        values = np.array([np.nan if v is None else v for v in norms], float)
        ax.plot(steps, values, style, marker=".", label=label)
        missing = steps[np.isnan(values)]
        if len(missing):
            ax.plot(missing, np.full(len(missing), lo), "x", color="#555555", clip_on=False,
                    label=f"{label}: None")
    ax.set_yscale("log")
    ax.set_ylim(bottom=lo)
    ax.set_xlabel("step t (frame)")
    ax.set_ylabel("|d loss / d state_t|")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", frameon=False)
    return fig
