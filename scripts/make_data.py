"""Regenerate data/: the synthetic clips, the real clip's measured tracks, and the manifest.

    python -m scripts.make_data          # rewrite data/ (bit for bit the same as committed)
    python -m scripts.make_data --check  # rebuild in a temporary folder, compare SHA-256s

The real recordings (data/cmu_arctic/: six CMU ARCTIC utterances, unmodified, with COPYING and
arctic_a0009's phone alignment) and the recorded noise (data/recorded_noise/: Speech Commands'
running tap, CC BY 4.0, trimmed) are shipped, not generated; this script records their SHA-256
and measures arctic_a0009's f0/F1/F2 tracks once (pyin, LPC), and the labels of the six
(``labels_from_audio``, into ``<name>_labels.csv``), so notebooks never wait for pyin.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from helpers.audio import (
    DATA_DIR,
    NOISE_FAMILIES,
    REAL_CLIP,
    SAMPLE_RATE,
    SYNTHETIC_CLIPS,
    ClipSpec,
    formant_track,
    labels_from_audio,
    load_audio,
    make_noise,
    mix,
    pitch_track,
    random_utterance,
    save_audio,
    sha256,
    synthesize,
    write_frame_labels,
)
from helpers.capstone import (
    CAPSTONE_DIR,
    CAPSTONE_HELD_BACK_SECONDS,
    CAPSTONE_HELD_BACK_SEEDS,
    CAPSTONE_SNR_DB,
    CAPSTONE_TRAIN_SECONDS,
    CAPSTONE_TRAIN_SEEDS,
    REAL_HELD_BACK,
    REAL_SPEAKERS,
    REAL_VALIDATION,
    RECORDED_NOISE,
    RECORDED_NOISE_DIR,
    capstone_utterance,
    held_back_noise_seed,
    real_labels_path,
)

SYNTHETIC_DIR = "synthetic"
REAL_DIR = "cmu_arctic"


def render(spec: ClipSpec, rendered: dict[str, object]):
    if spec.clean is None:
        return synthesize(list(spec.segments), seed=spec.seed)
    clean = rendered[spec.clean]
    white = np.random.default_rng(spec.seed).standard_normal(clean.shape)
    return mix(clean, white, spec.snr_db)


def write_tracks(wav: Path, out: Path) -> None:
    audio, sample_rate = load_audio(wav)
    f0, _ = pitch_track(audio, sample_rate)
    f1, f2 = formant_track(audio, sample_rate)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["frame", "time_s", "f0_hz", "f1_hz", "f2_hz"])
    for t, (a, b, c) in enumerate(zip(f0, f1, f2)):
        writer.writerow([t, f"{t * 256 / sample_rate:.3f}", f"{a:.1f}", f"{b:.1f}", f"{c:.1f}"])
    out.write_text(buffer.getvalue())


def build(root: Path, real_source: Path) -> dict:
    """Write every clip under ``root`` and return the manifest."""
    (root / SYNTHETIC_DIR).mkdir(parents=True, exist_ok=True)
    rendered: dict[str, object] = {}
    clips = []
    for spec in SYNTHETIC_CLIPS:
        audio = render(spec, rendered)
        rendered[spec.name] = audio
        path = save_audio(root / SYNTHETIC_DIR / f"{spec.name}.wav", audio, SAMPLE_RATE)
        entry = {
            "name": spec.name,
            "file": f"{SYNTHETIC_DIR}/{spec.name}.wav",
            "sample_rate": SAMPLE_RATE,
            "num_samples": len(audio),
            "duration_s": round(len(audio) / SAMPLE_RATE, 4),
            "labels": "synthesizer: known by construction from 'segments'",
            "seed": spec.seed,
            "segments": [s.to_dict() for s in spec.segments],
            "sha256": sha256(path),
        }
        if spec.clean:
            entry.update(clean=spec.clean, snr_db=spec.snr_db)
        clips.append(entry)
    real_dir = root / REAL_DIR
    if real_dir.resolve() != real_source.resolve():
        shutil.copytree(
            real_source,
            real_dir,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("*_tracks.csv", "*_labels.csv"),
        )
    wav = real_dir / f"{REAL_CLIP}.wav"
    tracks = real_dir / f"{REAL_CLIP}_tracks.csv"
    write_tracks(wav, tracks)
    audio, sample_rate = load_audio(wav)
    clips.append(
        {
            "name": REAL_CLIP,
            "file": f"{REAL_DIR}/{REAL_CLIP}.wav",
            "sample_rate": sample_rate,
            "num_samples": len(audio),
            "duration_s": round(len(audio) / sample_rate, 4),
            "labels": (
                f"voicing from the phone alignment {REAL_DIR}/{REAL_CLIP}_phone.lab; f0 (pyin) "
                f"and F1/F2 (LPC) measured into {REAL_DIR}/{REAL_CLIP}_tracks.csv"
            ),
            "source": "CMU ARCTIC, speaker slt (see cmu_arctic/COPYING, which must travel with it)",
            "sha256": sha256(wav),
            "extra_files": {
                name: sha256(real_dir / name)
                for name in (f"{REAL_CLIP}_phone.lab", f"{REAL_CLIP}_tracks.csv", "COPYING")
            },
        }
    )
    return {
        "sample_rate": SAMPLE_RATE,
        "generator": "scripts/make_data.py",
        "clips": clips,
        "real_speech": real_speech_entries(real_dir),
        "recorded_noise": recorded_noise_entry(root),
        "capstone": build_capstone(root),
    }


def recorded_noise_entry(root: Path) -> dict:
    """The recorded noise (``data/recorded_noise/``, shipped, not generated): its source,
    licence, the one change made to it, its use and its SHA-256."""
    source = DATA_DIR / RECORDED_NOISE_DIR
    target = root / RECORDED_NOISE_DIR
    if target.resolve() != source.resolve():
        shutil.copytree(source, target, dirs_exist_ok=True)
    wav = target / f"{RECORDED_NOISE}.wav"
    audio, _ = load_audio(wav)
    return {
        "file": f"{RECORDED_NOISE_DIR}/{RECORDED_NOISE}.wav",
        "num_samples": len(audio),
        "source": "Speech Commands (Warden, 2018), _background_noise_/running_tap.wav",
        "licence": "CC BY 4.0 (see recorded_noise/README.md)",
        "modified": "trimmed to its first 20 s",
        "use": "evaluation only (06's real test set at 0, 5 and 10 dB), never training",
        "sha256": sha256(wav),
    }


def real_speech_entries(real_dir: Path) -> list[dict]:
    """The capstone's real recordings (``data/cmu_arctic/``, shipped unmodified): speaker, role
    and SHA-256 of each; their labels, measured once into ``<name>_labels.csv``."""
    entries = []
    for name in REAL_VALIDATION + REAL_HELD_BACK:
        wav = real_dir / f"{name}.wav"
        audio, _ = load_audio(wav)
        labels = write_frame_labels(
            labels_from_audio(audio), real_labels_path(name, real_dir.parent)
        )
        role = "held back (real-speech test set)" if name in REAL_HELD_BACK else "validation"
        entries.append(
            {
                "name": name,
                "file": f"{REAL_DIR}/{name}.wav",
                "speaker": REAL_SPEAKERS[name],
                "role": role,
                "num_samples": len(audio),
                "modified": False,
                "source": "CMU ARCTIC (see cmu_arctic/COPYING)",
                "sha256": sha256(wav),
                "labels": {
                    "file": f"{REAL_DIR}/{labels.name}",
                    "measured_by": "helpers.audio.labels_from_audio",
                    "sha256": sha256(labels),
                },
            }
        )
    return entries


def _utterance_entry(root: Path, name: str, seed: int, seconds: float) -> dict:
    audio, _ = capstone_utterance(seed, seconds)
    path = save_audio(root / CAPSTONE_DIR / f"{name}.wav", audio, SAMPLE_RATE)
    return {
        "name": name,
        "file": f"{CAPSTONE_DIR}/{name}.wav",
        "seed": seed,
        "num_samples": len(audio),
        "segments": [s.to_dict() for s in random_utterance(seed, seconds)],
        "sha256": sha256(path),
    }


def build_capstone(root: Path) -> dict:
    """The capstone's clips: clean training utterances (training noise is made by
    ``helpers.capstone.data.train_noise`` when training), clean held-back utterances and their
    mixtures with fresh noise of every family; and the SHA-256 of the shipped weights
    (made by ``scripts/train_capstone.py``, not here)."""
    (root / CAPSTONE_DIR).mkdir(parents=True, exist_ok=True)
    train = [
        _utterance_entry(root, f"train_{seed}", seed, CAPSTONE_TRAIN_SECONDS)
        for seed in CAPSTONE_TRAIN_SEEDS
    ]
    held_back, mixtures = [], []
    for index, seed in enumerate(CAPSTONE_HELD_BACK_SEEDS):
        entry = _utterance_entry(root, f"heldback_{seed}", seed, CAPSTONE_HELD_BACK_SECONDS)
        held_back.append(entry)
        clean, _ = capstone_utterance(seed, CAPSTONE_HELD_BACK_SECONDS)
        for family in NOISE_FAMILIES:
            noise_seed = held_back_noise_seed(index, family)
            noisy = mix(clean, make_noise(family, len(clean), noise_seed), CAPSTONE_SNR_DB)
            name = f"heldback_{seed}_{family}"
            path = save_audio(root / CAPSTONE_DIR / f"{name}.wav", noisy, SAMPLE_RATE)
            mixtures.append(
                {
                    "name": name,
                    "file": f"{CAPSTONE_DIR}/{name}.wav",
                    "clean": entry["name"],
                    "noise": family,
                    "noise_seed": noise_seed,
                    "snr_db": CAPSTONE_SNR_DB,
                    "sha256": sha256(path),
                }
            )
    weights = {}
    for path in sorted((DATA_DIR / CAPSTONE_DIR).glob("*.weights.npz")):
        if (root / CAPSTONE_DIR).resolve() != path.parent.resolve():
            shutil.copy(path, root / CAPSTONE_DIR / path.name)
        weights[path.name] = sha256(path)
    return {
        "sample_rate": SAMPLE_RATE,
        "train": train,
        "held_back": held_back,
        "mixtures": mixtures,
        "weights": {"made_by": "scripts/train_capstone.py", "sha256": weights},
    }


def manifest_text(manifest: dict) -> str:
    return json.dumps(manifest, indent=1) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="rebuild in a temporary folder and compare with data/"
    )
    args = parser.parse_args()
    real_source = DATA_DIR / REAL_DIR
    if not args.check:
        manifest = build(DATA_DIR, real_source)
        (DATA_DIR / "manifest.json").write_text(manifest_text(manifest))
        print(f"wrote {len(manifest['clips'])} clips and manifest.json to {DATA_DIR}")
        return 0
    committed = json.loads((DATA_DIR / "manifest.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        rebuilt = build(Path(tmp), real_source)
    if manifest_text(rebuilt) != manifest_text(committed):
        old = {c["name"]: c for c in committed["clips"]}
        for clip in rebuilt["clips"]:
            if old.get(clip["name"]) != clip:
                print(f"differs: {clip['name']}")
        print("data/ is NOT reproduced bit for bit by scripts/make_data.py")
        return 1
    print(f"all {len(rebuilt['clips'])} clips reproduced bit for bit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
