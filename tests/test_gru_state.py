"""helpers.gru_state: the step model, unroll (eager, tf.function, chunked), and the claims
notebooks 01 and 02 make about hand-threaded GRU state."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from matplotlib.figure import Figure

import helpers  # noqa: F401
from helpers.audio import FRAME_LENGTH, HOP_LENGTH
from helpers.dataset import load_clip
from helpers.gru_state import (
    ApplyMask,
    batch_of,
    crop,
    denoise,
    denoising_loss,
    diff_text,
    frames_to_audio,
    keras_rnn_reference,
    make_step_model,
    max_abs_diff,
    noisy_crops,
    numpy_overlap_add,
    plot_state_gradients,
    reference_loop,
    state_size,
    unroll,
    zero_state,
)
from helpers.reproducibility import make_deterministic

UNITS, FEATURES, STEPS, BATCH = 6, 32, 10, 2


@pytest.fixture(scope="module")
def model() -> keras.Model:
    make_deterministic(0)
    return make_step_model(units=UNITS, frame_length=FEATURES)


@pytest.fixture(scope="module")
def frames() -> tf.Tensor:
    rng = np.random.default_rng(0)
    return tf.constant(rng.standard_normal((BATCH, STEPS, FEATURES)), tf.float32)


@pytest.fixture(scope="module")
def state() -> tf.Tensor:
    rng = np.random.default_rng(1)
    return tf.constant(0.5 * rng.standard_normal((BATCH, UNITS)), tf.float32)


@pytest.fixture(scope="module")
def target() -> tf.Tensor:
    rng = np.random.default_rng(2)
    return tf.constant(rng.standard_normal((BATCH, STEPS, FEATURES)), tf.float32)


def _loss(outputs, final_state, target):
    return tf.reduce_mean((outputs - target) ** 2) + 0.1 * tf.reduce_mean(final_state**2)


def _gradients(run, model, target):
    with tf.GradientTape() as tape:
        outputs, final_state = run()
        loss = _loss(outputs, final_state, target)
    return outputs, final_state, tape.gradient(loss, model.trainable_weights)


# ---------------------------------------------------------------------------- the step model


def test_step_model_shapes_and_variables():
    model = make_step_model()
    assert [w.path for w in model.trainable_weights] == [
        "gru_cell/kernel", "gru_cell/recurrent_kernel", "gru_cell/bias", "mask/kernel",
        "mask/bias"]
    out, next_state = model([tf.zeros((3, FRAME_LENGTH)), zero_state(model, 3)])
    assert out.shape == (3, FRAME_LENGTH) and next_state.shape == (3, state_size(model))
    assert make_step_model().trainable_weights[0].path == "gru_cell/kernel"  # names are stable


def test_mask_of_ones_gives_the_input_back():
    audio = np.random.default_rng(3).standard_normal(4000).astype(np.float32) * 0.1
    from helpers.audio import frame

    frames = frame(audio)
    masked = ApplyMask()([frames, tf.ones((frames.shape[0], FRAME_LENGTH // 2 + 1))])
    assert max_abs_diff(masked, frames) < 1e-6
    assert max_abs_diff(frames_to_audio(masked[None], len(audio))[0], audio) < 1e-6


def test_features_start_near_zero_mean_unit_spread():
    """FEATURE_OFFSET and FEATURE_SCALE keep the GRU's inputs in range on the course clips."""
    from helpers.gru_state import LogMagnitude

    noisy, _ = batch_of([load_clip("utterance_1_snr5"), load_clip("utterance_1_snr15")])
    features = LogMagnitude()(noisy)
    assert abs(float(tf.reduce_mean(features))) < 0.2
    assert 0.8 < float(tf.math.reduce_std(features)) < 1.2
    silent = LogMagnitude()(tf.zeros((1, FRAME_LENGTH)))
    assert bool(tf.reduce_all(tf.math.is_finite(silent)))


@pytest.mark.parametrize("units, frame_length", [(0, 512), (4, 0), (4, 511)])
def test_make_step_model_rejects_bad_sizes(units, frame_length):
    with pytest.raises(ValueError, match="expected|must be"):
        make_step_model(units=units, frame_length=frame_length)


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
    @tf.function(input_signature=[tf.TensorSpec((BATCH, None, FEATURES)),
                                  tf.TensorSpec((BATCH, UNITS))])
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
        out, carried = unroll(model, frames[:, start:start + 3], carried)
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


@pytest.mark.parametrize("frames_shape, state_shape, match", [
    ((STEPS, FEATURES), (1, UNITS), r"\(batch, time, features\)"),
    ((1, 1, STEPS, FEATURES), (1, UNITS), r"\(batch, time, features\)"),
    ((BATCH, STEPS, FEATURES), (BATCH + 1, UNITS), "batch mismatch"),
    ((BATCH, STEPS, FEATURES), (BATCH, UNITS + 1), "state size"),
    ((BATCH, STEPS, FEATURES), (UNITS,), r"\(batch, state_size\)"),
    ((BATCH, STEPS, FEATURES + 1), (BATCH, UNITS), "features per frame"),
    ((BATCH, 0, FEATURES), (BATCH, UNITS), "at least one frame"),
])
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


# ---------------------------------------------------------------------------- notebook 01 claims


@pytest.fixture(scope="module")
def audio_model() -> keras.Model:
    make_deterministic(0)
    return make_step_model(units=4)


@pytest.fixture(scope="module")
def audio_frames():
    rng = np.random.default_rng(4)
    frames = tf.constant(0.1 * rng.standard_normal((1, 6, FRAME_LENGTH)), tf.float32)
    clean = tf.constant(0.1 * rng.standard_normal((1, 5 * HOP_LENGTH)), tf.float32)
    return frames, clean


def _seed_gradients(model, frames, clean, *, state_in_variable=False, audio="tf"):
    """The question's loop (dict, rebinding or Variable.assign, NumPy or TF overlap-add)."""
    variable = tf.Variable(zero_state(model), trainable=False)
    with tf.GradientTape() as tape:
        state, outputs = zero_state(model), {}
        for t in range(frames.shape[1]):
            out, nxt = model([frames[:, t], variable if state_in_variable else state])
            outputs[t] = out
            if state_in_variable:
                variable.assign(nxt)
            else:
                state = nxt
        if audio == "numpy":
            enhanced = numpy_overlap_add(outputs, clean.shape[-1])
        else:
            enhanced = frames_to_audio(tf.stack([outputs[t] for t in outputs], 1), clean.shape[-1])
        loss = denoising_loss(clean, enhanced)
    return loss, enhanced, tape.gradient(loss, model.trainable_weights)


def test_numpy_overlap_add_has_the_right_numbers_and_no_gradients(audio_model, audio_frames):
    frames, clean = audio_frames
    np_loss, np_audio, np_grads = _seed_gradients(audio_model, frames, clean, audio="numpy")
    tf_loss, tf_audio, tf_grads = _seed_gradients(audio_model, frames, clean)
    assert max_abs_diff(np_audio, tf_audio) < 1e-6
    assert abs(float(np_loss) - float(tf_loss)) < 1e-6 * float(tf_loss)
    assert all(g is None for g in np_grads) and all(g is not None for g in tf_grads)


def test_variable_assign_truncates_silently(audio_model, audio_frames):
    frames, clean = audio_frames
    _, _, full = _seed_gradients(audio_model, frames, clean)
    _, _, assigned = _seed_gradients(audio_model, frames, clean, state_in_variable=True)
    assert all(g is not None for g in assigned)
    for weight, f, a in zip(audio_model.trainable_weights, full, assigned):
        if weight.path.startswith("mask/"):
            assert max_abs_diff(f, a) == 0
        else:
            assert float(tf.norm(f - a) / tf.norm(f)) > 1e-3


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


# ---------------------------------------------------------------------------- data helpers


def test_crop_and_batch_of():
    clips = [crop(load_clip(n), 0.75) for n in ("utterance_1_snr5", "utterance_1_snr15")]
    assert all(len(c.audio) == len(c.clean) == 12000 for c in clips)
    assert all(len(c.labels.voicing) == 47 for c in clips)
    noisy, clean = batch_of(clips)
    assert noisy.shape == (2, 47, FRAME_LENGTH) and clean.shape == (2, 12000)
    with pytest.raises(ValueError, match="seconds must be"):
        crop(clips[0], 10.0)
    with pytest.raises(ValueError, match="one length"):
        batch_of([clips[0], load_clip("utterance_2_snr5")])


def test_noisy_crops_are_seeded_and_keep_the_noise_level():
    clips = [load_clip("utterance_1_snr5"), load_clip("utterance_1_snr15")]
    a = noisy_crops(clips, 12000, np.random.default_rng(0))
    b = noisy_crops(clips, 12000, np.random.default_rng(0))
    assert max_abs_diff(a[0], b[0]) == 0 and max_abs_diff(a[1], b[1]) == 0
    assert a[0].shape == (2, 47, FRAME_LENGTH) and a[1].shape == (2, 12000)
    noise_power = [np.mean((c.audio - c.clean) ** 2) for c in clips]
    noisy_audio = frames_to_audio(a[0], 12000).numpy()
    crop_noise_power = np.mean((noisy_audio - a[1].numpy()) ** 2, axis=1)
    np.testing.assert_allclose(crop_noise_power, noise_power, rtol=0.1)
    with pytest.raises(ValueError, match="samples must be"):
        noisy_crops(clips, 10**6, np.random.default_rng(0))


def test_denoise_keeps_the_length(audio_model):
    audio = np.random.default_rng(5).standard_normal(3000).astype(np.float32) * 0.1
    assert denoise(audio_model, audio).shape == (3000,)
    assert np.allclose(denoise(audio_model, audio, chunk_size=4), denoise(audio_model, audio),
                       atol=1e-6)


# ---------------------------------------------------------------------------- small helpers


def test_diff_text_and_max_abs_diff():
    assert diff_text(0.0) == "0"
    assert diff_text(8.7e-11) == "< 1e-10"
    assert diff_text(2.98e-8) == "< 1e-7"
    assert max_abs_diff([tf.ones(2)], [tf.zeros(2)]) == 1.0
    with pytest.raises(ValueError, match="None"):
        max_abs_diff(None, tf.ones(1))
    with pytest.raises(ValueError, match="one length"):
        max_abs_diff([tf.ones(1)], [])


def test_plot_state_gradients():
    fig = plot_state_gradients({"full": [1e-3, 1e-4, None], "assign": [1e-5, 1e-5, 1e-5]})
    assert isinstance(fig, Figure)
    with pytest.raises(ValueError, match="at least one curve"):
        plot_state_gradients({})
