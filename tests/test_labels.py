"""helpers.audio.labels: labels by construction and from a phone alignment, FrameLabels' own checks,
slicing, and stored labels."""

import numpy as np
import pytest

from helpers.audio import (
    DATA_DIR,
    HOP_LENGTH,
    REAL_CLIP,
    SAMPLE_RATE,
    load_clip,
)
from helpers.audio.labels import (
    FrameLabels,
    LabelError,
    Voicing,
    labels_from_alignment,
    labels_from_segments,
    read_frame_labels,
    read_phone_alignment,
    write_frame_labels,
)
from helpers.audio.synth import fricative, silence, vowel


def test_labels_by_construction_follow_frame_centres():
    segments = [silence(0.1), vowel("i", 140, 0.2), fricative("s", 0.1)]
    labels = labels_from_segments(segments)
    centres = np.arange(labels.num_frames) * HOP_LENGTH / SAMPLE_RATE
    expected = np.where(
        centres < 0.1, Voicing.SILENT, np.where(centres < 0.3, Voicing.VOICED, Voicing.UNVOICED)
    )
    np.testing.assert_array_equal(labels.voicing, expected)
    assert set(labels.f0[labels.voiced]) == {140.0} and not labels.f0[~labels.voiced].any()
    assert set(labels.f1[labels.voiced]) == {270.0}


def test_real_clip_labels_follow_its_phone_alignment():
    clip = load_clip(REAL_CLIP)
    alignment = read_phone_alignment(DATA_DIR / "cmu_arctic" / f"{REAL_CLIP}_phone.lab")
    assert alignment[0] == (0.0, 0.13, "sil") and alignment[-1][2] == "sil"
    times = clip.labels.frame_times()
    assert clip.labels.silent[times < 0.13].all()
    assert clip.labels.silent[times >= alignment[-1][0]].all()
    counts = clip.labels.counts()
    assert counts["voiced"] > 50 and counts["unvoiced"] > 20
    voiced_f0 = clip.labels.f0[clip.labels.voiced]
    assert 70 < np.median(voiced_f0) < 200  # an adult male voice


def test_frame_labels_validate_themselves():
    with pytest.raises(LabelError, match="one length"):
        FrameLabels(np.zeros(3), np.zeros(2), np.zeros(3), np.zeros(3))
    with pytest.raises(LabelError, match="f0 > 0"):
        FrameLabels(np.array([1, 1]), np.array([100.0, 0.0]), np.zeros(2), np.zeros(2))
    with pytest.raises(LabelError, match="0 \\(silent\\)"):
        FrameLabels(np.array([3]), np.zeros(1), np.zeros(1), np.zeros(1))


def test_labels_that_do_not_fit_the_audio_are_refused():
    labels = load_clip("vowel_a").labels
    with pytest.raises(LabelError, match="63 frames but audio of 8000 samples has 32"):
        labels.check_fits(8000)
    with pytest.raises(LabelError, match="22050 Hz"):
        labels.check_fits(16000, sample_rate=22050)


def test_alignment_of_another_clip_is_refused():
    alignment = read_phone_alignment(DATA_DIR / "cmu_arctic" / f"{REAL_CLIP}_phone.lab")
    n = 16000
    frames = 1 + n // HOP_LENGTH
    with pytest.raises(LabelError, match="expected the alignment of this clip"):
        labels_from_alignment(alignment, n, np.zeros(frames), np.zeros(frames), np.zeros(frames))
    with pytest.raises(LabelError, match="f0 track has shape"):
        labels_from_alignment(alignment, n, np.zeros(3), np.zeros(frames), np.zeros(frames))


def test_bad_alignment_file(tmp_path):
    bad = tmp_path / "bad.lab"
    bad.write_text("0 100 nonsense\n")
    with pytest.raises(LabelError, match="bad.lab:1"):
        read_phone_alignment(bad)


def test_labels_slice_keeps_frames_and_refuses_bad_ranges():
    labels = load_clip("utterance_1").labels
    part = labels.slice(10, 20)
    assert part.num_frames == 10 and part.sample_rate == labels.sample_rate
    np.testing.assert_array_equal(part.voicing, labels.voicing[10:20])
    np.testing.assert_array_equal(part.f0, labels.f0[10:20])
    with pytest.raises(LabelError, match="not inside"):
        labels.slice(20, 10)
    with pytest.raises(LabelError, match="not inside"):
        labels.slice(0, labels.num_frames + 1)


def test_stored_labels_read_back_equal(tmp_path):
    clip = load_clip("utterance_1_snr15")
    noisy = FrameLabels(
        clip.labels.voicing,
        clip.labels.f0 * np.float32(1.0001),
        clip.labels.f1 + np.float32(0.1),
        clip.labels.f2,
    )
    back = read_frame_labels(write_frame_labels(noisy, tmp_path / "l.csv"), source="stored")
    for name in ("voicing", "f0", "f1", "f2"):
        assert np.array_equal(getattr(back, name), getattr(noisy, name)), name
        assert getattr(back, name).dtype == getattr(noisy, name).dtype, name
    assert back.source == "stored" and back.num_frames == clip.labels.num_frames


@pytest.mark.parametrize(
    "text, match",
    [
        ("", "expected a header line"),
        ("frame,voicing,f0\n0,0,0\n", "expected a header line"),
        ("frame,voicing,f0_hz,f1_hz,f2_hz\n0,0,0,0,x\n", "expected numbers"),
        ("frame,voicing,f0_hz,f1_hz,f2_hz\n", "one row of 5 numbers"),
        ("frame,voicing,f0_hz,f1_hz,f2_hz\n0,0,0,0,0\n2,0,0,0,0\n", "in order"),
        ("frame,voicing,f0_hz,f1_hz,f2_hz\n0,0,0,0\n", "one row of 5 numbers"),
        ("frame,voicing,f0_hz,f1_hz,f2_hz\n0,1,0,0,0\n", "every voiced frame needs f0 > 0"),
    ],
)
def test_stored_labels_that_do_not_read_are_refused(tmp_path, text, match):
    (tmp_path / "l.csv").write_text(text)
    with pytest.raises(LabelError, match=match):
        read_frame_labels(tmp_path / "l.csv")
