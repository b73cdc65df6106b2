"""helpers.recurrence: ``unroll`` (eager, tf.function, chunked) and the references it is checked
against (``reference_loop``, ``keras_rnn_reference``), run over the step model of
``helpers.models.denoisers`` on magnitude frames. The claims about the question's own loop (a
``tf.Variable`` state, a NumPy output helper) are in tests/test_denoiser.py."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.audio import FRAME_LENGTH, load_clip, stft
from helpers.course import make_deterministic
from helpers.diagnosis import max_abs_diff
from helpers.models import make_gru_step_model
from helpers.recurrence.loop import (
    frame_size,
    keras_rnn_reference,
    reference_loop,
    state_size,
    unroll,
    zero_state,
)

UNITS, FEATURES, STEPS, BATCH = 6, 32, 10, 2


@pytest.fixture(scope="module")
def model() -> keras.Model:
    make_deterministic(0)
    return make_gru_step_model(units=UNITS, bins=FEATURES)


@pytest.fixture(scope="module")
def frames() -> tf.Tensor:
    """Magnitude frames (non-negative, like ``|stft|``), ``(batch, time, bins)``."""
    rng = np.random.default_rng(0)
    return tf.constant(np.abs(rng.standard_normal((BATCH, STEPS, FEATURES))), tf.float32)


@pytest.fixture(scope="module")
def state() -> tf.Tensor:
    rng = np.random.default_rng(1)
    return tf.constant(0.5 * rng.standard_normal((BATCH, UNITS)), tf.float32)


@pytest.fixture(scope="module")
def target() -> tf.Tensor:
    """Target masks in [0, 1]."""
    rng = np.random.default_rng(2)
    return tf.constant(rng.uniform(size=(BATCH, STEPS, FEATURES)), tf.float32)


def _loss(outputs, final_state, target):
    return tf.reduce_mean((outputs - target) ** 2) + 0.1 * tf.reduce_mean(final_state**2)


def _gradients(run, model, target):
    with tf.GradientTape() as tape:
        outputs, final_state = run()
        loss = _loss(outputs, final_state, target)
    return outputs, final_state, tape.gradient(loss, model.trainable_weights)


# ---------------------------------------------------------------------------- step model sizes


def test_sizes_and_zero_state_come_from_the_step_model(model):
    assert state_size(model) == UNITS and frame_size(model) == FEATURES
    assert zero_state(model).shape == (1, UNITS)
    state = zero_state(model, 3)
    assert state.shape == (3, UNITS) and state.dtype == tf.float32
    assert float(tf.reduce_max(tf.abs(state))) == 0
    default = make_gru_step_model()
    assert state_size(default) == 32 and frame_size(default) == FRAME_LENGTH // 2 + 1


@pytest.mark.parametrize("function", [state_size, frame_size, zero_state])
def test_sizes_refuse_something_that_is_not_a_step_model(function):
    with pytest.raises(TypeError, match="two inputs"):
        function(keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)]))


# ---------------------------------------------------------------------------- unroll: equality


def test_unroll_equals_plain_reference_loop(model, frames, state, target):
    got = _gradients(lambda: unroll(model, frames, state), model, target)
    ref = _gradients(lambda: reference_loop(model, frames, state), model, target)
    assert got[0].shape == (BATCH, STEPS, FEATURES) and got[1].shape == (BATCH, UNITS)
    assert max_abs_diff(got[0], ref[0]) == 0 and max_abs_diff(got[1], ref[1]) == 0
    assert max_abs_diff(list(got[2]), list(ref[2])) == 0


def test_unroll_equals_keras_rnn_over_the_same_cell(model, frames, state, target):
    got = _gradients(lambda: unroll(model, frames, state), model, target)
    ref = _gradients(lambda: keras_rnn_reference(model, frames, state), model, target)
    assert max_abs_diff(got[0], ref[0]) < 1e-5 and max_abs_diff(got[1], ref[1]) < 1e-5
    assert all(g is not None for g in ref[2])
    assert max_abs_diff(list(got[2]), list(ref[2])) < 1e-5


def test_zero_initial_state_by_default(model, frames):
    a, sa = unroll(model, frames)
    b, sb = unroll(model, frames, zero_state(model, BATCH))
    assert max_abs_diff(a, b) == 0 and max_abs_diff(sa, sb) == 0


def test_eager_equals_tf_function(model, frames, state, target):
    eager = _gradients(lambda: unroll(model, frames, state), model, target)

    @tf.function
    def graph(frames, state):
        return _gradients(lambda: unroll(model, frames, state), model, target)

    traced = graph(frames, state)
    assert max_abs_diff(eager[0], traced[0]) < 1e-6
    assert max_abs_diff(eager[1], traced[1]) < 1e-6
    assert max_abs_diff(list(eager[2]), list(traced[2])) < 1e-6
    assert traced[0].shape == (BATCH, STEPS, FEATURES)  # static shape kept through the loop


def test_tf_function_with_open_time_axis(model, frames, state):
    @tf.function(
        input_signature=[tf.TensorSpec((BATCH, None, FEATURES)), tf.TensorSpec((BATCH, UNITS))]
    )
    def run(frames, state):
        return unroll(model, frames, state)

    expected, expected_state = unroll(model, frames, state)
    for steps in (1, 4, STEPS):
        outputs, final_state = run(frames[:, :steps], state)
        partial, partial_state = unroll(model, frames[:, :steps], state)
        assert max_abs_diff(outputs, partial) < 1e-6
        assert max_abs_diff(final_state, partial_state) < 1e-6
    assert max_abs_diff(outputs, expected) < 1e-6
    assert max_abs_diff(final_state, expected_state) < 1e-6
    assert run.experimental_get_tracing_count() == 1  # one trace serves every length


def test_unroll_works_with_autograph_off(model, frames, state):
    run = tf.function(lambda f, s: unroll(model, f, s), autograph=False)
    outputs, _ = run(frames, state)
    assert max_abs_diff(outputs, unroll(model, frames, state)[0]) < 1e-6


# ---------------------------------------------------------------------------- chunks


@pytest.mark.parametrize("chunk_size", [1, 3, 4, STEPS, STEPS + 5])
def test_chunked_forward_equals_full(model, frames, state, chunk_size):
    full, full_state = unroll(model, frames, state)
    chunked, chunked_state = unroll(model, frames, state, chunk_size=chunk_size)
    assert max_abs_diff(chunked, full) == 0 and max_abs_diff(chunked_state, full_state) == 0
    traced = tf.function(lambda f, s: unroll(model, f, s, chunk_size=chunk_size))
    graph_out, graph_state = traced(frames, state)
    assert max_abs_diff(graph_out, full) < 1e-6 and max_abs_diff(graph_state, full_state) < 1e-6


def test_streaming_by_hand_equals_full(model, frames, state):
    full, full_state = unroll(model, frames, state)
    carried, pieces = state, []
    for start in range(0, STEPS, 3):
        out, carried = unroll(model, frames[:, start : start + 3], carried)
        pieces.append(out)
    assert max_abs_diff(tf.concat(pieces, 1), full) == 0 and max_abs_diff(carried, full_state) == 0


def test_one_chunk_is_not_truncated(model, frames, state, target):
    full = _gradients(lambda: unroll(model, frames, state), model, target)
    whole = _gradients(lambda: unroll(model, frames, state, chunk_size=STEPS), model, target)
    assert max_abs_diff(list(full[2]), list(whole[2])) == 0


def test_truncation_changes_only_the_recurrent_gradients(model, frames, state, target):
    full = _gradients(lambda: unroll(model, frames, state), model, target)[2]
    cut = _gradients(lambda: unroll(model, frames, state, chunk_size=3), model, target)[2]
    names = [w.path for w in model.trainable_weights]
    for name, f, c in zip(names, full, cut):
        assert c is not None
        relative = float(tf.norm(f - c) / tf.norm(f))
        if name.startswith("mask/"):
            assert relative == 0, name  # per-frame layer: same forward values, same gradient
        else:
            assert relative > 1e-4, name  # the GRU: paths across chunk edges are gone


def test_truncation_stops_at_chunk_edges(model, frames, state):
    """With the loss on the last chunk only, earlier frames get exactly zero gradient when
    truncated, and the last chunk's frames get the same gradient as in the full run."""
    chunk = 4
    last = (STEPS - 1) // chunk * chunk  # first frame of the last chunk

    def frame_gradient(chunk_size):
        with tf.GradientTape() as tape:
            tape.watch(frames)
            outputs, _ = unroll(model, frames, state, chunk_size=chunk_size)
            loss = tf.reduce_sum(outputs[:, last:] ** 2)
        return tape.gradient(loss, frames)

    full, cut = frame_gradient(None), frame_gradient(chunk)
    assert float(tf.reduce_max(tf.abs(cut[:, :last]))) == 0
    assert float(tf.reduce_max(tf.abs(full[:, :last]))) > 0
    assert max_abs_diff(cut[:, last:], full[:, last:]) < 1e-6


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "frames_shape, state_shape, match",
    [
        ((STEPS, FEATURES), (1, UNITS), r"\(batch, time, features\)"),
        ((1, 1, STEPS, FEATURES), (1, UNITS), r"\(batch, time, features\)"),
        ((BATCH, STEPS, FEATURES), (BATCH + 1, UNITS), "batch mismatch"),
        ((BATCH, STEPS, FEATURES), (BATCH, UNITS + 1), "state size"),
        ((BATCH, STEPS, FEATURES), (UNITS,), r"\(batch, state_size\)"),
        ((BATCH, STEPS, FEATURES + 1), (BATCH, UNITS), "features per frame"),
        ((BATCH, 0, FEATURES), (BATCH, UNITS), "at least one frame"),
    ],
)
def test_bad_shapes_raise_clear_errors(model, frames_shape, state_shape, match):
    with pytest.raises(ValueError, match=match):
        unroll(model, tf.zeros(frames_shape), tf.zeros(state_shape))


def test_bad_shapes_raise_inside_tf_function_too(model, frames):
    run = tf.function(lambda f, s: unroll(model, f, s))
    with pytest.raises(ValueError, match="batch mismatch"):
        run(frames, tf.zeros((BATCH + 1, UNITS)))


@pytest.mark.parametrize("chunk_size", [0, -2, 1.5, True, "4"])
def test_bad_chunk_size(model, frames, chunk_size):
    with pytest.raises(ValueError, match="chunk_size must be a positive integer"):
        unroll(model, frames, chunk_size=chunk_size)


def test_bad_dtypes_and_model(model, frames):
    with pytest.raises(ValueError, match="floating point"):
        unroll(model, tf.zeros((BATCH, STEPS, FEATURES), tf.int32))
    with pytest.raises(ValueError, match="floating point"):
        unroll(model, frames, tf.zeros((BATCH, UNITS), tf.int32))
    with pytest.raises(TypeError, match="two inputs"):
        unroll(keras.layers.GRUCell(UNITS), frames)


def test_numpy_float64_input_is_accepted(model, frames, state):
    outputs, _ = unroll(model, frames.numpy().astype(np.float64), state.numpy().astype(np.float64))
    assert outputs.dtype == tf.float32
    assert max_abs_diff(outputs, unroll(model, frames, state)[0]) == 0


# ---------------------------------------------------------------------------- why a TensorArray


def test_python_list_in_a_tf_range_loop_fails(model, frames, state):
    @tf.function
    def outputs_in_a_list(frames, state):
        outputs = []
        for t in tf.range(tf.shape(frames)[1]):
            output, state = model([frames[:, t], state])
            outputs.append(output)
        return tf.stack(outputs, axis=1), state

    with pytest.raises(ValueError, match="out of scope") as raised:
        outputs_in_a_list(frames, state)
    assert type(raised.value).__name__ == "InaccessibleTensorError"


# ---------------------------------------------------------------------------- the real sizes


@pytest.fixture(scope="module")
def clip_magnitudes() -> tf.Tensor:
    """``|stft|`` of the first 0.4 s of both noisy utterance_1 clips: (2, 26, 257)."""
    clips = [load_clip(name).audio[:6400] for name in ("utterance_1_snr5", "utterance_1_snr15")]
    return tf.abs(stft(np.stack(clips)))


def test_default_step_model_on_clip_magnitudes_all_three_ways(clip_magnitudes):
    """What the benchmark times: the course's step model on ``|stft|`` frames of real clips,
    by ``unroll`` (eager and in tf.function), the plain loop and ``keras.layers.RNN``."""
    make_deterministic(0)
    model = make_gru_step_model()
    state = zero_state(model, 2)
    assert clip_magnitudes.shape == (2, 26, FRAME_LENGTH // 2 + 1)

    def run(unroller, frames=clip_magnitudes, initial_state=state):
        with tf.GradientTape() as tape:
            masks, final_state = unroller(model, frames, initial_state)
            loss = tf.reduce_mean(masks) + tf.reduce_mean(final_state**2)
        return masks, final_state, tape.gradient(loss, model.trainable_weights)

    ours = run(unroll)
    graph = tf.function(lambda frames, initial_state: run(unroll, frames, initial_state))(
        clip_magnitudes, state
    )
    loop = run(reference_loop)
    rnn = run(keras_rnn_reference)
    masks = ours[0].numpy()
    assert masks.shape == (2, 26, FRAME_LENGTH // 2 + 1) and 0 <= masks.min() <= masks.max() <= 1
    for other, tolerance in ((loop, 0.0), (graph, 1e-6), (rnn, 1e-5)):
        assert max_abs_diff(other[0], ours[0]) <= tolerance
        assert max_abs_diff(other[1], ours[1]) <= tolerance
        assert max_abs_diff(list(other[2]), list(ours[2])) <= tolerance
