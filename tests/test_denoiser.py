"""helpers.models.denoisers: the GRU step model, the conv denoiser, ``apply_masks``, ``enhance`` and
``denoise`` for both, and the claims notebooks 01 and 02 make about the GRU question's
own loop (its ``tf.Variable`` state)."""

from __future__ import annotations

import random

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.audio import (
    FRAME_LENGTH,
    HOP_LENGTH,
    AudioError,
    batch_of,
    load_clip,
    num_frames,
    stft,
)
from helpers.course import make_deterministic
from helpers.diagnosis import gradient_report, max_abs_diff
from helpers.models.denoisers import (
    BINS,
    GRU_UNITS,
    Gain,
    LogMagnitude,
    apply_masks,
    denoise,
    denoising_loss,
    enhance,
    is_step_model,
    make_conv_denoiser,
    make_dense_frame_denoiser,
    make_gru_floor_step_model,
    make_gru_step_model,
)
from helpers.recurrence import zero_state

RNG = np.random.default_rng(3)
AUDIO = (0.1 * RNG.standard_normal(3000)).astype(np.float32)


@pytest.fixture(scope="module")
def step_model() -> keras.Model:
    make_deterministic(0)
    return make_gru_step_model(units=4)


@pytest.fixture(scope="module")
def waveform_model() -> keras.Model:
    return make_conv_denoiser(seed=3)


# ---------------------------------------------------------------------------- the step model


def test_step_model_shapes_and_variables():
    model = make_gru_step_model()
    assert BINS == FRAME_LENGTH // 2 + 1 == 257 and GRU_UNITS == 32
    assert [w.path for w in model.trainable_weights] == [
        "gru_cell/kernel",
        "gru_cell/recurrent_kernel",
        "gru_cell/bias",
        "mask/kernel",
        "mask/bias",
    ]
    assert [tuple(i.shape) for i in model.inputs] == [(None, BINS), (None, GRU_UNITS)]
    magnitudes = tf.abs(tf.random.stateless_normal((3, BINS), seed=(1, 2)))
    mask, next_state = model([magnitudes, zero_state(model, 3)])
    assert mask.shape == (3, BINS) and next_state.shape == (3, GRU_UNITS)
    assert 0.0 <= float(tf.reduce_min(mask)) <= float(tf.reduce_max(mask)) <= 1.0
    assert make_gru_step_model().trainable_weights[0].path == "gru_cell/kernel"  # names are stable
    small = make_gru_step_model(units=5, bins=17)
    assert [tuple(i.shape) for i in small.inputs] == [(None, 17), (None, 5)]
    assert [tuple(o.shape) for o in small.outputs] == [(None, 17), (None, 5)]


@pytest.mark.parametrize(
    "units, bins, match",
    [
        (0, 257, "units must be a positive integer"),
        (-3, 257, "units must be a positive integer"),
        (True, 257, "units must be a positive integer"),
        (4, 1, "bins must be an integer >= 2"),
        (4, 0, "bins must be an integer >= 2"),
        (4, False, "bins must be an integer >= 2"),
    ],
)
def test_make_gru_step_model_rejects_bad_sizes(units, bins, match):
    with pytest.raises(ValueError, match=match):
        make_gru_step_model(units=units, bins=bins)


BUILDERS = {  # every builder whose layers draw their initial weights, at a small size
    "make_gru_step_model": (make_gru_step_model, {"units": 3, "bins": 5}),
    "make_gru_floor_step_model": (make_gru_floor_step_model, {"units": 3, "bins": 5}),
    "make_dense_frame_denoiser": (make_dense_frame_denoiser, {"units": 3, "frame_length": 8}),
}


def _weights(model: keras.Model) -> list[np.ndarray]:
    return [w.numpy() for w in model.weights]


@pytest.mark.parametrize("name", BUILDERS)
def test_a_builders_initial_weights_come_from_its_seed_alone(name):
    """Keras draws an unseeded initializer's seed from Python's global random state, which a
    reconnecting JupyterLab page moves: a notebook cell that builds a model must give the
    same weights when it runs again, after any other draws, and other ones for another seed."""
    make, sizes = BUILDERS[name]
    first = _weights(make(seed=1, **sizes))
    random.seed(12345)  # the state moved, as between two cells after a reload
    random.random()
    again = _weights(make(seed=1, **sizes))
    other = _weights(make(seed=2, **sizes))
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other, strict=True))


@pytest.mark.parametrize("name", BUILDERS)
@pytest.mark.parametrize("seed", [-1, 1.5, "0"])
def test_a_builder_refuses_a_seed_that_is_not_a_non_negative_integer(name, seed):
    make, sizes = BUILDERS[name]
    with pytest.raises(ValueError, match="seed must be"):
        make(seed=seed, **sizes)


def test_features_start_near_zero_mean_unit_spread():
    """FEATURE_OFFSET and FEATURE_SCALE keep the GRU's inputs in range on the course clips:
    ``LogMagnitude`` of ``|stft|`` of both noisy versions of utterance_1."""
    noisy, _ = batch_of([load_clip("utterance_1_snr5"), load_clip("utterance_1_snr15")])
    features = LogMagnitude()(tf.abs(noisy))
    assert features.shape == noisy.shape == (2, 91, BINS)
    assert abs(float(tf.reduce_mean(features))) < 0.2
    assert 0.8 < float(tf.math.reduce_std(features)) < 1.2


def test_features_are_finite_with_bounded_gradients_on_silence():
    silence = tf.Variable(tf.zeros((1, BINS)))
    with tf.GradientTape() as tape:
        features = LogMagnitude()(silence)
    assert bool(tf.reduce_all(tf.math.is_finite(features)))
    gradient = tape.gradient(features, silence)
    assert bool(tf.reduce_all(tf.math.is_finite(gradient)))
    silent_clip = load_clip("silence").audio
    assert bool(tf.reduce_all(tf.math.is_finite(LogMagnitude()(tf.abs(stft(silent_clip))))))


def test_log_magnitude_config_round_trips():
    layer = LogMagnitude(eps=1e-2, offset=0.5, scale=2.0, name="f")
    clone = LogMagnitude.from_config(layer.get_config())
    x = tf.constant([[0.0, 0.1, 3.0]])
    assert max_abs_diff(clone(x), layer(x)) == 0
    assert max_abs_diff(layer(x), (0.5 * tf.math.log(x**2 + 1e-4) - 0.5) / 2.0) < 1e-6


# ---------------------------------------------------------------------------- apply_masks


def test_mask_of_ones_gives_the_input_back():
    spectrum = stft(AUDIO)[tf.newaxis]
    ones = tf.ones(spectrum.shape)
    rebuilt = apply_masks(ones, spectrum, len(AUDIO))
    assert rebuilt.shape == (1, len(AUDIO))
    assert max_abs_diff(rebuilt[0], AUDIO) < 1e-5
    assert max_abs_diff(apply_masks(tf.zeros(spectrum.shape), spectrum, len(AUDIO)), 0.0) == 0
    half = apply_masks(tf.fill(spectrum.shape, 0.5), spectrum, len(AUDIO))
    assert max_abs_diff(half[0], 0.5 * AUDIO) < 1e-5


def test_apply_masks_is_differentiable_with_respect_to_the_masks():
    spectrum = stft(AUDIO)[tf.newaxis]
    masks = tf.Variable(tf.fill(spectrum.shape, 0.5))
    with tf.GradientTape() as tape:
        loss = denoising_loss(AUDIO[None], apply_masks(masks, spectrum, len(AUDIO)))
    grad = tape.gradient(loss, masks)
    assert grad is not None and float(tf.reduce_max(tf.abs(grad))) > 0


@pytest.mark.parametrize("mask_shape", [(1, 5, BINS), (1, 12, 100), (BINS,)])
def test_masks_that_do_not_fit_the_spectrum_are_refused(mask_shape):
    spectrum = stft(AUDIO)[tf.newaxis]  # (1, 12, 257)
    with pytest.raises(ValueError, match="do not fit the spectrum"):
        apply_masks(tf.ones(mask_shape), spectrum, len(AUDIO))


def test_denoising_loss_is_the_per_clip_mse_summed_over_the_batch():
    clean = tf.constant([[0.0, 0.0], [1.0, 1.0]])
    enhanced = tf.constant([[1.0, 1.0], [1.0, 3.0]])
    assert float(denoising_loss(clean, enhanced)) == pytest.approx(1.0 + 2.0)
    assert float(denoising_loss(clean, clean)) == 0


# ---------------------------------------------------------------------------- the waveform model


def test_waveform_denoiser_starts_near_passing_its_input_through(waveform_model):
    assert sorted(w.path for w in waveform_model.trainable_weights) == [
        "filter_bank/bias",
        "filter_bank/kernel",
        "mix/bias",
        "mix/kernel",
        "skip/gain",
    ]
    skip = waveform_model.get_layer("skip")
    assert isinstance(skip, Gain) and float(skip.gain) == 1.0
    out = waveform_model(AUDIO[None, :, None])
    assert out.shape == (1, len(AUDIO), 1)
    assert max_abs_diff(out[0, :, 0], AUDIO) < 0.3 * float(np.max(np.abs(AUDIO)))


def test_waveform_denoiser_seed_gives_the_same_weights():
    a, b, c = make_conv_denoiser(seed=7), make_conv_denoiser(seed=7), make_conv_denoiser(seed=8)
    assert max_abs_diff(a.get_weights(), b.get_weights()) == 0
    assert max_abs_diff(a.get_weights(), c.get_weights()) > 0


# ---------------------------------------------------------------------------- enhance / denoise


def test_is_step_model(step_model, waveform_model):
    assert is_step_model(step_model) and not is_step_model(waveform_model)
    with pytest.raises(TypeError, match="expected a Keras model"):
        is_step_model(lambda x: x)


@pytest.mark.parametrize("length", [1, 255, 3000])
@pytest.mark.parametrize("kind", ["step", "waveform"])
def test_enhance_and_denoise_keep_the_length(step_model, waveform_model, kind, length):
    model = step_model if kind == "step" else waveform_model
    audio = AUDIO[:length]
    enhanced = enhance(model, audio)
    assert isinstance(enhanced, tf.Tensor) and enhanced.shape == (length,)
    assert enhanced.dtype == tf.float32
    if length < HOP_LENGTH:
        with pytest.raises(AudioError, match=f"expected at least {HOP_LENGTH}"):
            denoise(model, audio)
        return
    denoised = denoise(model, audio)
    assert isinstance(denoised, np.ndarray) and denoised.shape == (length,)
    np.testing.assert_array_equal(denoised, enhanced.numpy())


def test_step_model_enhance_is_stft_unroll_apply_masks(step_model):
    """``enhance`` of a step model: its masks, on the noisy STFT, back to audio."""
    from helpers.recurrence import unroll

    spectrum = stft(AUDIO)[tf.newaxis]
    masks, _ = unroll(step_model, tf.abs(spectrum))
    assert masks.shape == (1, num_frames(len(AUDIO)), BINS)
    expected = apply_masks(masks, spectrum, len(AUDIO))[0]
    assert max_abs_diff(enhance(step_model, AUDIO), expected) == 0


def test_chunked_enhance_has_the_same_output(step_model):
    np.testing.assert_allclose(
        denoise(step_model, AUDIO, chunk_size=4), denoise(step_model, AUDIO), atol=1e-6
    )


@pytest.mark.parametrize("kind", ["step", "waveform"])
def test_enhance_is_differentiable(step_model, waveform_model, kind):
    model = step_model if kind == "step" else waveform_model
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((enhance(model, AUDIO) - AUDIO) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    assert gradient_report(grads, model.trainable_variables).all("ok")


@pytest.mark.parametrize("kind", ["step", "waveform"])
def test_enhance_in_tf_function_equals_eager(step_model, waveform_model, kind):
    model = step_model if kind == "step" else waveform_model
    variables = model.trainable_variables

    def value_and_gradients(audio):
        with tf.GradientTape() as tape:
            enhanced = enhance(model, audio)
            loss = tf.reduce_mean((enhanced - AUDIO) ** 2)
        return enhanced, tape.gradient(loss, variables)

    eager = value_and_gradients(tf.constant(AUDIO))
    graph = tf.function(value_and_gradients)(tf.constant(AUDIO))
    assert max_abs_diff(graph[0], eager[0]) < 1e-6
    assert max_abs_diff(list(graph[1]), list(eager[1])) < 1e-5


@pytest.mark.parametrize(
    "bad, error, match",
    [
        (np.zeros((2, 1000), np.float32), AudioError, r"shape \(samples,\)"),
        (np.zeros((1000, 1), np.float32), AudioError, r"shape \(samples,\)"),
        (np.zeros(0, np.float32), AudioError, "empty"),
        (np.full(1000, np.nan, np.float32), AudioError, "all NaN"),
        (np.array([0.1, np.nan] * 500, np.float32), AudioError, "NaN/inf samples"),
        (np.arange(1000, dtype=np.int16), AudioError, "floating point"),
    ],
)
@pytest.mark.parametrize("kind", ["step", "waveform"])
def test_enhance_rejects_bad_audio(step_model, waveform_model, kind, bad, error, match):
    model = step_model if kind == "step" else waveform_model
    with pytest.raises(error, match=match):
        enhance(model, bad)
    with pytest.raises(error, match=match):
        denoise(model, bad)


def test_a_step_model_in_a_tf_function_traced_for_any_length(step_model):
    run = tf.function(
        lambda audio: enhance(step_model, audio),
        input_signature=[tf.TensorSpec((None,), tf.float32)],
    )
    for length in (300, 3000):
        assert max_abs_diff(run(AUDIO[:length]), enhance(step_model, AUDIO[:length])) < 1e-6
    assert run.experimental_get_tracing_count() == 1


def test_a_waveform_model_in_a_tf_function_traced_for_any_length(waveform_model):
    run = tf.function(
        lambda audio: enhance(waveform_model, audio),
        input_signature=[tf.TensorSpec((None,), tf.float32)],
    )
    for length in (300, 3000):
        assert max_abs_diff(run(AUDIO[:length]), enhance(waveform_model, AUDIO[:length])) < 1e-6
    assert run.experimental_get_tracing_count() == 1


def test_chunk_size_on_a_waveform_model_is_refused(waveform_model):
    with pytest.raises(ValueError, match="chunk_size is for step models"):
        enhance(waveform_model, AUDIO, chunk_size=4)


def test_a_step_model_for_other_frames_is_refused():
    with pytest.raises(ValueError, match="257 features per frame; the step model expects 100"):
        enhance(make_gru_step_model(units=2, bins=100), AUDIO)


def test_enhance_refuses_something_that_is_not_a_model():
    with pytest.raises(TypeError, match="expected a Keras model"):
        enhance(keras.layers.Dense(1), AUDIO)


# ---------------------------------------------------------------------------- notebooks 01/02


@pytest.fixture(scope="module")
def question_inputs():
    """Six frames of a noisy clip: ``(noisy_spectrum (1, 6, 257), clean (1, 1280))``."""
    rng = np.random.default_rng(4)
    clean = (0.1 * rng.standard_normal((1, 5 * HOP_LENGTH))).astype(np.float32)
    noisy = clean + (0.05 * rng.standard_normal(clean.shape)).astype(np.float32)
    return stft(noisy), tf.constant(clean)


def _question_loop(model, noisy_spectrum, clean, *, state_in_variable=False):
    """The question's loop: masks collected in a dict by frame index, the state rebound as a
    tensor or written into a ``tf.Variable``, the audio made in TensorFlow (``apply_masks``)."""
    magnitudes = tf.abs(noisy_spectrum)
    variable = tf.Variable(zero_state(model), trainable=False)
    with tf.GradientTape() as tape:
        state, masks = zero_state(model), {}
        for t in range(magnitudes.shape[1]):
            mask, next_state = model([magnitudes[:, t], variable if state_in_variable else state])
            masks[t] = mask
            if state_in_variable:
                variable.assign(next_state)
            else:
                state = next_state
        enhanced = apply_masks(
            tf.stack([masks[t] for t in masks], 1), noisy_spectrum, clean.shape[-1]
        )
        loss = denoising_loss(clean, enhanced)
    return loss, enhanced, tape.gradient(loss, model.trainable_weights)


def test_variable_assign_truncates_silently(step_model, question_inputs):
    """Notebook 01: with the state written into a tf.Variable, every gradient still exists,
    so nothing warns, but the GRU's gradients miss every path through the state."""
    noisy_spectrum, clean = question_inputs
    full_loss, _, full = _question_loop(step_model, noisy_spectrum, clean)
    assigned_loss, _, assigned = _question_loop(
        step_model, noisy_spectrum, clean, state_in_variable=True
    )
    assert float(assigned_loss) == float(full_loss)  # the forward pass is the same
    assert all(g is not None for g in assigned)
    for weight, f, a in zip(step_model.trainable_weights, full, assigned):
        if weight.path.startswith("mask/"):
            assert max_abs_diff(f, a) == 0, weight.path
        else:
            assert float(tf.norm(f - a) / tf.norm(f)) > 1e-3, weight.path


def test_frame_denoiser_is_tiny_and_repeatable():
    model = make_dense_frame_denoiser()
    assert [tuple(v.shape) for v in model.trainable_variables] == [
        (512, 16),
        (16,),
        (16, 512),
        (512,),
    ]
    again = make_dense_frame_denoiser()
    assert all(
        np.array_equal(a.numpy(), b.numpy())
        for a, b in zip(model.trainable_variables, again.trainable_variables)
    )
    assert tuple(model(np.zeros((2, 512), np.float32)).shape) == (2, 512)
    with pytest.raises(ValueError, match=">= 1"):
        make_dense_frame_denoiser(units=0)
