import librosa
import numpy as np
import pytest
import tensorflow as tf

import helpers  # noqa: F401
from helpers.audio import (
    FRAME_LENGTH,
    HOP_LENGTH,
    AudioError,
    check_sample_rate,
    frame,
    load_audio,
    num_frames,
    overlap_add,
    save_audio,
    snr_db,
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
    assert len(librosa.frames_to_samples(np.arange(frames.shape[0]), hop_length=HOP_LENGTH)) \
        == frames.shape[0]
    np.testing.assert_array_equal(frames, reference)
    # frame t is centred on sample t * hop: its middle sample is x[t * hop]
    t = min(3, frames.shape[0] - 1)
    assert frames[t, FRAME_LENGTH // 2] == x[t * HOP_LENGTH]


def test_stft_matches_librosa_center_true():
    ours = stft_magnitude(NOISE).numpy()
    theirs = np.abs(librosa.stft(NOISE, n_fft=FRAME_LENGTH, hop_length=HOP_LENGTH, center=True,
                                 pad_mode="constant")).T
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, atol=1e-4)


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


@pytest.mark.parametrize("bad, message", [
    (np.zeros((2, 2, 10), np.float32), "shape"),
    (np.zeros(0, np.float32), "empty"),
    (np.full(100, np.nan, np.float32), "all NaN"),
    (np.array([0.1, np.nan] * 50, np.float32), "NaN/inf samples"),
    (np.arange(100, dtype=np.int16), "floating point"),
])
def test_frame_rejects_bad_audio(bad, message):
    with pytest.raises(AudioError, match=message):
        frame(bad)


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


def test_synthesizer_and_labels_are_reachable_from_helpers_audio():
    import helpers.audio as audio
    from helpers.labels import labels_from_segments
    from helpers.synth import synthesize

    assert audio.synthesize is synthesize and audio.labels_from_segments is labels_from_segments
    with pytest.raises(AttributeError):
        audio.no_such_helper  # noqa: B018


def test_spectrogram_plot_rejects_bad_audio_and_labels():
    from helpers.dataset import load_clip
    from helpers.labels import LabelError
    from helpers.plots import plot_spectrogram

    clip = load_clip("vowel_a")
    fig = plot_spectrogram(clip.audio, labels=clip.labels)
    assert len(fig.axes) == 3  # spectrogram, label strip, colour bar
    with pytest.raises(AudioError, match="all NaN"):
        plot_spectrogram(np.full(1000, np.nan, np.float32))
    with pytest.raises(LabelError, match="expected the labels of this clip"):
        plot_spectrogram(clip.audio[:8000], labels=clip.labels)


def test_framing_and_stft_run_inside_tf_function():
    @tf.function
    def magnitude(x):
        return stft_magnitude(x)

    np.testing.assert_allclose(magnitude(tf.constant(NOISE)).numpy(),
                               stft_magnitude(NOISE).numpy(), atol=1e-6)
    with pytest.raises(AudioError, match="shape"):  # shape checks still apply while tracing
        magnitude(tf.zeros((2, 2, 10)))
