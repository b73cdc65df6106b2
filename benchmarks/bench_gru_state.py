"""Seconds per training step of the GRU denoiser, several ways, on the same sizes, in one run.

    python benchmarks/bench_gru_state.py

The denoiser is ``helpers.models.make_gru_step_model``: ``|stft|`` of a frame (257 bins) ->
log magnitude -> one GRU step -> a mask per bin; the masks scale the noisy STFT and
``helpers.models.apply_masks`` (``helpers.audio.istft``) makes the audio. Variants:

1. the eager per-frame loop (the question's shape: a Python loop calling the Keras step model once
   per frame, optimizer step outside any graph), with the output path in TensorFlow so that it
   has gradients to apply;
2. ``helpers.recurrence.unroll`` inside a ``tf.function`` training step;
3. ``keras.layers.GRU`` over the whole sequence (same features, units, mask layer, synthesis
   and loss), in a ``tf.function`` training step, as ``model.fit`` would run it;
4. (for information) ``helpers.recurrence.keras_rnn_reference``: ``keras.layers.RNN`` over the
   step model's own ``GRUCell``, in a ``tf.function`` training step.

All four start from the same weights, and the script checks that they compute the same first
loss before timing anything. Every step is forward, loss, gradients and an Adam update, on a
batch of the two full noisy versions of ``utterance_1`` (2 x 91 frames of 257 magnitude bins,
32 GRU units). Tracing is excluded (two warm-up steps each); the variants are timed in
interleaved rounds and each keeps its fastest block, so a shared machine treats them alike. It
prints the ratios; the last line is ``speedup: N.Nx`` (eager loop over ``unroll`` in
``tf.function``). Goals: at least 10x, and ``unroll`` within 1.5x of ``keras.layers.GRU``.
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
import keras
import tensorflow as tf

from helpers.audio import batch_of, load_clip
from helpers.course import make_deterministic
from helpers.models import (
    BINS,
    GRU_UNITS,
    LogMagnitude,
    apply_masks,
    denoising_loss,
    make_gru_step_model,
)
from helpers.recurrence import keras_rnn_reference, unroll, zero_state

ROUNDS, WARMUP = 5, 2  # per round: 1 eager step, 10 graph steps of each kind


def eager_loop_loss(step_model, noisy, clean):
    """The question's shape: one eager Keras call per frame, the state rebound as a tensor."""
    magnitudes = tf.abs(noisy)
    state, masks = zero_state(step_model, noisy.shape[0]), []
    for t in range(noisy.shape[1]):
        mask, state = step_model([magnitudes[:, t], state], training=True)
        masks.append(mask)
    return denoising_loss(clean, apply_masks(tf.stack(masks, 1), noisy, clean.shape[-1]))


def unroll_loss(step_model, noisy, clean):
    masks, _ = unroll(step_model, tf.abs(noisy), training=True)
    return denoising_loss(clean, apply_masks(masks, noisy, clean.shape[-1]))


def keras_rnn_loss(step_model, noisy, clean):
    masks, _ = keras_rnn_reference(
        step_model, tf.abs(noisy), zero_state(step_model, noisy.shape[0])
    )
    return denoising_loss(clean, apply_masks(masks, noisy, clean.shape[-1]))


def keras_gru_model(units: int = GRU_UNITS, bins: int = BINS) -> keras.Model:
    """The same denoiser as a sequence model: magnitudes (batch, time, bins) -> masks."""
    magnitudes = keras.Input((None, bins), name="noisy_magnitudes")
    features = LogMagnitude(name="features")(magnitudes)
    sequence = keras.layers.GRU(units, return_sequences=True, name="gru")(features)
    masks = keras.layers.Dense(bins, activation="sigmoid", name="mask")(sequence)
    return keras.Model(magnitudes, masks, name="sequence_model")


def keras_gru_loss(model, noisy, clean):
    masks = model(tf.abs(noisy), training=True)
    return denoising_loss(clean, apply_masks(masks, noisy, clean.shape[-1]))


def train_step(loss_fn, model, optimizer, graph: bool):
    """``step(noisy, clean) -> loss``: loss, gradients, one Adam update."""
    variables = model.trainable_weights

    def step(noisy, clean):
        with tf.GradientTape() as tape:
            loss = loss_fn(model, noisy, clean)
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    return tf.function(step) if graph else step


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
    print(f"helpers from {Path(helpers.__file__).parent}")
    make_deterministic(0)
    noisy, clean = batch_of([load_clip("utterance_1_snr5"), load_clip("utterance_1_snr15")])
    print(
        f"batch {noisy.shape[0]} x {noisy.shape[1]} frames of {noisy.shape[2]} magnitude "
        f"bins (|stft|), {GRU_UNITS} GRU units, "
        f"{tf.config.threading.get_inter_op_parallelism_threads() or 'all'} inter-op threads"
    )

    models = {name: make_gru_step_model() for name in ("eager", "unroll", "keras.layers.RNN")}
    weights = models["eager"].get_weights()  # gru kernel, recurrent kernel, bias, mask kernel, bias
    for model in models.values():
        model.set_weights(weights)
    models["keras.layers.GRU"] = keras_gru_model()
    models["keras.layers.GRU"].set_weights(weights)  # same layout: GRU(reset_after=True) + Dense
    losses = {
        "eager": eager_loop_loss,
        "unroll": unroll_loss,
        "keras.layers.GRU": keras_gru_loss,
        "keras.layers.RNN": keras_rnn_loss,
    }
    first = {name: float(losses[name](models[name], noisy, clean)) for name in losses}
    for name, value in first.items():  # the same computation, or the timings mean nothing
        assert abs(value - first["eager"]) <= 1e-5 * abs(first["eager"]), (name, first)
    print(f"first loss, all variants: {first['eager']:.3g}")

    steps = {
        name: train_step(
            losses[name], models[name], keras.optimizers.Adam(1e-3), graph=name != "eager"
        )
        for name in losses
    }
    seconds = seconds_per_step(
        steps,
        noisy,
        clean,
        block={"eager": 1, "unroll": 10, "keras.layers.GRU": 10, "keras.layers.RNN": 10},
    )
    eager, graph = seconds["eager"], seconds["unroll"]
    gru, rnn = seconds["keras.layers.GRU"], seconds["keras.layers.RNN"]

    print(f"eager per-frame loop               {eager:9.4f} s/step")
    print(f"unroll in tf.function              {graph:9.4f} s/step")
    print(f"keras.layers.GRU (tf.function)     {gru:9.4f} s/step")
    print(f"keras.layers.RNN, same GRUCell     {rnn:9.4f} s/step  (for information)")
    ratio = graph / gru
    print(
        f"unroll / keras.layers.GRU: {ratio:.2f}x (goal: at most 1.5x) "
        f"{'met' if ratio <= 1.5 else 'MISSED'}"
    )
    print(f"unroll / keras.layers.RNN: {graph / rnn:.2f}x")
    print(f"eager loop / keras.layers.GRU: {eager / gru:.1f}x")
    speedup = eager / graph
    print(f"eager loop / unroll (goal: at least 10x) {'met' if speedup >= 10 else 'MISSED'}")
    print(f"speedup: {speedup:.1f}x")


if __name__ == "__main__":
    main()
