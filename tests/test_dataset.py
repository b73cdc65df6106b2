"""data/ and helpers.audio.clips: the manifest, every clip and the real clip, and the pieces of
clips the notebooks train on (crop, excerpt, make_example, batch_of, noisy_crops)."""

import json
from pathlib import Path

import librosa
import numpy as np
import pytest
import tensorflow as tf

from helpers.audio import (
    FRAME_LENGTH,
    HOP_LENGTH,
    SAMPLE_RATE,
    LabelError,
    istft,
    labels_from_audio,
    snr_db,
    stft,
    stft_magnitude,
)
from helpers.audio.clips import (
    DATA_DIR,
    NOISE_RMS,
    REAL_CLIP,
    Clip,
    batch_of,
    clip_names,
    crop,
    excerpt,
    load_clip,
    make_example,
    manifest,
    noisy_crops,
    read_manifest,
    sha256,
)
from helpers.capstone import capstone_manifest
from helpers.diagnosis import max_abs_diff

ROOT = Path(__file__).resolve().parents[1]


def test_make_data_reproduces_every_file_bit_for_bit(tmp_path):
    # In this process (not a subprocess) so TensorFlow and pyin's JIT are paid for once.
    from scripts import make_data

    rebuilt = make_data.build(tmp_path, DATA_DIR / "cmu_arctic")
    committed = json.loads((DATA_DIR / "manifest.json").read_text())
    assert make_data.manifest_text(rebuilt) == make_data.manifest_text(committed)


def test_manifest_lists_every_file_with_matching_hash():
    clips = manifest()
    capstone = capstone_manifest()
    capstone_files = {
        e["file"]: e["sha256"] for key in ("train", "held_back", "mixtures") for e in capstone[key]
    }
    real = {e["file"]: e["sha256"] for e in read_manifest()["real_speech"]}
    recorded = read_manifest()["recorded_noise"]
    real[recorded["file"]] = recorded["sha256"]  # shipped as recorded, trimmed (its README)
    wavs = {str(p.relative_to(DATA_DIR)) for p in DATA_DIR.rglob("*.wav")}
    assert wavs == {entry["file"] for entry in clips.values()} | set(capstone_files) | set(real)
    for file, digest in real.items():
        assert sha256(DATA_DIR / file) == digest, file
    for entry in read_manifest()["real_speech"]:  # their labels, measured once (make_data.py)
        assert sha256(DATA_DIR / entry["labels"]["file"]) == entry["labels"]["sha256"]
    for file, digest in capstone_files.items():
        assert sha256(DATA_DIR / file) == digest, file
    weights = {p.name for p in (DATA_DIR / "capstone").glob("*.weights.npz")}
    # the two compared models, the ablation's three variants, two more masked seeds (06)
    assert weights == set(capstone["weights"]["sha256"]) and len(weights) == 7
    for name, digest in capstone["weights"]["sha256"].items():
        assert sha256(DATA_DIR / "capstone" / name) == digest, name
    for entry in clips.values():
        assert sha256(DATA_DIR / entry["file"]) == entry["sha256"], entry["name"]
        assert entry["sample_rate"] == 16000 and entry["duration_s"] > 0 and entry["labels"]
    for name, digest in clips[REAL_CLIP]["extra_files"].items():
        assert sha256(DATA_DIR / "cmu_arctic" / name) == digest, name


def test_data_set_contents_and_size():
    kinds = {
        entry["name"]: {s["kind"] for s in entry.get("segments", [])}
        for entry in manifest().values()
    }
    vowels = [n for n, k in kinds.items() if k == {"voiced"}]
    assert len(vowels) >= 3
    assert any(k == {"unvoiced"} for k in kinds.values())
    assert any(k == {"silent"} for k in kinds.values())
    assert any(k == {"voiced", "unvoiced", "silent"} for k in kinds.values())
    snrs = {e["snr_db"] for e in manifest().values() if "snr_db" in e}
    assert len(snrs) >= 2
    total = sum(p.stat().st_size for p in DATA_DIR.rglob("*") if p.is_file())
    # 5 MiB: the synthetic clips, six real recordings (about 0.6 MB), 20 s of recorded noise
    # (0.64 MB) and seven small weight files (about 0.14 MB each: the two compared models,
    # the ablation's three variants and two more training seeds of the masked loss)
    assert total < 5 * 2**20
    copying = (DATA_DIR / "cmu_arctic" / "COPYING").read_text()
    assert "Carnegie Mellon University" in copying
    licence = (DATA_DIR / "recorded_noise" / "README.md").read_text()
    assert "CC BY 4.0" in licence and "Speech Commands" in licence and "trimmed" in licence.lower()


@pytest.mark.parametrize("name", clip_names())
def test_every_clip_loads_with_fitting_labels(name):
    clip = load_clip(name)
    assert clip.sample_rate == SAMPLE_RATE and clip.audio.dtype == np.float32
    assert clip.labels.num_frames == 1 + len(clip.audio) // HOP_LENGTH
    assert clip.clean.shape == clip.audio.shape


@pytest.mark.parametrize("name", [n for n in clip_names() if "_snr" in n])
def test_noisy_clips_have_their_nominal_snr(name):
    clip = load_clip(name)
    assert snr_db(clip.clean, clip.audio) == pytest.approx(clip.snr_db, abs=0.05)


def test_silence_clip_is_exact_zeros():
    clip = load_clip("silence")
    assert not clip.audio.any() and clip.labels.silent.all()


def test_absolute_silence_threshold_where_effects_split_fails():
    zeros = np.zeros(8000, dtype=np.float32)
    # librosa's default ref=np.max calls an all-zero file one long non-silent interval ...
    assert len(librosa.effects.split(zeros)) == 1
    # ... our absolute threshold calls it silent.
    assert labels_from_audio(zeros).silent.all()


def test_load_clip_unknown_name():
    with pytest.raises(KeyError, match="clip name must be one of .vowel_a."):
        load_clip("vowel_x")


def test_manifest_is_valid_json_with_generator():
    data = json.loads((DATA_DIR / "manifest.json").read_text())
    assert data["generator"] == "scripts/make_data.py"


def test_crop_keeps_audio_clean_and_labels_together():
    clip = load_clip("utterance_1_snr5")
    part = crop(clip, 0.75)
    assert len(part.audio) == len(part.clean) == 12000 and part.labels.num_frames == 47
    assert part.name == clip.name and part.snr_db == clip.snr_db
    np.testing.assert_array_equal(part.audio, clip.audio[:12000])
    np.testing.assert_array_equal(part.clean, clip.clean[:12000])
    np.testing.assert_array_equal(part.labels.voicing, clip.labels.voicing[:47])
    part.labels.check_fits(len(part.audio))
    assert crop(clip, clip.duration).audio.shape == clip.audio.shape


@pytest.mark.parametrize("seconds", [0.0, -1.0, 10.0])
def test_crop_refuses_a_length_outside_the_clip(seconds):
    with pytest.raises(ValueError, match="seconds must be in"):
        crop(load_clip("utterance_1"), seconds)


def test_excerpt_frames_sit_on_the_clips_frames():
    clip = load_clip("utterance_1")
    audio, labels = excerpt(clip.clean, clip.labels, 10, 30)
    assert len(audio) == 19 * HOP_LENGTH
    assert labels.num_frames == 20 and np.array_equal(labels.voicing, clip.labels.voicing[10:30])
    np.testing.assert_array_equal(labels.f0, clip.labels.f0[10:30])
    full = stft_magnitude(clip.clean).numpy()[10:30]
    part = stft_magnitude(audio).numpy()
    assert part.shape == full.shape
    # interior frames (whose window lies inside the excerpt) are identical
    np.testing.assert_allclose(part[2:-2], full[2:-2], atol=1e-5)


@pytest.mark.parametrize(
    "start, stop, match",
    [
        (10, 100, "not inside"),
        (-1, 5, "not inside"),
        (5, 5, "not inside"),
        (5, 6, "at least two frames"),
    ],
)
def test_excerpt_refuses_frames_outside_the_clip(start, stop, match):
    clip = load_clip("silence")
    with pytest.raises(LabelError, match=match):
        excerpt(clip.clean, clip.labels, start, stop)


def test_make_example_adds_seeded_noise_at_noise_rms():
    clip = load_clip("utterance_1")
    reference, labels = excerpt(clip.clean, clip.labels, 0, 40)
    example = make_example("first 40", reference, labels, seed=3)
    assert isinstance(example, Clip) and example.num_frames == 40
    assert example.audio.dtype == example.clean.dtype == np.float32
    noise = example.audio - example.clean
    assert np.sqrt(np.mean(noise**2)) == pytest.approx(NOISE_RMS, rel=0.05)
    again = make_example("first 40", reference, labels, seed=3)
    assert again.audio.tobytes() == example.audio.tobytes()
    assert make_example("x", reference, labels, seed=4).audio.tobytes() != example.audio.tobytes()
    quiet = make_example("x", reference, labels, noise_rms=0.0)
    np.testing.assert_array_equal(quiet.audio, quiet.clean)
    assert example.describe().startswith("first 40: 0.62 s, 40 frames (")


def test_make_example_refuses_labels_of_another_length():
    clip = load_clip("utterance_1")
    reference, labels = excerpt(clip.clean, clip.labels, 0, 40)
    with pytest.raises(LabelError, match="labels have 40 frames"):
        make_example("x", reference[:-HOP_LENGTH], labels)


def test_batch_of_gives_the_noisy_stft_and_the_clean_audio():
    clips = [crop(load_clip(n), 0.75) for n in ("utterance_1_snr5", "utterance_1_snr15")]
    noisy, clean = batch_of(clips)
    assert noisy.shape == (2, 47, FRAME_LENGTH // 2 + 1) and noisy.dtype == tf.complex64
    assert clean.shape == (2, 12000) and clean.dtype == tf.float32
    for i, clip in enumerate(clips):
        np.testing.assert_array_equal(noisy[i].numpy(), stft(clip.audio).numpy())
        np.testing.assert_array_equal(clean[i].numpy(), clip.clean)
        assert max_abs_diff(istft(noisy[i], 12000), clip.audio) < 1e-5


def test_batch_of_refuses_clips_of_different_lengths():
    clips = [crop(load_clip("utterance_1_snr5"), 0.75), load_clip("utterance_2_snr5")]
    with pytest.raises(ValueError, match="one length"):
        batch_of(clips)
    with pytest.raises(ValueError, match="one length"):
        batch_of([])


def test_noisy_crops_are_seeded_and_keep_the_noise_level():
    clips = [load_clip("utterance_1_snr5"), load_clip("utterance_1_snr15")]
    a = noisy_crops(clips, 12000, np.random.default_rng(0))
    b = noisy_crops(clips, 12000, np.random.default_rng(0))
    c = noisy_crops(clips, 12000, np.random.default_rng(1))
    np.testing.assert_array_equal(a[0].numpy(), b[0].numpy())
    np.testing.assert_array_equal(a[1].numpy(), b[1].numpy())
    assert not np.array_equal(a[0].numpy(), c[0].numpy())
    assert a[0].shape == (2, 47, FRAME_LENGTH // 2 + 1) and a[0].dtype == tf.complex64
    assert a[1].shape == (2, 12000) and a[1].dtype == tf.float32
    noise_power = [np.mean((clip.audio - clip.clean) ** 2) for clip in clips]
    noisy_audio = istft(a[0], 12000).numpy()
    crop_noise_power = np.mean((noisy_audio - a[1].numpy()) ** 2, axis=1)
    np.testing.assert_allclose(crop_noise_power, noise_power, rtol=0.1)
    # each clean crop is a window of its clip's clean audio
    for clip, clean in zip(clips, a[1].numpy()):
        starts = [
            s
            for s in range(len(clip.clean) - 12000 + 1)
            if clip.clean[s] == clean[0] and np.array_equal(clip.clean[s : s + 12000], clean)
        ]
        assert starts, clip.name


@pytest.mark.parametrize("samples", [0, -5, 10**6])
def test_noisy_crops_refuse_a_window_outside_the_clips(samples):
    clips = [load_clip("utterance_1_snr5")]
    with pytest.raises(ValueError, match="samples must be in 1.."):
        noisy_crops(clips, samples, np.random.default_rng(0))
