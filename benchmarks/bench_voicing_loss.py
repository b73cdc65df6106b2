"""Seconds for one loss value plus its gradient, per-frame loop versus masked, eager and in
``tf.function``, on the same 3 s clip, in one run.

    python benchmarks/bench_voicing_loss.py

The clip is the real recording ``arctic_a0009`` (3.1 s, 194 frames: silent, voiced and
unvoiced); the estimate is a ``tf.Variable`` holding the clip plus white noise at -40 dBFS, and
the gradient is taken with respect to it (no model, so only the loss is measured). Variants:

1. ``cond_loop_voicing_loss`` eagerly (the question's shape: per-frame ``tf.cond`` in a
   ``tf.while_loop``, which runs as a Python loop in eager mode);
2. ``masked_voicing_loss`` eagerly (all frames at once, masks, no loop);
3. and 4. the same two inside ``tf.function`` (tracing excluded: one warm-up call each).

The variants are timed in interleaved rounds and each keeps its fastest block, so a shared
machine treats them alike. It prints the ratios; the last line is ``speedup: N.Nx`` (per-frame
eager over masked eager). Goal: at least 20x.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

# Measure the helpers of this checkout, whatever an (editable) install of the course points at.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import helpers
from helpers.course.quiet_tensorflow import import_tensorflow

import_tensorflow()  # first: it keeps TensorFlow's start-up log quiet

# isort: split
import numpy as np
import tensorflow as tf

from helpers.audio import load_clip, make_example
from helpers.course import make_deterministic
from helpers.voicing import as_tf_function, cond_loop_voicing_loss, masked_voicing_loss

ROUNDS = 3
CALLS = {
    "per-frame eager": 1,
    "masked eager": 20,
    "per-frame tf.function": 20,
    "masked tf.function": 20,
}  # calls per timed block


def value_and_gradient(loss_fn, reference, estimate, labels):
    with tf.GradientTape() as tape:
        loss = loss_fn(reference, estimate, labels)
    grad = tape.gradient(loss, estimate)
    return float(loss), grad


def main() -> None:
    print(f"helpers from {Path(helpers.__file__).parent}")
    make_deterministic(0)
    clip = load_clip("arctic_a0009")
    example = make_example(clip.name, clip.clean, clip.labels, seed=0)
    labels = example.labels
    estimate = tf.Variable(example.audio)
    reference = tf.constant(example.clean)
    variants = {
        "per-frame eager": cond_loop_voicing_loss,
        "masked eager": masked_voicing_loss,
        "per-frame tf.function": as_tf_function(cond_loop_voicing_loss, labels),
        "masked tf.function": as_tf_function(masked_voicing_loss, labels),
    }
    print(
        f"{clip.name}: {example.clean.size / clip.sample_rate:.2f} s, "
        f"{labels.num_frames} frames {labels.counts()}; loss value + gradient w.r.t. the "
        "estimate"
    )
    values = {}
    for name, loss_fn in variants.items():  # warm-up: traces the tf.functions
        values[name], grad = value_and_gradient(loss_fn, reference, estimate, labels)
        assert grad is not None and bool(tf.reduce_all(tf.math.is_finite(grad))), name
    loop_value = values["per-frame eager"]
    for name, value in values.items():
        if "per-frame" in name:
            assert abs(value - loop_value) <= 1e-6 * abs(loop_value), (name, value, loop_value)
    best = {name: np.inf for name in variants}
    for _ in range(ROUNDS):
        for name, loss_fn in variants.items():
            start = time.perf_counter()
            for _ in range(CALLS[name]):
                value_and_gradient(loss_fn, reference, estimate, labels)
            best[name] = min(best[name], (time.perf_counter() - start) / CALLS[name])
    for name, seconds in best.items():
        print(f"{name:22s} {seconds * 1e3:9.2f} ms per value + gradient")
    ratios = {
        "per-frame: tf.function over eager": ("per-frame eager", "per-frame tf.function"),
        "masked: tf.function over eager": ("masked eager", "masked tf.function"),
        "in tf.function: masked over per-frame": ("per-frame tf.function", "masked tf.function"),
    }
    for label, (slow, fast) in ratios.items():
        print(f"{label:40s} {best[slow] / best[fast]:6.1f}x faster")
    print(f"speedup: {best['per-frame eager'] / best['masked eager']:.1f}x")


if __name__ == "__main__":
    main()
