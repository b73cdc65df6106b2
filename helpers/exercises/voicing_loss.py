"""Checkers for the exercises of 03_voicing_loss_reproduce and 04_voicing_loss_fix.

The checkers build their own small model from a fixed seed and their own short examples, so
the notebook's global random state is not touched.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import cache

import keras
import numpy as np
import tensorflow as tf
from hypothesis import strategies as st

from helpers.audio import Clip, Voicing, excerpt, load_clip, make_example
from helpers.exercises import CheckResult, run_check
from helpers.exercises.compare import (
    GRAPH_ONLY,
    Search,
    error_text,
    first_difference,
    first_difference_of,
    two_values,
)
from helpers.models import enhance, make_conv_denoiser, snapshot
from helpers.voicing import cond_loop_voicing_loss

QUIET_SCALE = 3e-7  # vowel_a at this scale: the question's loss equals the silent file's
# vowel_a at this scale: the log compression's floor flattens the loss for reference and
# estimate alike (their compressed levels are equal to the last bit), so every gradient is
# exactly zero, and none is None.
FLAT_SCALE = 1e-9
SCALES = (1.0, 1e-3, QUIET_SCALE, FLAT_SCALE)
# A model whose output is scaled by this (a muted estimate, 280 dB down) on a voiced clip:
# every gradient is nonzero yet below 1e-19, so their squares underflow to 0 in float32.
MUTED_GAIN = 1e-14
SQUARE_UNDERFLOW = float(np.sqrt(np.finfo(np.float32).tiny))  # about 1.1e-19
STEP_CLIPS = ("vowel_a", "fricative_s", "silence", "utterance_1", "utterance_2")


@dataclass(frozen=True)
class Excerpt:
    """Frames ``start .. start + frames - 1`` of a course clip, scaled, plus seeded noise."""

    clip: str
    start: int
    frames: int
    scale: float = 1.0

    def __repr__(self) -> str:
        scaled = "" if self.scale == 1 else f" scaled by {self.scale:g}"
        return f"{self.clip} frames {self.start}-{self.start + self.frames - 1}{scaled}"


@cache
def _example(excerpt_: Excerpt) -> Clip:
    clip = load_clip(excerpt_.clip)
    audio, labels = excerpt(
        clip.clean, clip.labels, excerpt_.start, excerpt_.start + excerpt_.frames
    )
    return make_example(
        repr(excerpt_),
        audio * excerpt_.scale,
        labels,
        noise_rms=0.01 * excerpt_.scale,
        seed=100 + excerpt_.start,
    )


@dataclass(frozen=True)
class StepPlan:
    """A model (``make_conv_denoiser(seed)``) with ``unused`` variables no loss reaches, listed
    ``place`` ("first" or "last") among its variables, its output scaled by ``output_gain``,
    and the excerpts it is stepped on, in order, with one Adam optimizer."""

    excerpts: tuple[Excerpt, ...]
    unused: int = 0
    place: str = "first"
    seed: int = 7
    output_gain: float = 1.0

    def __repr__(self) -> str:
        model = f"model seed {self.seed}"
        if self.unused:
            model += f", {self.unused} unused variable(s) listed {self.place}"
        if self.output_gain != 1:
            model += f", its output scaled by {self.output_gain:g}"
        return f"[{', '.join(map(repr, self.excerpts))}] ({model})"


class _UnusedHead(keras.layers.Layer):
    """Variables on the model's path that no loss can reach (``stop_gradient``): their
    gradients are None on every clip, like the unused head of 00's model."""

    def __init__(self, count: int, **kwargs):
        super().__init__(**kwargs)
        self.count = count

    def build(self, input_shape):
        self.heads = [
            self.add_weight(shape=(), initializer="ones", name=f"unused_{i}")
            for i in range(self.count)
        ]

    def call(self, inputs):
        return inputs + 0.0 * tf.stop_gradient(tf.add_n(self.heads))


def _plan_model(plan: StepPlan) -> keras.Model:
    inner = make_conv_denoiser(seed=plan.seed)
    if not plan.unused and plan.output_gain == 1:
        return inner
    noisy = keras.Input(shape=(None, 1), name="noisy")
    output = noisy
    if plan.unused and plan.place == "first":
        output = _UnusedHead(plan.unused, name="head")(output)
    output = inner(output)
    if plan.unused and plan.place != "first":
        output = _UnusedHead(plan.unused, name="head")(output)
    if plan.output_gain != 1:
        output = keras.layers.Rescaling(plan.output_gain, name="output_gain")(output)
    return keras.Model(noisy, output, name="with_unused_variables")


def reference_train_step_or_skip(model, optimizer, example) -> bool:
    """The reference answer to 3.1: the gradients of the question's loss, applied (those that
    exist) when any exists; else nothing touched."""
    with tf.GradientTape() as tape:
        loss = cond_loop_voicing_loss(example.clean, enhance(model, example.audio), example.labels)
    variables = model.trainable_variables
    pairs = [(g, v) for g, v in zip(tape.gradient(loss, variables), variables) if g is not None]
    if not pairs:
        return False
    optimizer.apply_gradients(pairs)
    return True


def _gradient_kind(model, example: Clip) -> str:
    """What the question's loss gives ``model`` on ``example``: "none" (every gradient None),
    "zero" (every gradient that exists exactly zero), "tiny" (some nonzero, every one below
    1e-19: their squares underflow in float32) or "some"."""
    with tf.GradientTape() as tape:
        loss = cond_loop_voicing_loss(example.clean, enhance(model, example.audio), example.labels)
    grads = [g for g in tape.gradient(loss, model.trainable_variables) if g is not None]
    if not grads:
        return "none"
    largest = max(float(tf.reduce_max(tf.abs(tf.cast(g, tf.float64)))) for g in grads)
    if largest == 0:
        return "zero"
    return "tiny" if largest < SQUARE_UNDERFLOW else "some"


def _why(example: Clip, stepped: bool, plan: StepPlan, kind: str = "some") -> str:
    """Why the reference did what it did on ``example``: what a wrong decision looked at."""
    voicing = "".join(str(int(v)) for v in example.labels.voicing)
    labels = f"labels {voicing} (0 silent, 1 voiced, 2 unvoiced)"
    if not stepped:
        speech = example.labels.voicing != Voicing.SILENT
        also = (
            ": the labels say there is speech, but the question's loss reaches no variable "
            "here; decide from the gradients, not from the labels"
            if speech.any()
            else ""
        )
        return f"every gradient is None ({labels}){also}"
    reasons = []
    if kind == "zero":
        reasons.append(
            "every gradient is exactly zero, and none is None: the loss is flat here, yet the "
            "gradients exist, and the reference applies them as any other (zeros are "
            "gradients); skip only when there is none"
        )
    if kind == "tiny":
        reasons.append(
            "every gradient is below 1e-19, and some are not zero: their squares underflow to "
            "0 in float32, so a norm of them is 0; decide from None, not from a norm"
        )
    if not (example.labels.voicing == Voicing.VOICED).any():
        reasons.append("no voiced frame, yet gradients: decide from them, not from the labels")
    if example.clean.std() < 1e-5:
        reasons.append(
            "the loss is about the silent file's, yet gradients: decide from them, not from "
            "the loss value"
        )
    if plan.unused:
        reasons.append(
            f"{plan.unused} unused variable(s), listed {plan.place}, always get None: skip only "
            "when every gradient is None, not when one or most are"
        )
    return f"gradients exist ({labels}{'; ' if reasons else ''}{'; '.join(reasons)})"


@cache
def _reference_run(plan: StepPlan) -> tuple[tuple[bool, tuple[np.ndarray, ...], str], ...]:
    """What the reference returns, the weights after it, and what kind of gradients it saw
    (``_gradient_kind``), for every call of the plan (the same for every answer: computed once
    per plan)."""
    model, optimizer = _plan_model(plan), keras.optimizers.Adam(learning_rate=1e-3)
    run = []
    for excerpt_ in plan.excerpts:
        example = _example(excerpt_)
        kind = _gradient_kind(model, example)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            applied = reference_train_step_or_skip(model, optimizer, example)
        run.append((applied, tuple(snapshot(model)), kind))
    return tuple(run)


def _plan_fault(fn, plan: StepPlan) -> str | None:
    """How the learner's steps differ from the reference's on the plan, or None: the returned
    value, the optimizer's step count, and the weights, after every call."""
    model, optimizer = _plan_model(plan), keras.optimizers.Adam(learning_rate=1e-3)
    for number, (excerpt_, (expected, weights, kind)) in enumerate(
        zip(plan.excerpts, _reference_run(plan)), 1
    ):
        example = _example(excerpt_)
        where = f"On {plan!r}, call {number} ({excerpt_!r})"
        iterations = int(optimizer.iterations)
        with warnings.catch_warnings():  # Keras names the unused variables' None gradients
            warnings.simplefilter("ignore")
            try:
                applied = fn(model, optimizer, example)
            except Exception as error:
                why = "" if expected else f"; here {_why(example, expected, plan, kind)}"
                return f"{where}: your code raised {error_text(error)}{why}."
        if not isinstance(applied, (bool, np.bool_)):
            return f"{where}: you returned {applied!r}; expected True or False."
        stepped = int(optimizer.iterations) - iterations
        moved = max(float(np.max(np.abs(a - b))) for a, b in zip(snapshot(model), weights))
        why = _why(example, expected, plan, kind)
        if expected and not (applied and stepped == 1):
            return (
                f"{where}, {why}. The reference steps and returns True; you returned "
                f"{applied} and the optimizer took {stepped} step(s)."
            )
        if not expected and (applied or stepped or moved):
            return (
                f"{where}, {why}. The reference returns False and touches nothing; you "
                f"returned {applied}, the optimizer took {stepped} step(s) and the weights "
                f"differ from the reference's by up to {moved:.2g} (after a step, Adam's "
                "momentum moves them even on zero gradients)."
            )
        if moved > 1e-6:
            return (
                f"{where}: you stepped as the reference does, but the weights differ from "
                f"its by up to {moved:.2g}: apply the gradients of the question's loss, as "
                "they are."
            )
    return None


@st.composite
def _step_plans(draw) -> StepPlan:
    excerpts = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(STEP_CLIPS))
        total = len(load_clip(name).labels.voicing)
        frames = draw(st.integers(2, 6))
        start = draw(st.integers(0, total - frames))
        excerpts.append(Excerpt(name, start, frames, draw(st.sampled_from(SCALES))))
    unused = draw(st.integers(0, 6))
    place = draw(st.sampled_from(["first", "last"]))
    gain = draw(st.sampled_from([1.0, MUTED_GAIN]))
    return StepPlan(tuple(excerpts), unused, place, draw(st.integers(0, 20)), gain)


# Tried first: a very quiet voiced clip (its loss equals the silent file's while the model's
# output bias is still zero, as before the first step), silence, a voiced clip and silence
# again (after a step Adam has momentum), an unvoiced clip, a clip whose labels have speech but
# whose gradients are all None; one unused variable listed first, and more unused variables
# than used ones, listed last.
STEP_TRAPS = (
    StepPlan(
        (
            Excerpt("vowel_a", 0, 4, QUIET_SCALE),
            Excerpt("silence", 0, 4),
            Excerpt("vowel_a", 0, 4),
            Excerpt("silence", 0, 4),
            Excerpt("fricative_s", 0, 4),
            Excerpt("utterance_1", 6, 5),
        )
    ),
    StepPlan((Excerpt("vowel_a", 0, 3),), 1, "first", 8),
    StepPlan((Excerpt("vowel_a", 0, 3), Excerpt("silence", 0, 3)), 6, "last", 9),
)
# Then the edges of the gradients' range, which generated plans reach rarely: gradients that
# exist but are all below 1e-19 (a muted estimate: their squares underflow to 0 in float32),
# and gradients that are all exactly zero, none None (a voiced clip so quiet that the loss is
# flat, on a model whose biases are still zero, so its output is as quiet). The reference
# steps on both.
STEP_BOUNDARIES = (
    StepPlan((Excerpt("vowel_a", 0, 4), Excerpt("vowel_a", 4, 4)), output_gain=MUTED_GAIN),
    StepPlan((Excerpt("vowel_a", 4, 4, FLAT_SCALE), Excerpt("vowel_a", 0, 4)), seed=10),
)


def _plans_text(plans: list[StepPlan]) -> str:
    """What the plans tried held, counted by call."""
    calls = [kind for plan in plans for *_, kind in _reference_run(plan)]
    kinds = {kind: calls.count(kind) for kind in ("none", "zero", "tiny", "some")}
    return (
        f"{len(plans)} plans of {len(calls)} calls: {kinds['some']} with gradients, "
        f"{kinds['tiny']} with gradients all below 1e-19 (squares that underflow), "
        f"{kinds['zero']} with gradients all exactly zero and {kinds['none']} with none"
    )


def check_train_step_or_skip(function) -> CheckResult:
    """``function(model, optimizer, example)`` must take one optimizer step with the question's
    loss when any gradient exists and return True, and otherwise leave the model and the
    optimizer untouched and return False. Gradients that are all exactly zero exist: the
    reference steps on them (zeros are gradients; only None means nothing reached a variable).

    The domain: excerpts of voiced, unvoiced, silent and mixed course clips (some with speech
    in their labels and no gradient), from full scale down to a voiced clip so quiet that every
    gradient is exactly zero; models with up to six unused variables listed first or last, and
    models whose output is muted (scaled by 1e-14), whose gradients exist but are below 1e-19,
    so their squares underflow in float32. Compared with the reference after every call (the
    returned value, the optimizer's step count and the weights): the traps above, then the
    two edges (``STEP_BOUNDARIES``), then 3 generated plans."""

    def check(fn):
        tried: list[StepPlan] = []
        difference = first_difference(
            _step_plans(), lambda plan: _plan_fault(fn, plan), traps=STEP_TRAPS,
            boundaries=STEP_BOUNDARIES, examples=3, runs=8, tried=tried,
        )  # fmt: skip
        if difference is not None:
            return False, difference.message
        return True, (
            f"The reference's decision, return value and weights after every call, on "
            f"{_plans_text(tried)}: clips with gradients train (very quiet ones, muted "
            "estimates and models with unused variables first or last too), clips with no "
            "gradient are skipped without touching the weights or Adam's state, whatever "
            "their labels say."
        )

    return run_check(
        "Exercise 3.1 (skip a step that has no gradient)",
        function,
        check,
        hint="Look at what the list of gradients holds on a silent file, and decide "
        "from that list, not from the loss value, the labels or a norm: a quiet voiced file "
        "can have the very same loss, labels can say speech where no gradient exists, and "
        "tiny gradients have a norm of 0 in float32. Zeros are gradients too. Turning None "
        "into zeros is not skipping: Adam's momentum would still move the weights.",
    )


def _reference_distance(ref: np.ndarray, est: np.ndarray, mask: np.ndarray) -> float:
    """The reference answer to 4.1's value, in float64: NaN where a selected value is NaN, inf
    where a selected estimate or reference is exactly 0 (log 0 = -inf)."""
    if not mask.any():
        return 0.0
    selected_est, selected_ref = est[mask].astype(np.float64), ref[mask].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_frame = np.mean((np.log(selected_est) - np.log(selected_ref)) ** 2, axis=-1)
    return float(per_frame.mean())


def _reference_gradient(ref: np.ndarray, est: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """d distance / d estimate, in float64: 2 (log E - log R) / (E * bins * selected frames) on
    the selected frames, 0 elsewhere (not finite where E or R is 0)."""
    grad = np.zeros_like(est, dtype=np.float64)
    if mask.any():
        selected = est[mask].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_ratio = np.log(selected) - np.log(ref[mask].astype(np.float64))
            grad[mask] = 2 * log_ratio / (selected * est.shape[1] * mask.sum())
    return grad


def _value_and_grad(fn):
    """``run(reference, estimate, mask)``: the learner's value and its gradient with respect to
    the estimate. Wrapped in one ``tf.function`` per check, it is traced once per shape of
    input, as a training step is."""

    def run(reference, estimate, mask):
        with tf.GradientTape() as tape:
            tape.watch(estimate)
            value = fn(reference, estimate, mask)
        return value, tape.gradient(value, estimate)

    return run


def _run(runners, ref, est, mask, graph: bool):
    """The learner's value and gradient, eagerly or inside ``tf.function``."""
    return runners[graph](tf.constant(ref), tf.constant(est), tf.constant(mask))


# TensorFlow's float32 on a CPU reads a subnormal number (below TINY) as 0 (its log is wrong
# too): the domain starts at the smallest normal float32.
TINY = float(np.finfo(np.float32).tiny)  # the smallest normal float32, about 1.2e-38
LARGEST = float(np.finfo(np.float32).max)  # about 3.4e38


@dataclass(frozen=True)
class Magnitudes:
    """4.1's input: reference and estimate magnitudes ``(frames, bins)`` and the frame mask."""

    reference: tuple[tuple[float, ...], ...]
    estimate: tuple[tuple[float, ...], ...]
    mask: tuple[bool, ...]

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        bins = len(self.reference[0]) if self.reference else 1
        ref = np.array(self.reference, np.float32).reshape(len(self.mask), bins)
        est = np.array(self.estimate, np.float32).reshape(len(self.mask), bins)
        return ref, est, np.array(self.mask, bool).reshape(len(self.mask))

    def __repr__(self) -> str:
        def rows(values):
            return (
                "["
                + ", ".join("[" + ", ".join(f"{v:.3g}" for v in row) + "]" for row in values)
                + "]"
            )

        return (
            f"reference_mag={rows(self.reference)}, estimate_mag={rows(self.estimate)}, "
            f"mask={[int(m) for m in self.mask]}"
        )


def _as_case(ref: np.ndarray, est: np.ndarray, mask: np.ndarray) -> Magnitudes:
    return Magnitudes(
        tuple(map(tuple, ref.tolist())), tuple(map(tuple, est.tolist())), tuple(mask.tolist())
    )


def _distance_traps() -> list[Magnitudes]:
    """Every frame selected; silent frames (zero magnitudes) outside the mask; no frame
    selected (a file without speech); a quiet selected frame, far below any epsilon yet not
    silent (float32 is normal down to 1.2e-38); a NaN in the estimate on a selected frame (a
    model gone wrong: the loss must show it)."""
    ref = np.array([[0.5, 1.2], [0.8, 0.3], [1.5, 1.3], [0.7, 1.1]], np.float32)
    est = np.array([[0.9, 0.4], [1.1, 0.6], [0.6, 1.3], [0.2, 0.8]], np.float32)
    mask = np.array([True, False, True, False])
    silent_ref, silent_est = ref.copy(), est.copy()
    silent_ref[~mask] = 0.0
    silent_est[3] = 0.0
    quiet_ref, quiet_est = silent_ref.copy(), silent_est.copy()
    quiet_ref[2] *= 1e-38  # just above the smallest normal float32
    quiet_est[2] *= 1e-25  # its gradient stays finite in float32
    broken_est = silent_est.copy()
    broken_est[2, 1] = np.nan
    return [
        _as_case(ref, est, np.ones(4, dtype=bool)),
        _as_case(silent_ref, silent_est, mask),
        _as_case(silent_ref, silent_est, np.zeros(4, dtype=bool)),
        _as_case(quiet_ref, quiet_est, mask),
        _as_case(silent_ref, broken_est, mask),
    ]


def _distance_boundaries() -> list[Magnitudes]:
    """The edges of the domain, after the traps, with zeros outside the mask: the smallest
    normal float32 and the largest, as estimate and as reference, on selected frames; a
    selected frame whose estimate is exactly 0 (a ReLU mask silences a frame), one whose
    reference is exactly 0 (the distance is inf in both)."""
    mask = np.array([True, False, True])
    ref = np.array([[0.5, 1.2], [0.0, 0.0], [1.5, 1.3]], np.float32)
    est = np.array([[0.9, 0.4], [0.0, 0.0], [0.6, 1.3]], np.float32)
    silenced_est, silent_ref = est.copy(), ref.copy()
    silenced_est[2] = [0.0, 0.7]
    silent_ref[2] = [1.5, 0.0]
    extremes_ref, extremes_est = ref.copy(), est.copy()
    extremes_ref[2] = [TINY, LARGEST]
    extremes_est[2] = [LARGEST, TINY]
    small_ref, small_est = ref.copy(), est.copy()
    small_ref[2] = [TINY, 0.5]
    small_est[2] = [0.5, TINY]
    return [
        _as_case(extremes_ref, extremes_est, mask),
        _as_case(small_ref, small_est, mask),
        _as_case(ref, silenced_est, mask),
        _as_case(silent_ref, est, mask),
    ]


# Selected magnitudes: one bin in ten exactly 0 in the estimate or the reference (not both: the
# distance is then inf), the others positive, from the smallest normal float32 to the
# largest. Outside the mask: zeros (silence) or positive values up to 1e30 (so that a
# term kept connected by 0 x the sum of the estimate does not overflow to 0 x inf).
_POSITIVE = st.floats(TINY, LARGEST, width=32)
_OUTSIDE = st.one_of(st.just(0.0), st.floats(TINY, float(np.float32(1e30)), width=32))


@st.composite
def _selected_bin(draw) -> tuple[float, float]:
    """(reference, estimate) of one selected bin."""
    zero = draw(st.integers(0, 19))  # 18: the estimate is 0; 19: the reference
    reference = 0.0 if zero == 19 else draw(_POSITIVE)
    estimate = 0.0 if zero == 18 else draw(_POSITIVE)
    return reference, estimate


@st.composite
def _magnitudes(draw) -> Magnitudes:
    frames, bins = draw(st.integers(0, 6)), draw(st.integers(1, 4))
    mask = draw(st.lists(st.booleans(), min_size=frames, max_size=frames))
    reference, estimate = [], []
    for selected in mask:
        if selected:
            pairs = draw(st.lists(_selected_bin(), min_size=bins, max_size=bins))
            reference.append(tuple(r for r, _ in pairs))
            estimate.append(tuple(e for _, e in pairs))
        else:
            values = st.lists(_OUTSIDE, min_size=bins, max_size=bins)
            reference.append(tuple(draw(values)))
            estimate.append(tuple(draw(values)))
    return Magnitudes(tuple(reference), tuple(estimate), tuple(mask))


def _frames_of(flags: np.ndarray) -> list[int]:
    return sorted({int(i) for i in np.argwhere(flags)[:, 0]})


def _value_fault(ref, est, mask, value: float, expected: float, outside_harmless) -> str | None:
    """What is wrong with the learner's value, or None. ``outside_harmless()`` says whether
    the learner's value is finite once the frames outside the mask hold ones, not zeros."""
    if math.isnan(expected):
        if not math.isnan(value):
            return (
                f"the value is {value:.5g}; the reference gives nan. A NaN in the "
                "estimate on a selected frame is a model gone wrong, and the loss must show "
                "it: patching a NaN result to a number hides it."
            )
        return None
    if math.isinf(expected):
        if value == expected:
            return None
        zeros = _frames_of((est == 0) | (ref == 0)) if mask.any() else []
        zeros = [i for i in zeros if mask[i]]
        return (
            f"the value is {value:.5g}; the reference gives inf. On selected frame(s) {zeros} "
            "an estimate or a reference magnitude is exactly 0, and log 0 = -inf: the frame "
            "is infinitely far from its reference (a ReLU mask can silence a voiced frame "
            "entirely), and the loss must show it. Make only the frames outside the mask "
            "harmless, chosen by the mask, not by their value, and add no floor."
        )
    if math.isfinite(value) and abs(value - expected) <= 1e-4 * max(1.0, abs(expected)):
        return None
    got, want = two_values(value, expected, least=5)
    fault = ""
    selected = np.concatenate([ref[mask].ravel(), est[mask].ravel()])
    if not mask.any():
        fault = (
            " With no frame selected, the average is 0 / 0."
            if not math.isfinite(value)
            else " With no frame selected, the distance is 0.0."
        )
    elif math.isfinite(value) and selected.min() < 1e-20:
        fault = (
            " A floor or an epsilon inside the log changes the distance of quiet "
            "frames; the exercise asks for the exact distance."
        )
    elif (
        not math.isfinite(value)
        and np.any(np.concatenate([ref[~mask], est[~mask]]) == 0)
        and outside_harmless()
    ):
        fault = (
            " The value itself is not finite: the log of a zero magnitude outside the "
            "mask is -inf, and a 0/1 mask multiplies it (0 x inf = NaN)."
        )
    elif not math.isfinite(value):
        fault = (
            " Every selected magnitude is positive and finite, and so is the distance: a "
            "step of your computation leaves float32's range (a square or a ratio of "
            "magnitudes overflows; a log of each magnitude does not)."
        )
    return f"the value is {got}; the reference gives {want}.{fault}"


def _distance_fault(case: Magnitudes, value, grad, graph: bool, rerun) -> str | None:
    """What is wrong with the learner's value and gradient on one input, or None. The gradient
    is judged outside the mask (zero) and on selected values where the distance's own gradient
    is a finite float32; where the distance is inf or NaN, only outside the mask.
    ``rerun(case, graph)`` runs the learner's function again (value and gradient, or None if
    it raises), to tell causes apart."""
    ref, est, mask = case.arrays()
    where = f"On {case!r}" + (" inside tf.function" if graph else "")
    expected = _reference_distance(ref, est, mask)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return f"{where}: expected a scalar tensor; got {value!r}."

    def outside_harmless() -> bool:
        ones = np.where(mask[:, None], ref, 1.0), np.where(mask[:, None], est, 1.0)
        again = rerun(_as_case(*ones, mask), graph)
        return again is not None and math.isfinite(float(again[0]))

    fault = _value_fault(ref, est, mask, value, expected, outside_harmless)
    if fault is not None:
        return f"{where}: {fault}"
    if math.isnan(expected):
        return None
    if grad is None and not mask.any():
        return (
            f"{where}: the value is right, but its gradient with respect to estimate_mag is "
            "None: with no frame selected your function returns a constant that does not "
            "depend on the estimate (a tf.cond or an if that picks a constant branch). A loss "
            "built from it gives all-None gradients on a file without speech, notebook 03's "
            "error. Return a result still computed from estimate_mag."
        )
    if grad is None:
        return (
            f"{where}: the gradient with respect to estimate_mag is None; compute the "
            "distance from estimate_mag with TensorFlow ops (no NumPy, no .numpy())."
        )
    grad = tf.convert_to_tensor(grad).numpy()
    expected_grad = _reference_gradient(ref, est, mask)
    outside = np.broadcast_to(~mask[:, None], grad.shape)
    judged = outside | (np.abs(expected_grad) <= LARGEST / 16)  # not judged: beyond float32
    if math.isinf(expected):
        judged = outside
    bad = judged & ~np.isfinite(grad)
    if bad.any():
        causes = []
        if np.any(bad & outside):
            if np.any(np.concatenate([est[~mask].ravel(), ref[~mask].ravel()]) == 0):
                causes.append(
                    "the log of a zero magnitude outside the mask has an infinite slope, and "
                    "tf.where passes 0 x inf = NaN back to it"
                )
            if not mask.any():
                causes.append("with nothing selected, an average divides 0 by 0")
        cause = " " + "; or ".join(causes).capitalize() + "." if causes else ""
        inside = bad & ~outside
        if inside.any():
            largest = float(np.max(np.abs(expected_grad[inside])))
            eager = rerun(case, False) if graph else None
            eager_finite = eager is not None and np.all(
                np.isfinite(tf.convert_to_tensor(eager[1]).numpy()[inside])
            )
            cause += (
                f" On the selected frame(s) {_frames_of(inside)} every magnitude is positive "
                f"and the distance's own gradient is finite (up to {largest:.2g}): a step of "
                "your computation is not finite there"
                + (
                    ", though eagerly it is: inside tf.function TensorFlow's graph optimizer "
                    "rearranges arithmetic, and the gradient of a ratio such as E / R can "
                    "overflow for quiet magnitudes"
                    if eager_finite
                    else " (a square or a ratio of magnitudes overflows)"
                )
                + ". Take the log of each magnitude, then subtract."
            )
        return f"{where}: the gradient is NaN/inf on frames {_frames_of(bad)}.{cause}"
    if np.any(grad[outside] != 0):
        return f"{where}: frames outside the mask get a non-zero gradient."
    compared = judged & ~outside
    if not compared.any():
        return None
    scale = float(np.max(np.abs(expected_grad[compared])))
    if not np.allclose(
        grad[compared], expected_grad[compared], rtol=1e-3, atol=max(1e-6 * scale, 1e-30)
    ):
        if not np.any(grad[compared]):
            return (
                f"{where}: the value is right, but its gradient on the selected frames is "
                "zero, where the distance depends on the estimate: the model could not learn "
                "from it. A stop_gradient, or a term that only reconnects the graph (0 x "
                "something), gives the look of a gradient without one."
            )
        return (
            f"{where}: the value is right, but its gradient on the selected frames differs "
            "from the distance's own: part of the computation does not reach the estimate "
            "(a stop_gradient?), or a floor or clip changes it."
        )
    return None


def _learner_fault(runners, case: Magnitudes, graph: bool) -> str | None:
    """What is wrong with the learner's answer on ``case`` (``runners``: ``_value_and_grad``
    of it, eager and in a ``tf.function``, by ``graph``), or None."""
    ref, est, mask = case.arrays()
    try:
        value, grad = _run(runners, ref, est, mask, graph=graph)
    except Exception as error:
        where = f"On {case!r}" + (" inside tf.function" if graph else "")
        return f"{where}, your code raised {error_text(error)}." + (
            f" {GRAPH_ONLY}" if graph else ""
        )

    def rerun(again: Magnitudes, in_graph: bool):
        try:
            return _run(runners, *again.arrays(), graph=in_graph)
        except Exception:
            return None

    return _distance_fault(case, value, grad, graph, rerun)


DISTANCE_EXAMPLES = {"eager": 25, "graph": 6}  # generated inputs per mode, after the fixed ones


def check_masked_log_distance(function) -> CheckResult:
    """``function(reference_mag, estimate_mag, mask)`` must return the mean over selected frames
    of the mean over bins of ``(log E - log R) ** 2``, exactly, with its true gradient
    (compared with the distance's own, numerically: a zero or detached gradient fails), zero
    outside the mask, and 0.0, still connected to the estimate (a zero gradient, not None),
    when no frame is selected; inf when a selected estimate or reference is exactly 0; NaN
    when a selected estimate is NaN.

    The domain: magnitudes from the smallest normal float32 to the largest, and exact zeros,
    on selected frames (TensorFlow reads a subnormal float32 as 0); zeros or positive values
    outside the mask. The gradient is judged where the distance's own is a finite float32
    (for the smallest magnitudes it overflows float32) and the distance finite. Tried
    eagerly and inside ``tf.function``: the traps above, then the boundaries (the smallest
    and largest float32; a selected estimate or reference exactly 0), then generated
    magnitudes (0 to 6 frames, 1 to 4 bins; ``DISTANCE_EXAMPLES`` per mode)."""

    def check(fn):
        # the traps and the boundaries in both modes first, then generated inputs in each
        runners = {False: _value_and_grad(fn), True: tf.function(_value_and_grad(fn))}
        tried: dict[bool, list[Magnitudes]] = {False: [], True: []}

        def in_mode(graph: bool):
            def differs(case: Magnitudes) -> str | None:
                tried[graph].append(case)
                return _learner_fault(runners, case, graph)

            return differs

        traps, boundaries = _distance_traps(), _distance_boundaries()
        fixed = traps + boundaries
        difference = first_difference_of(
            [
                Search(_magnitudes(), in_mode(False), traps, boundaries, examples=0),
                Search(_magnitudes(), in_mode(True), traps, boundaries, examples=0),
                Search(_magnitudes(), in_mode(False), examples=DISTANCE_EXAMPLES["eager"], runs=80),
                Search(_magnitudes(), in_mode(True), examples=DISTANCE_EXAMPLES["graph"], runs=80),
            ]
        )
        if difference is not None:
            return False, difference.message
        generated = tried[False][len(fixed) :] + tried[True][len(fixed) :]
        frames = [len(case.mask) for case in generated]
        bins = [len(case.reference[0]) for case in generated if case.reference]
        return True, (
            f"The reference's value and gradient on {len(fixed)} fixed inputs in both modes, "
            f"then {len(tried[False]) - len(fixed)} generated eagerly and "
            f"{len(tried[True]) - len(fixed)} inside tf.function ({min(frames)} to "
            f"{max(frames)} frames, {min(bins)} to {max(bins)} bins), magnitudes from the "
            "smallest normal float32 to the largest: finite with zero magnitudes outside the "
            "mask, exact on quiet and loud frames, inf where a selected magnitude is exactly "
            "0, 0.0 (still connected) for a file without selected frames, and NaN where the "
            "estimate is NaN."
        )

    return run_check(
        "Exercise 4.1 (a masked log distance without NaN)",
        function,
        check,
        hint="Two traps, both outside the mask. tf.where picks values, but the "
        "gradient still flows back through both of its inputs, and the slope of "
        "a log at zero is infinite. And a file without speech selects no frame "
        "at all: what is an average over nothing, and is your answer then still "
        "connected to the estimate? A floor inside the log is not the way out: "
        "it changes the value of quiet frames; nor is patching a NaN result, which would "
        "also hide a model gone wrong, nor replacing zeros by their value: a selected frame "
        "at exactly 0 is infinitely far.",
    )
