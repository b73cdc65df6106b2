"""How well ``helpers.audio.labels_from_audio`` agrees with the known labels of every
labelled clip in the course, with and without its voicing-decay rule.

    python -m scripts.measure_labels          # about 70 s on two cores

The clips: the synthetic ones in ``data/`` (clean, and mixed at 5 and 15 dB), the real
``arctic_a0009`` against its phone alignment, clean and mixed with white and pink noise at
5 dB (three seeds each), and the capstone's held-back, validation and wider mixtures with
their clean utterances. For each group it prints the mean agreement with and without
``trim_voicing_decay`` (``voicing_decay_db=None``) and the clips where any frame's agreement
changes, frame by frame. ``labels_from_audio``'s docstring and notebook 07 quote it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import numpy as np

from helpers.audio import clips, labels_from_audio
from helpers.capstone import data as capstone_data


def labelled_clips() -> Iterator[tuple[str, str, np.ndarray, np.ndarray]]:
    """``(group, name, audio, known voicing)`` for every labelled clip."""
    for name in clips.clip_names():
        if name != clips.REAL_CLIP:
            clip = clips.load_clip(name)
            yield "synthetic", name, clip.audio, clip.labels.voicing
    real = clips.load_clip(clips.REAL_CLIP)
    yield "real", real.name, real.audio, real.labels.voicing
    for name, audio in clips.real_clip_in_noise().items():
        yield "real in noise", name, audio, real.labels.voicing
    for group, mixtures in (
        ("capstone held-back", capstone_data.held_back_mixtures),
        ("capstone validation", capstone_data.validation_mixtures),
        ("capstone wider", capstone_data.wider_held_back_mixtures),
    ):
        seen = set()
        for mixture in mixtures():
            if mixture.clean_name not in seen:
                seen.add(mixture.clean_name)
                yield group, f"{mixture.clean_name}_clean", mixture.clean, mixture.labels.voicing
            yield group, mixture.name, mixture.audio, mixture.labels.voicing


def main() -> None:
    with_rule: dict[str, list[float]] = defaultdict(list)
    without_rule: dict[str, list[float]] = defaultdict(list)
    changed = []
    for group, name, audio, known in labelled_clips():
        agree = labels_from_audio(audio).voicing == known
        agree_without = labels_from_audio(audio, voicing_decay_db=None).voicing == known
        with_rule[group].append(agree.mean())
        without_rule[group].append(agree_without.mean())
        if not np.array_equal(agree, agree_without):
            changed.append(
                f"{name}: {agree_without.sum()} -> {agree.sum()} of {len(agree)} frames agree"
            )
    print(f"{'group':22s} {'clips':>5s} {'without rule':>13s} {'with rule':>10s}")
    for group in with_rule:
        print(
            f"{group:22s} {len(with_rule[group]):5d} {np.mean(without_rule[group]):13.1%} "
            f"{np.mean(with_rule[group]):10.1%}"
        )
    total = sum(len(v) for v in with_rule.values())
    print(f"clips where any frame's agreement changes ({len(changed)} of {total}):")
    for line in changed:
        print("  " + line)


if __name__ == "__main__":
    main()
