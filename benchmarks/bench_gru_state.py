"""Seconds per training step of the GRU denoiser, three ways, on the same sizes, in one run.

    python benchmarks/bench_gru_state.py

1. the eager per-frame loop (the seed's shape: a Python loop calling the Keras step model once
   per frame, optimizer step outside any graph), with the output path in TensorFlow so that it
   has gradients to apply;
2. ``helpers.gru_state.unroll`` inside a ``tf.function`` training step;
3. ``keras.layers.GRU`` over the whole sequence (same features, units, mask layer and loss),
   in a ``tf.function`` training step, as ``model.fit`` would run it.

Every step is forward, loss, gradients and an Adam update, on a batch of the two full noisy
versions of ``utterance_1`` (2 x 91 frames of 512 samples, 32 GRU units). Tracing is excluded
(two warm-up steps each); the variants are timed in interleaved rounds and each keeps its
fastest block, so a shared machine treats them alike. It prints the ratios; the last line is
``speedup: N.Nx`` (eager loop over ``unroll`` in ``tf.function``). Goals: at least 10x, and
``unroll`` within 1.5x of ``keras.layers.GRU``.
"""

from __future__ import annotations

import time

import helpers  # noqa: F401  (first: it keeps TensorFlow's start-up log quiet)

# isort: split
import keras
import tensorflow as tf

from helpers.audio import FRAME_LENGTH
from helpers.dataset import load_clip
from helpers.gru_state import (
    UNITS,
    ApplyMask,
    LogMagnitude,
    batch_of,
    denoising_loss,
    frames_to_audio,
    make_step_model,
    unroll,
    zero_state,
)
from helpers.reproducibility import make_deterministic

ROUNDS, WARMUP = 5, 2  # per round: 1 eager step, 10 graph steps of each kind


def eager_loop_step(step_model, optimizer, noisy, clean):
    """The seed's shape: one eager Keras call per frame, the state rebound as a tensor."""
    variables = step_model.trainable_weights
    with tf.GradientTape() as tape:
        state, outputs = zero_state(step_model, noisy.shape[0]), []
        for t in range(noisy.shape[1]):
            output, state = step_model([noisy[:, t], state], training=True)
            outputs.append(output)
        loss = denoising_loss(clean, frames_to_audio(tf.stack(outputs, 1), clean.shape[-1]))
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return loss


def unroll_step_fn(step_model, optimizer):
    variables = step_model.trainable_weights

    @tf.function
    def step(noisy, clean):
        with tf.GradientTape() as tape:
            outputs, _ = unroll(step_model, noisy, training=True)
            loss = denoising_loss(clean, frames_to_audio(outputs, clean.shape[-1]))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    return step


def keras_gru_model(units: int = UNITS) -> keras.Model:
    """The same denoiser as a sequence model: frames (batch, time, 512) -> frames."""
    frames = keras.Input((None, FRAME_LENGTH))
    features = LogMagnitude()(frames)
    sequence = keras.layers.GRU(units, return_sequences=True)(features)
    mask = keras.layers.Dense(FRAME_LENGTH // 2 + 1, activation="sigmoid")(sequence)
    return keras.Model(frames, ApplyMask()([frames, mask]))


def keras_gru_step_fn(model, optimizer):
    variables = model.trainable_weights

    @tf.function
    def step(noisy, clean):
        with tf.GradientTape() as tape:
            loss = denoising_loss(clean, frames_to_audio(model(noisy, training=True),
                                                         clean.shape[-1]))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    return step


def seconds_per_step(steps: dict, noisy, clean, block: dict) -> dict:
    """Best block average per variant, rounds interleaved, after WARMUP steps each.

    The machine may be shared: interleaving the variants round by round and keeping each
    one's fastest block compares them under the same conditions.
    """
    for step in steps.values():
        for _ in range(WARMUP):
            float(step(noisy, clean))  # traces, builds the optimizer, warms caches
    best = {name: float("inf") for name in steps}
    for _ in range(ROUNDS):
        for name, step in steps.items():
            started = time.perf_counter()
            for _ in range(block[name]):
                loss = step(noisy, clean)
            float(loss)  # wait for the last step
            best[name] = min(best[name], (time.perf_counter() - started) / block[name])
    return best


def main() -> None:
    make_deterministic(0)
    noisy, clean = batch_of([load_clip("utterance_1_snr5"), load_clip("utterance_1_snr15")])
    print(f"batch {noisy.shape[0]} x {noisy.shape[1]} frames of {noisy.shape[2]} samples, "
          f"{UNITS} GRU units, {tf.config.threading.get_inter_op_parallelism_threads() or 'all'}"
          " inter-op threads")

    eager_model, eager_optimizer = make_step_model(), keras.optimizers.Adam(1e-3)
    steps = {
        "eager": lambda n, c: eager_loop_step(eager_model, eager_optimizer, n, c),
        "unroll": unroll_step_fn(make_step_model(), keras.optimizers.Adam(1e-3)),
        "gru": keras_gru_step_fn(keras_gru_model(), keras.optimizers.Adam(1e-3)),
    }
    seconds = seconds_per_step(steps, noisy, clean, block={"eager": 1, "unroll": 10, "gru": 10})
    eager, graph, gru = seconds["eager"], seconds["unroll"], seconds["gru"]

    print(f"eager per-frame loop        {eager:9.4f} s/step")
    print(f"unroll in tf.function       {graph:9.4f} s/step")
    print(f"keras.layers.GRU (tf.func.) {gru:9.4f} s/step")
    ratio = graph / gru
    print(f"unroll / keras.layers.GRU: {ratio:.2f}x (goal: at most 1.5x) "
          f"{'met' if ratio <= 1.5 else 'MISSED'}")
    print(f"eager loop / keras.layers.GRU: {eager / gru:.1f}x")
    speedup = eager / graph
    print(f"eager loop / unroll (goal: at least 10x) {'met' if speedup >= 10 else 'MISSED'}")
    print(f"speedup: {speedup:.1f}x")


if __name__ == "__main__":
    main()
