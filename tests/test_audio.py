"""helpers.audio.signal: centred frames, the STFT pair (stft/istft), overlap-add, I/O and checks."""

import librosa
import numpy as np
import pytest
import tensorflow as tf

from helpers.audio.signal import (
    FRAME_LENGTH,
    HOP_LENGTH,
    AudioError,
    check_sample_rate,
    frame,
    hann_window,
    istft,
    load_audio,
    num_frames,
    overlap_add,
    save_audio,
    snr_db,
    stft,
    stft_magnitude,
)

RNG = np.random.default_rng(0)
NOISE = (0.1 * RNG.standard_normal(4000)).astype(np.float32)


@pytest.mark.parametrize("length", [4000, 4096, 4097, 300])
def test_frame_count_and_centres_match_librosa(length):
    x = NOISE[:length] if length <= 4000 else np.resize(NOISE, length)
    frames = frame(x).numpy()
    padded = np.pad(x, FRAME_LENGTH // 2)
    reference = librosa.util.frame(padded, frame_length=FRAME_LENGTH, hop_length=HOP_LENGTH).T
    assert frames.shape == reference.shape == (num_frames(length), FRAME_LENGTH)
    assert (
        len(librosa.frames_to_samples(np.arange(frames.shape[0]), hop_length=HOP_LENGTH))
        == frames.shape[0]
    )
    np.testing.assert_array_equal(frames, reference)
    # frame t is centred on sample t * hop: its middle sample is x[t * hop]
    t = min(3, frames.shape[0] - 1)
    assert frames[t, FRAME_LENGTH // 2] == x[t * HOP_LENGTH]


@pytest.mark.filterwarnings("ignore:n_fft=512 is too large:UserWarning")
@pytest.mark.parametrize("length", [1, 100, 300, 1000, 4000])
def test_stft_matches_librosa_center_true(length):
    x = NOISE[:length]
    ours = stft(x)
    theirs = librosa.stft(
        x, n_fft=FRAME_LENGTH, hop_length=HOP_LENGTH, center=True, pad_mode="constant"
    ).T  # librosa: (bins, frames)
    assert ours.dtype == tf.complex64
    assert ours.shape == theirs.shape == (num_frames(length), FRAME_LENGTH // 2 + 1)
    np.testing.assert_allclose(ours.numpy(), theirs, atol=1e-4)
    np.testing.assert_allclose(stft_magnitude(x).numpy(), np.abs(theirs), atol=1e-4)


def test_hann_window_is_periodic_like_librosa():
    np.testing.assert_allclose(
        hann_window().numpy(), librosa.filters.get_window("hann", FRAME_LENGTH), atol=1e-6
    )


# Lengths: hop multiples, one past, not multiples, shorter than a hop and than a frame.
RECONSTRUCTION_LENGTHS = [1, 2, 100, 256, 257, 300, 512, 700, 1000, 4000, 4097]


@pytest.mark.parametrize("length", RECONSTRUCTION_LENGTHS)
def test_istft_inverts_stft(length):
    x = NOISE[:length] if length <= len(NOISE) else np.resize(NOISE, length)
    rebuilt = istft(stft(x), length)
    assert rebuilt.shape == (length,) and rebuilt.dtype == tf.float32
    assert float(np.max(np.abs(rebuilt.numpy() - x))) < 1e-5


def test_istft_inverts_stft_for_a_batch():
    x = np.stack([NOISE[:1000], -0.5 * NOISE[1000:2000], NOISE[2000:3000] ** 2])
    spectrum = stft(x)
    assert spectrum.shape == (3, num_frames(1000), FRAME_LENGTH // 2 + 1)
    rebuilt = istft(spectrum, 1000).numpy()
    assert rebuilt.shape == (3, 1000)
    assert float(np.max(np.abs(rebuilt - x))) < 1e-5
    for row, clip in zip(rebuilt, x):  # each clip as if it were alone
        np.testing.assert_allclose(row, istft(stft(clip), 1000).numpy(), atol=1e-6)


@pytest.mark.parametrize("length", [255, 511, 767, 1023])
def test_istft_tail_just_before_a_hop_boundary(length):
    """Measured limit of ``istft(stft(x))`` in float32: when ``length % hop`` is within a few
    samples of ``hop``, the last samples are covered only by the tail of one Hann window
    (weight ~1e-4), and dividing by the summed squared window scales the forward STFT's float32
    roundoff up to ~1e-4. Every other sample is back within 1e-5."""
    x = np.resize(NOISE, length)
    error = np.abs(istft(stft(x), length).numpy() - x)
    assert float(error[:-8].max()) < 1e-5
    assert float(error.max()) < 3e-4


def test_stft_and_istft_are_differentiable_and_run_in_tf_function():
    x = tf.Variable(NOISE[:1000])
    with tf.GradientTape() as tape:
        y = istft(2.0 * stft(x), 1000)
        loss = tf.reduce_sum(y)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), 2.0, atol=1e-4)

    @tf.function
    def roundtrip(x):
        return istft(stft(x), 1000)

    np.testing.assert_allclose(
        roundtrip(tf.constant(NOISE[:1000])).numpy(),
        istft(stft(NOISE[:1000]), 1000).numpy(),
        atol=1e-6,
    )


@pytest.mark.parametrize("length", [100, 300, 4000])
def test_a_mask_of_ones_gives_the_input_back(length):
    """``helpers.models.apply_masks``: the denoiser's synthesis path is this istft."""
    from helpers.models import apply_masks

    x = np.stack([NOISE[:length], NOISE[::-1][:length]])
    spectrum = stft(x)
    rebuilt = apply_masks(tf.ones(spectrum.shape), spectrum, length)
    assert rebuilt.shape == (2, length)
    assert float(np.max(np.abs(rebuilt.numpy() - x))) < 1e-5


def test_istft_rejects_a_real_spectrum():
    with pytest.raises(AudioError, match="spectrum must be complex"):
        istft(stft_magnitude(NOISE), len(NOISE))
    with pytest.raises(AudioError, match="spectrum must be complex"):
        istft(np.ones((4, FRAME_LENGTH // 2 + 1), np.float32), 512)


@pytest.mark.parametrize("length", [1025, 10**6])
def test_istft_rejects_a_length_the_frames_do_not_cover(length):
    spectrum = stft(NOISE[:1000])  # 4 frames cover (4 - 1) * 256 + 256 = 1024 samples
    assert istft(spectrum, 1024).shape == (1024,)  # the most they cover is fine
    with pytest.raises(AudioError, match="frames cover 1024; expected the clip length"):
        istft(spectrum, length)


def test_istft_rejects_bad_shapes_and_lengths():
    spectrum = stft(NOISE[:1000])
    with pytest.raises(AudioError, match=r"\(frames, bins\)"):
        istft(spectrum[0], 1000)
    with pytest.raises(AudioError, match=r"\(frames, bins\)"):
        istft(spectrum[None, None], 1000)
    with pytest.raises(AudioError, match="asked for 0 samples"):
        istft(spectrum, 0)


@pytest.mark.parametrize("hop", [HOP_LENGTH, 128])
def test_overlap_add_inverts_frame(hop):
    rebuilt = overlap_add(frame(NOISE, FRAME_LENGTH, hop), hop, length=len(NOISE)).numpy()
    np.testing.assert_allclose(rebuilt, NOISE, atol=1e-6)


def test_batched_frames_and_gradients_flow():
    x = tf.Variable(np.stack([NOISE, -NOISE]))
    with tf.GradientTape() as tape:
        y = overlap_add(frame(x) * 2.0, length=len(NOISE))
        loss = tf.reduce_sum(y)
    assert y.shape == (2, len(NOISE))
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), 2.0, atol=1e-5)


def test_load_and_save_roundtrip(tmp_path):
    path = save_audio(tmp_path / "x.wav", NOISE)
    audio, rate = load_audio(path)
    assert rate == 16000 and audio.dtype == np.float32
    np.testing.assert_allclose(audio, NOISE, atol=1 / 32768 + 1e-7)


def test_snr():
    assert snr_db(NOISE, NOISE * 1.1) == pytest.approx(20.0, abs=1e-4)


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.zeros((2, 2, 10), np.float32), "shape"),
        (np.zeros(0, np.float32), "empty"),
        (np.full(100, np.nan, np.float32), "all NaN"),
        (np.array([0.1, np.nan] * 50, np.float32), "NaN/inf samples"),
        (np.arange(100, dtype=np.int16), "floating point"),
    ],
)
@pytest.mark.parametrize("function", [frame, stft, stft_magnitude])
def test_framing_rejects_bad_audio(function, bad, message):
    with pytest.raises(AudioError, match=message):
        function(bad)


def test_bad_frame_parameters():
    with pytest.raises(AudioError, match="even"):
        frame(NOISE, frame_length=511)
    with pytest.raises(AudioError, match="hop_length"):
        frame(NOISE, hop_length=0)
    with pytest.raises(AudioError, match="gaps"):
        overlap_add(frame(NOISE), hop_length=400)
    with pytest.raises(AudioError, match="frames must have shape"):
        overlap_add(np.zeros(10, np.float32))
    with pytest.raises(AudioError, match="cover only"):
        overlap_add(frame(NOISE), length=10**6)


def test_wrong_sample_rate(tmp_path):
    with pytest.raises(AudioError, match="expected 16000 Hz"):
        check_sample_rate(44100)
    path = save_audio(tmp_path / "x.wav", NOISE, sample_rate=8000)
    with pytest.raises(AudioError, match="8000 Hz; expected 16000"):
        load_audio(path)


def test_stereo_file_is_rejected(tmp_path):
    import soundfile as sf

    sf.write(tmp_path / "s.wav", np.stack([NOISE, NOISE], axis=1), 16000)
    with pytest.raises(AudioError, match="mono"):
        load_audio(tmp_path / "s.wav")


def test_snr_bad_inputs():
    with pytest.raises(AudioError, match="same shape"):
        snr_db(NOISE, NOISE[:10])
    with pytest.raises(AudioError, match="silent"):
        snr_db(np.zeros(10), np.ones(10))


def test_framing_and_stft_run_inside_tf_function():
    @tf.function
    def magnitude(x):
        return stft_magnitude(x)

    np.testing.assert_allclose(
        magnitude(tf.constant(NOISE)).numpy(), stft_magnitude(NOISE).numpy(), atol=1e-6
    )
    with pytest.raises(AudioError, match="shape"):  # shape checks still apply while tracing
        magnitude(tf.zeros((2, 2, 10)))


def test_level_change_db_over_chosen_frames_and_pooled():
    from helpers.audio import frame_energies, level_change_db, num_frames

    rng = np.random.default_rng(0)
    clip = rng.normal(size=16000) * 0.1
    every = np.ones(num_frames(16000), bool)
    assert level_change_db(clip, 0.5 * clip, every) == pytest.approx(20 * np.log10(0.5))
    first = np.zeros_like(every)
    first[:10] = True
    quieter_start = clip.copy()
    quieter_start[: 9 * 256] *= 0.1  # frames 0-8 wholly, frame 9 half
    assert level_change_db(clip, quieter_start, first) < -10
    assert abs(level_change_db(clip, quieter_start, ~first)) < 0.1
    # pooled: energies add up before the ratio, not the dB values
    loud, quiet = clip, 0.01 * clip
    pooled = level_change_db([loud, quiet], [loud, np.zeros_like(quiet)], [every, every])
    total = frame_energies(loud).sum() + frame_energies(quiet).sum()
    assert pooled == pytest.approx(10 * np.log10(frame_energies(loud).sum() / total))


@pytest.mark.parametrize(
    "frames, match",
    [
        (np.zeros(63, bool), "with energy before"),
        (np.ones(10, bool), "boolean mask of the clip's 63 frames"),
        (np.ones(63, int), "boolean mask"),
    ],
)
def test_level_change_db_refuses_frames_that_do_not_fit(frames, match):
    from helpers.audio import level_change_db

    clip = np.random.default_rng(1).normal(size=16000)
    with pytest.raises(ValueError, match=match):
        level_change_db(clip, clip, frames)
