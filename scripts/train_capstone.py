"""Train the capstone's denoisers and write their weights to data/capstone/.

    python -m scripts.train_capstone            # every shipped model, the shipped recipe
    python -m scripts.train_capstone --check    # retrain in memory, compare SHA-256s with data/
    python -m scripts.train_capstone --loss masked --seed 1   # one of them

The shipped models (``helpers.capstone.SHIPPED_RUNS``): the two compared losses and the
ablation's three variants from training seed 0, and the masked loss from seeds 1 and 2 too
(06's spread over training seeds). On two CPU cores: about 5 minutes per masked-loss run,
20 for the question's loop; about 55 in all.

Same machine, same pins: the same bytes (op determinism, seeded noise). Another processor may
change the last bits of the weights (CONTRIBUTING.md, "Stored outputs"), so --check can only
pass where the weights were made. After writing new weights run scripts/make_data.py, which
records their SHA-256 in data/manifest.json.
"""

from __future__ import annotations

import argparse
import hashlib
import sys

from helpers.capstone import (
    SHIPPED_EXTRA_UTTERANCES,
    SHIPPED_NOISE_INSTANCES,
    SHIPPED_RUNS,
    SHIPPED_TRAIN_STEPS,
    TRAINED_LOSSES,
    train_shipped,
    weights_bytes,
    weights_path,
)
from helpers.course import make_deterministic


def trained_bytes(
    loss: str,
    steps: int = SHIPPED_TRAIN_STEPS,
    clips: int | None = None,
    seed: int = 0,
    extra_utterances: int = SHIPPED_EXTRA_UTTERANCES,
    noise_instances: int = SHIPPED_NOISE_INSTANCES,
) -> bytes:
    """The weights file ``train_shipped(loss, seed, ...)`` gives, as bytes (the arguments
    shrink the shipped run for a test)."""
    make_deterministic(seed)
    return weights_bytes(
        train_shipped(loss, seed, steps, clips, extra_utterances, noise_instances).model
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="retrain and compare with the weights in data/capstone/",
    )
    parser.add_argument(
        "--loss",
        choices=TRAINED_LOSSES,
        action="append",
        help="train only this loss (repeatable); all by default: the two "
        "compared models, the ablation's three variants (and the masked loss's extra seeds)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        action="append",
        help="train only this training seed (repeatable); every shipped one by default",
    )
    args = parser.parse_args()
    runs = [
        (loss, seed)
        for loss, seed in SHIPPED_RUNS
        if (args.loss is None or loss in args.loss) and (args.seed is None or seed in args.seed)
    ]
    if not runs:
        parser.error(f"no shipped model has that loss and seed; the shipped ones: {SHIPPED_RUNS}")
    failed = 0
    for loss, seed in runs:
        data = trained_bytes(loss, seed=seed)
        digest = hashlib.sha256(data).hexdigest()
        path = weights_path(loss, seed)
        if args.check:
            same = path.exists() and hashlib.sha256(path.read_bytes()).hexdigest() == digest
            print(f"{path.name}: {'reproduced bit for bit' if same else 'DIFFERS'}")
            failed += not same
        else:
            path.write_bytes(data)
            print(f"wrote {path.name} ({len(data)} bytes, sha256 {digest[:12]}...)")
    if not args.check:
        print("now run python -m scripts.make_data to record the SHA-256s in the manifest")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
