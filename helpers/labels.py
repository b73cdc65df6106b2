"""Per-frame labels: is each frame voiced, unvoiced or silent, and its f0, F1 and F2.

Frames are the centred frames of ``helpers.audio`` (frame ``t`` centred on sample
``t * hop_length``), so labels line up one-to-one with ``frame`` and ``stft_magnitude``.
Labels known in advance come from the synthesizer's segments (``labels_from_segments``) or
from a phone alignment (HTS ``.lab``) plus measured tracks (``labels_from_alignment``);
``helpers.label_measurement`` measures them from any recording, and ``write_frame_labels``
/ ``read_frame_labels`` store measured ones beside their audio. ``confusion`` and
``frames_from_boundary`` compare two labellings of one clip.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path

import numpy as np

from helpers.audio import FRAME_LENGTH, HOP_LENGTH, SAMPLE_RATE, num_frames
from helpers.synth import Segment, segment_bounds


class Voicing(IntEnum):
    SILENT = 0
    VOICED = 1
    UNVOICED = 2


class LabelError(ValueError):
    """Labels that do not fit the audio or contradict themselves."""

    __init__ = Exception.__init__  # keeps its type through tf.function (see AudioError)


# Phones of the CMU ARCTIC (US English) set whose sound is voiced.
VOICED_PHONES = frozenset(
    "aa ae ah ao aw ax ay eh er ey ih iy ow oy uh uw "  # vowels
    "l r w y m n ng "  # liquids, glides, nasals
    "b d g v dh z zh jh".split()  # voiced stops, fricatives and affricate
)
SILENT_PHONES = frozenset({"sil", "pau", "ssil"})
@dataclass(frozen=True)
class FrameLabels:
    """Labels for each centred frame. f0/F1/F2 are in Hz and 0 where they do not apply."""

    voicing: np.ndarray
    f0: np.ndarray
    f1: np.ndarray
    f2: np.ndarray
    sample_rate: int = SAMPLE_RATE
    frame_length: int = FRAME_LENGTH
    hop_length: int = HOP_LENGTH
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        arrays = {"voicing": self.voicing, "f0": self.f0, "f1": self.f1, "f2": self.f2}
        lengths = {k: np.shape(v) for k, v in arrays.items()}
        if any(len(s) != 1 for s in lengths.values()) or len(set(lengths.values())) != 1:
            raise LabelError(f"voicing, f0, f1 and f2 must be 1-D arrays of one length; got "
                             f"shapes {lengths}.")
        voicing = np.asarray(self.voicing)
        if not np.isin(voicing, [v.value for v in Voicing]).all():
            raise LabelError("voicing values must be 0 (silent), 1 (voiced) or 2 (unvoiced).")
        voiced = voicing == Voicing.VOICED
        f0 = np.asarray(self.f0)
        if not np.all(np.isfinite(f0)) or np.any(f0[voiced] <= 0):
            bad = np.flatnonzero(voiced & ~(f0 > 0))
            raise LabelError(f"every voiced frame needs f0 > 0; frames {bad[:5].tolist()} have "
                             f"f0 = {f0[bad[:5]].tolist()}.")
        for name in ("voicing", "f0", "f1", "f2"):
            dtype = np.int32 if name == "voicing" else np.float32
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=dtype))

    @property
    def num_frames(self) -> int:
        return int(self.voicing.shape[0])

    @property
    def voiced(self) -> np.ndarray:
        return self.voicing == Voicing.VOICED

    @property
    def unvoiced(self) -> np.ndarray:
        return self.voicing == Voicing.UNVOICED

    @property
    def silent(self) -> np.ndarray:
        return self.voicing == Voicing.SILENT

    def counts(self) -> dict[str, int]:
        return {v.name.lower(): int(np.sum(self.voicing == v)) for v in Voicing}

    def check_fits(self, num_samples: int, sample_rate: int | None = None) -> None:
        """Raise ``LabelError`` unless these labels have one frame per centred frame of a clip
        with ``num_samples`` samples at this sample rate."""
        if sample_rate is not None and int(sample_rate) != self.sample_rate:
            raise LabelError(f"labels were made at {self.sample_rate} Hz but the audio is at "
                             f"{sample_rate} Hz.")
        expected = num_frames(num_samples, self.hop_length)
        if expected != self.num_frames:
            raise LabelError(
                f"labels have {self.num_frames} frames but audio of {num_samples} samples has "
                f"{expected} frames (1 + samples // hop_length {self.hop_length}); expected the "
                "labels of this clip.")

    def slice(self, start: int, stop: int) -> FrameLabels:
        """The labels of frames ``start .. stop - 1`` (for an excerpt of the clip)."""
        if not 0 <= start < stop <= self.num_frames:
            raise LabelError(f"frames {start}..{stop} are not inside these labels' "
                             f"{self.num_frames} frames.")
        return dataclasses.replace(self, **{name: getattr(self, name)[start:stop]
                                            for name in ("voicing", "f0", "f1", "f2")})

    def frame_times(self) -> np.ndarray:
        """Centre time of each frame, in seconds."""
        return np.arange(self.num_frames) * self.hop_length / self.sample_rate


def labels_from_segments(segments: list[Segment], sample_rate: int = SAMPLE_RATE,
                         hop_length: int = HOP_LENGTH, frame_length: int = FRAME_LENGTH
                         ) -> FrameLabels:
    """Labels known by construction: each frame takes the segment its centre falls in."""
    bounds = segment_bounds(segments, sample_rate)
    total = bounds[-1][1]
    centres = np.arange(num_frames(total, hop_length)) * hop_length
    index = np.searchsorted([end for _, end in bounds], centres, side="right")
    index = np.minimum(index, len(segments) - 1)
    kinds = {"silent": Voicing.SILENT, "voiced": Voicing.VOICED, "unvoiced": Voicing.UNVOICED}
    voicing = np.array([kinds[segments[i].kind] for i in index])
    f0 = np.array([segments[i].f0 for i in index])
    f1 = np.array([segments[i].f1 for i in index])
    f2 = np.array([segments[i].f2 for i in index])
    return FrameLabels(voicing, f0, f1, f2, sample_rate, frame_length, hop_length,
                       source="synthesizer")


def read_phone_alignment(path: str | Path) -> list[tuple[float, float, str]]:
    """``(start_s, end_s, phone)`` for each line of an HTS full-context ``.lab`` file."""
    rows = []
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            start, end, context = int(parts[0]), int(parts[1]), parts[2]
            phone = context.split("-", 1)[1].split("+", 1)[0]
        except (IndexError, ValueError) as error:
            raise LabelError(f"{path}:{number}: expected 'start end context' with the phone "
                             f"between '-' and '+'; got {line[:60]!r}.") from error
        rows.append((start * 1e-7, end * 1e-7, phone))
    if not rows:
        raise LabelError(f"{path} has no alignment lines.")
    return rows


LABEL_COLUMNS = ("frame", "voicing", "f0_hz", "f1_hz", "f2_hz")


def write_frame_labels(labels: FrameLabels, path: str | Path) -> Path:
    """Store labels as CSV, one row per frame (``LABEL_COLUMNS``; voicing 0 silent, 1 voiced,
    2 unvoiced). Each value is written as the shortest text that reads back to the same
    float32, so ``read_frame_labels`` returns equal labels."""
    rows = [",".join(LABEL_COLUMNS)]
    for t in range(labels.num_frames):
        rows.append(",".join([str(t), str(int(labels.voicing[t])),
                              *(str(getattr(labels, name)[t]) for name in ("f0", "f1", "f2"))]))
    path = Path(path)
    path.write_text("\n".join(rows) + "\n")
    return path


def read_frame_labels(path: str | Path, source: str = "") -> FrameLabels:
    """Labels stored by ``write_frame_labels`` (at the course's sample rate and hop)."""
    lines = Path(path).read_text().splitlines()
    if not lines or tuple(lines[0].split(",")) != LABEL_COLUMNS:
        raise LabelError(f"{path}: expected a header line {','.join(LABEL_COLUMNS)}.")
    try:
        table = np.array([[float(x) for x in line.split(",")] for line in lines[1:]])
    except ValueError as error:
        raise LabelError(f"{path}: expected numbers in every row ({error}).") from error
    if table.ndim != 2 or table.shape[1] != len(LABEL_COLUMNS) or len(table) == 0 \
            or not np.array_equal(table[:, 0], np.arange(len(table))):
        raise LabelError(f"{path}: expected one row of {len(LABEL_COLUMNS)} numbers for each "
                         "frame 0, 1, 2, ... in order.")
    return FrameLabels(table[:, 1].astype(np.int32), table[:, 2], table[:, 3], table[:, 4],
                       source=source)


def labels_from_alignment(alignment: list[tuple[float, float, str]], num_samples: int,
                          f0: np.ndarray, f1: np.ndarray, f2: np.ndarray,
                          sample_rate: int = SAMPLE_RATE, hop_length: int = HOP_LENGTH,
                          frame_length: int = FRAME_LENGTH) -> FrameLabels:
    """Voicing from the phones, f0/F1/F2 from measured tracks (one value per frame).

    A frame inside a voiced phone where the pitch tracker finds no f0 (a stop closure, creak)
    is labelled unvoiced: the harmonic error needs an f0 to mean anything.
    """
    n_frames = num_frames(num_samples, hop_length)
    for name, track in {"f0": f0, "f1": f1, "f2": f2}.items():
        if np.shape(track) != (n_frames,):
            raise LabelError(f"{name} track has shape {np.shape(track)}; expected ({n_frames},) "
                             f"for {num_samples} samples at hop {hop_length}.")
    duration = num_samples / sample_rate
    if alignment[-1][1] < duration - 0.05 or alignment[-1][1] > duration + 0.05:
        raise LabelError(f"the alignment ends at {alignment[-1][1]:.3f} s but the audio lasts "
                         f"{duration:.3f} s; expected the alignment of this clip.")
    centres = np.arange(n_frames) * hop_length / sample_rate
    ends = np.array([end for _, end, _ in alignment])
    phones = [alignment[i][2] for i in np.minimum(np.searchsorted(ends, centres, side="right"),
                                                  len(alignment) - 1)]
    f0 = np.nan_to_num(np.asarray(f0, dtype=np.float64))
    voicing = np.array([
        Voicing.SILENT if p in SILENT_PHONES
        else Voicing.VOICED if p in VOICED_PHONES and f > 0
        else Voicing.UNVOICED
        for p, f in zip(phones, f0)
    ])
    speech = voicing != Voicing.SILENT
    voiced = voicing == Voicing.VOICED
    return FrameLabels(voicing, np.where(voiced, f0, 0.0), np.where(speech, f1, 0.0),
                       np.where(speech, f2, 0.0), sample_rate, frame_length, hop_length,
                       source="phone alignment + pyin f0 + LPC formants")


def confusion(known: FrameLabels, measured: FrameLabels) -> np.ndarray:
    """3x3 frame counts, rows the known class, columns the measured one, in ``Voicing``
    order (silent, voiced, unvoiced)."""
    if known.num_frames != measured.num_frames:
        raise LabelError(f"known labels have {known.num_frames} frames, measured "
                         f"{measured.num_frames}; expected labels of one clip.")
    table = np.zeros((3, 3), dtype=int)
    np.add.at(table, (known.voicing, measured.voicing), 1)
    return table


def frames_from_boundary(labels: FrameLabels) -> np.ndarray:
    """For each frame, how many frames it is from the nearest change of class in ``labels``
    (0: the first frame of a new class or the last of an old one). A centred frame spans
    two hops, so a frame within 1 of a boundary holds audio of both classes."""
    voicing = np.asarray(labels.voicing)
    changes = np.flatnonzero(voicing[1:] != voicing[:-1])  # boundary between t and t + 1
    if len(changes) == 0:
        return np.full(len(voicing), len(voicing), dtype=int)
    t = np.arange(len(voicing))[:, None]
    # distance to the nearer frame of each boundary pair (changes, changes + 1)
    return np.minimum(np.abs(t - changes[None, :]), np.abs(t - changes[None, :] - 1)).min(1)
