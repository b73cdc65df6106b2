"""The gradient lab, driven without a browser: set the widgets, read the result; and the lab
06 stores, whose widget state must say what its text fallback says."""

import base64
import html
import itertools
import json
import re
from pathlib import Path

import ipywidgets as widgets
import keras
import matplotlib.pyplot as plt
import numpy as np
import pytest
import tensorflow as tf

from helpers.audio import Clip, ClipExcerpt, LabelError, excerpt, load_clip
from helpers.lab.computation import ADAM_LEARNING_RATE, ADAM_WARMUP_STEPS, lab_model
from helpers.lab.settings import (
    CONTROL_NAMES,
    ELSE_SCALES,
    LAB_CLIPS,
    SILENCE_WEIGHTS,
    lab_examples,
)
from helpers.lab.view import (
    FALLBACK_NOTE,
    FALLBACK_WIDTH,
    LAB_FIGURE_TITLE,
    LAB_NO_HINT,
    LAB_NORM_RANGE,
    GradientLab,
    lab_figure,
    lab_table,
)
from helpers.models import (
    TrainingState,
    enhance,
    make_conv_denoiser,
    mean_abs_change,
    restore_weights,
    snapshot,
)
from helpers.voicing import cond_loop_voicing_loss, masked_voicing_loss

ROOT = Path(__file__).resolve().parents[1]
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def model():
    return lab_model(seed=0)


@pytest.fixture(scope="module")
def lab(model):
    return GradientLab(model)


@pytest.fixture(autouse=True)
def no_plots(request, monkeypatch):
    """Drawing the plot takes longer than an eager gradient; one test checks it is drawn,
    the others check what the controls compute, with a stand-in for the picture."""
    if request.node.name != "test_setting_a_widget_recomputes_and_redraws":
        monkeypatch.setattr(
            GradientLab, "_picture", lambda self, report: (report._repr_html_(), b"not drawn")
        )


def set_controls(lab, **values):
    for name, value in values.items():
        lab.controls[name].value = value
    return lab.result


# ------------------------------------------------------------------- controls and the page


def test_lab_starts_on_the_questions_failure(lab):
    values = {name: control.value for name, control in lab.controls.items()}
    assert values == {
        "clip": "silent",
        "loss": "per-frame (question)",
        "else_scale": "off",
        "silence_weight": "1",
        "mode": "eager",
        "policy": "keep",
    }
    assert lab.result.report.all("none")
    assert lab.result.adam.outcome == "raises" and "No gradients" in lab.result.adam.message
    assert "5 none" in lab.summary.value


def test_every_control_has_a_name_a_description_and_a_css_class(lab):
    assert tuple(lab.controls) == CONTROL_NAMES
    for name, control in lab.controls.items():
        assert control.description == name
        assert f"gradient-lab-{name}" in control._dom_classes
    for element, name in ((lab.summary, "summary"), (lab.view, "table"), (lab.adam_panel, "adam")):
        assert f"gradient-lab-{name}" in element._dom_classes
    shown = {w.model_id for w in _descendants(lab.widget)}
    assert {
        c.model_id for c in (*lab.controls.values(), lab.summary, lab.view, lab.adam_panel)
    } <= shown


def _descendants(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _descendants(child)


def test_setting_a_widget_recomputes_and_redraws(lab, monkeypatch):
    # ...without pyplot: a pyplot figure drawn in a widget callback is the inline backend's
    # to show under whichever cell runs next, if it is still open then
    def no_pyplot(*_args, **_kwargs):
        raise AssertionError("the lab drew a pyplot figure")

    monkeypatch.setattr(plt, "figure", no_pyplot)
    result = set_controls(lab, clip="silent", loss="masked", mode="eager", policy="keep")
    assert lab.error is None
    assert result.setting.loss == "masked" and result.report.all("ok")
    outputs = lab.view.outputs
    assert len(outputs) == 2  # the table and the plot, once each (the old view was cleared)
    assert "text/html" in outputs[0]["data"] and "image/png" in outputs[1]["data"]
    rows = re.findall(
        r"<tr><td style='[^']*'><code>([^<]+)</code>", outputs[0]["data"]["text/html"]
    )
    assert rows == [v.path for v in lab.model.trainable_variables]
    assert shown_text(lab.summary.value) == result.describe()
    assert "<b>" in lab.summary.value and "line-height:1.4" in lab.adam_panel.value
    assert shown_text(lab.adam_panel.value) == result.adam.describe()
    png = outputs[1]["data"]["image/png"]
    none = set_controls(lab, loss="per-frame (question)").report  # another layout: no bars
    assert lab.error is None and none.all("none")
    assert lab.view.outputs[1]["data"]["image/png"] != png
    assert png_size(lab.view.outputs[1]["data"]["image/png"]) == png_size(png)


def shown_text(markup: str) -> str:
    """The text an HTML widget shows."""
    return html.unescape(re.sub("<[^>]+>", "", markup))


def png_size(data: str) -> tuple[int, int]:
    """Width and height of a base64 PNG, from its header."""
    header = base64.b64decode(data[:44])
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


def test_the_summary_line_is_a_function_of_the_setting_alone(model, lab):
    """A test in the browser computes the expected line in Python: another lab on the same
    model, asked for the same setting, gives the line the lab whose controls moved shows."""
    setting = {
        "clip": "voiced",
        "loss": "per-frame (question)",
        "else_scale": "1e-10",
        "mode": "eager",
        "policy": "zeros",
    }
    before = snapshot(model)
    shown = set_controls(lab, **setting).describe()
    assert shown.startswith(
        "clip=voiced, loss=per-frame (question), else_scale=1e-10, mode=eager, policy=zeros: loss "
    )
    assert GradientLab(model).result_for(**setting).describe() == shown
    assert lab.result_for(**setting) is lab.result
    assert mean_abs_change(before, model) == 0.0  # the Adam panel puts the weights back


# ----------------------------------------------------------------------- the new controls


def test_the_hack_scale_slider_is_log_spaced_with_off(lab):
    slider = lab.controls["else_scale"]
    assert isinstance(slider, widgets.SelectionSlider)
    assert list(slider.options) == list(ELSE_SCALES) and slider.options[0] == "off"
    scales = [ELSE_SCALES[o] for o in slider.options[1:]]
    assert scales[0] == 1e-12 and scales[-1] == 1.0 and 1e-10 in scales
    assert np.allclose(np.diff(np.log10(scales)), 2.0)


def test_the_hack_scale_turns_none_into_gradients_on_silence(lab):
    assert set_controls(
        lab,
        clip="silent",
        loss="per-frame (question)",
        mode="eager",
        policy="keep",
        else_scale="off",
    ).report.all("none")
    tiny = set_controls(lab, else_scale="1e-10")
    assert tiny.report.all("ok") and "else_scale=1e-10" in tiny.describe()
    large = set_controls(lab, else_scale="1")
    assert large.report.largest_norm() > 1e6 * tiny.report.largest_norm()
    assert not lab.controls["else_scale"].disabled and lab.controls["silence_weight"].disabled


def test_the_silence_weight_slider_sets_the_masked_loss_term(lab):
    slider = lab.controls["silence_weight"]
    assert isinstance(slider, widgets.SelectionSlider)
    assert list(slider.options) == list(SILENCE_WEIGHTS)
    off = set_controls(
        lab, clip="silent", loss="masked", mode="eager", policy="keep", silence_weight="0"
    )
    assert off.report.all("zero")  # no term on silent frames: zeros, even eagerly
    one, ten = set_controls(lab, silence_weight="1"), set_controls(lab, silence_weight="10")
    assert one.report.all("ok") and ten.loss > one.loss > off.loss
    assert "silence_weight=10" in ten.describe() and "else_scale" not in ten.describe()
    assert lab.controls["else_scale"].disabled and not slider.disabled


def test_the_policy_none_zeros_skip(lab):
    base = {"clip": "silent", "loss": "per-frame (question)", "else_scale": "off", "mode": "eager"}
    none = set_controls(lab, **base, policy="keep")
    zeros = set_controls(lab, policy="zeros")
    skip = set_controls(lab, policy="skip")
    assert none.report.all("none") and none.adam.outcome == "raises"
    assert zeros.report.all("zero") and zeros.adam.outcome == "step"
    assert skip.report.all("none") and skip.adam.outcome == "skipped"
    assert skip.adam.fraction == 0.0 and "0% of a voiced step" in skip.adam.describe()
    voiced = set_controls(lab, clip="voiced")  # skip only skips when nothing is non-zero
    assert voiced.adam.outcome == "step" and voiced.adam.fraction > 0


def test_the_adam_panel_is_notebook_04s_experiment(model, lab):
    """Adam's step after voiced steps, its size as a fraction of a voiced step and its
    direction as the cosine with the last voiced step, computed again here by hand: Adam
    takes the steps on the voiced clip with the masked loss, then, from the same state, one
    step on zeros, on the 1e-10 hack's gradients, on the silence term's and on the voiced
    clip. Zeros and the hack are momentum alone; the silence term turns the step."""
    shown = {
        "zeros": lab.result_for("silent", "per-frame (question)", policy="zeros").adam,
        "hack": lab.result_for("silent", "per-frame (question)", else_scale="1e-10").adam,
        "silence term": lab.result_for("silent", "masked", silence_weight="1").adam,
    }
    examples = lab_examples({c: LAB_CLIPS[c] for c in ("voiced", "silent")})
    variables = model.trainable_variables
    original = snapshot(model)

    def grads(clip, loss_fn, **kwargs):
        example = examples[clip]
        with tf.GradientTape() as tape:
            loss = loss_fn(example.clean, enhance(model, example.audio), example.labels, **kwargs)
        return tape.gradient(loss, variables)

    def flat(weights):
        return np.concatenate([np.ravel(w) for w in weights])

    setting_grads = {
        "zeros": [tf.zeros_like(v) for v in variables],
        "hack": grads("silent", cond_loop_voicing_loss, else_scale=1e-10),
        "silence term": grads("silent", masked_voicing_loss, silence_weight=1.0),
    }
    optimizer = keras.optimizers.Adam(learning_rate=ADAM_LEARNING_RATE)
    updates = {}
    try:
        for _ in range(ADAM_WARMUP_STEPS):
            last = TrainingState(model, optimizer).step(grads("voiced", masked_voicing_loss))
        state = TrainingState(model, optimizer)
        for name, step_grads in {
            **setting_grads,
            "voiced": grads("voiced", masked_voicing_loss),
        }.items():
            updates[name] = state.step(step_grads)
        state.restore()
    finally:
        restore_weights(model, original)
    voiced = np.abs(updates["voiced"]).mean()
    cosines = {}
    for name, adam in shown.items():
        update = updates[name]
        cosines[name] = update @ last / (np.linalg.norm(update) * np.linalg.norm(last))
        assert adam.outcome == "step", name
        assert adam.fraction == pytest.approx(np.abs(update).mean() / voiced, rel=1e-3), name
        assert adam.cosine == pytest.approx(cosines[name], abs=1e-4), name
    assert cosines["zeros"] > 0.999 and cosines["hack"] > 0.999  # momentum, straight on
    assert cosines["silence term"] < 0.95  # measured 0.90: the new gradient turns the step
    zeros = shown["zeros"]
    assert 0.5 < zeros.fraction < 1.0  # momentum: most of a step, on a clip that asked none
    assert f"{zeros.fraction:.0%} as far as a voiced step" in zeros.describe()
    assert "at cosine 1 to the last voiced step" in zeros.describe()


# --------------------------------------------------------------- the learner's own pieces


def mse(reference, estimate, labels):
    return tf.reduce_mean(tf.square(estimate - reference))


def weighted_mse(reference, estimate, labels, silence_weight=1.0):  # takes one knob
    return (1.0 + silence_weight) * mse(reference, estimate, labels)


@pytest.fixture(scope="module")
def own_clips():
    real = load_clip("arctic_a0009")
    pause_audio, pause_labels = excerpt(real.clean, real.labels, 0, 9)
    word = excerpt(real.clean, real.labels, 24, 40)
    return {
        "pause": Clip("pause", pause_audio + 0.01, pause_audio, pause_labels),
        "word": word,
        "vowel": ClipExcerpt("vowel_a", 10, 26),
    }


def test_the_learners_model_losses_and_clips(own_clips):
    model = make_conv_denoiser(seed=0)
    before = snapshot(model)
    lab = GradientLab(
        model=model,
        losses={"mse": mse, "weighted": weighted_mse, "question": cond_loop_voicing_loss},
        clips=own_clips,
    )
    assert list(lab.controls["clip"].options) == ["pause", "word", "vowel"]
    assert list(lab.controls["loss"].options) == ["mse", "weighted", "question"]
    assert lab.result.setting.values() == {
        "clip": "pause",
        "loss": "mse",
        "mode": "eager",
        "policy": "keep",
    }
    assert lab.result.report.all("ok") and len(lab.result.report) == 5
    assert lab.controls["else_scale"].disabled and lab.controls["silence_weight"].disabled
    weighted = set_controls(lab, loss="weighted", silence_weight="10")
    assert not lab.controls["silence_weight"].disabled
    assert weighted.loss == pytest.approx(11 * lab.result_for("pause", "mse").loss, rel=1e-5)
    assert set_controls(lab, loss="question").report.all("none")  # a silent pause
    assert "on vowel (mse)" in lab.result.adam.describe()  # the most voiced clip, first loss
    assert mean_abs_change(before, model) == 0.0


def test_a_loss_that_fails_on_one_clip_shows_its_error_in_the_lab(model, own_clips):
    def only_short(reference, estimate, labels):
        if labels.num_frames > 9:
            raise ValueError("this loss takes 9 frames at most")
        return mse(reference, estimate, labels)

    lab = GradientLab(
        make_conv_denoiser(seed=0), losses={"mse": mse, "short": only_short}, clips=own_clips
    )
    lab.controls["loss"].value = "short"  # on the pause: 9 frames, fine
    assert lab.error is None and lab.result.setting.loss == "short"
    lab.controls["clip"].value = "word"
    assert lab.error == (
        "clip=word, loss=short, mode=eager, policy=keep: ValueError: this "
        "loss takes 9 frames at most"
    )
    assert html.escape(lab.error) in lab.summary.value and lab.view.outputs == ()
    lab.controls["loss"].value = "mse"
    assert lab.error is None and "clip=word, loss=mse" in lab.summary.value


# ----------------------------------------------------------------------------- caching


def test_a_change_that_needs_no_trace_does_not_retrace():
    # notebook 03's small waveform denoiser traces faster than the GRU's loop
    lab = GradientLab(
        make_conv_denoiser(seed=0),
        clips={c: LAB_CLIPS[c] for c in ("voiced", "silent")},
        clip="voiced",
        loss="masked",
        mode="tf.function",
    )
    assert lab.tracing_count() == 1
    first = lab.result
    for name, value, traces in (
        ("policy", "zeros", 0),
        ("policy", "skip", 0),
        ("mode", "eager", 0),
        ("mode", "tf.function", 0),
        ("else_scale", "1e-10", 0),  # masked: not its knob
        ("clip", "silent", 1),
        ("clip", "voiced", 0),
        ("policy", "keep", 0),
        ("silence_weight", "0", 1),  # a Python number in the masked loss: a new trace
        ("silence_weight", "1", 0),
        ("loss", "per-frame (question)", 1),
        ("else_scale", "1e-4", 0),
        ("else_scale", "1", 0),  # a tensor: the same trace
        ("else_scale", "off", 1),
        ("else_scale", "1e-10", 0),
        ("loss", "masked", 0),
    ):
        traced = lab.tracing_count()
        lab.controls[name].value = value
        assert lab.tracing_count() == traced + traces, (name, value)
    assert lab.result is first  # the same setting again: taken from the cache


# ----------------------------------------------------- one layout for every setting


def scaled_mse(reference, estimate, labels, else_scale=None):  # norms over 12 decades
    return (1.0 if else_scale is None else else_scale) * mse(reference, estimate, labels)


def root_mse(reference, estimate, labels, silence_weight=1.0):  # weight 0: NaN gradients
    return tf.sqrt(silence_weight * mse(reference, estimate, labels))


def ignores_the_model(reference, estimate, labels):  # every gradient None
    return tf.reduce_mean(tf.square(reference))


def every_setting(lab) -> list:
    """Every setting the lab's controls offer (a knob the loss does not take counts once)."""
    options = [
        lab.controls[name].options
        for name in ("clip", "loss", "mode", "policy", "else_scale", "silence_weight")
    ]
    return sorted({lab.lab.setting(*values) for values in itertools.product(*options)}, key=repr)


def test_every_setting_has_one_figure_size_one_x_range_and_the_same_table_columns():
    """The lab's view does not jump: for every setting of a lab (both modes, every policy and
    knob value; losses whose norms span 12 decades and give all four statuses), the plot has
    one size, one x range, one title and one legend, and the table the same four columns
    with its hints in one line under it. (The course's own lab, whose tf.function traces
    take minutes, was measured the same way once: 336 settings, 92 distinct reports, one
    size and range; the next test checks its norms fit the range.)"""
    clips = {"vowel": ClipExcerpt("vowel_a", 10, 14), "pause": ClipExcerpt("silence", 4, 8)}
    lab = GradientLab(
        make_conv_denoiser(seed=0),
        clips=clips,
        losses={"scaled": scaled_mse, "root": root_mse, "ignores": ignores_the_model},
    )
    settings, layouts, statuses, norms = every_setting(lab), set(), set(), []
    assert len(settings) == 2 * (8 + 6 + 1) * 2 * 3
    drawn = {}  # the lab draws one picture per distinct report, too
    for setting in settings:
        report = lab.lab.result(setting).report
        statuses |= set(report.statuses)
        norms += [r.norm for r in report if r.status == "ok"]
        key = tuple((r.status, r.norm) for r in report)
        if key not in drawn:
            figure = lab_figure(report)
            ax = figure.axes[0]
            drawn[key] = (
                tuple(figure.get_size_inches()),
                ax.get_xlim(),
                ax.get_title(),
                tuple(t.get_text() for t in ax.get_legend().get_texts()),
            )
        layouts.add(drawn[key])
        table = lab_table(report)
        assert re.findall(r"<th[^>]*>([^<]*)</th>", table) == [
            "variable",
            "shape",
            "status",
            "gradient norm",
        ], setting
        below = re.findall(r"<p[^>]*>([^<]*)</p>", table.split("</table>")[1])
        assert len(below) == 1 and (
            below[0].startswith("Hint for every row: ") or below[0] == LAB_NO_HINT
        ), (setting, below)
    assert statuses == {"ok", "zero", "nonfinite", "none"}
    assert max(norms) / min(norms) > 1e11
    assert layouts == {
        (
            (8.0, 0.45 * 5 + 1.4),
            LAB_NORM_RANGE,
            LAB_FIGURE_TITLE,
            ("norm (log scale)", "zero", "NaN / inf", "None"),
        )
    }


def test_the_course_labs_norms_lie_inside_the_plots_range(lab):
    """Its smallest norms: silence with the hack's smallest scale (the scale multiplies every
    gradient); its largest: the voiced clip, for either loss (measured over every setting)."""
    smallest = lab.result_for("silent", "per-frame (question)", else_scale="1e-12").report
    for clip, loss in (
        ("voiced", "masked"),
        ("voiced", "per-frame (question)"),
        ("unvoiced", "masked"),
        ("silent", "masked"),
    ):
        weight = "10" if loss == "masked" else "1"
        largest = lab.result_for(clip, loss, silence_weight=weight).report
        assert largest.largest_norm() < LAB_NORM_RANGE[1] / 10, (clip, loss)
    assert min(r.norm for r in smallest) > LAB_NORM_RANGE[0] * 5


def test_the_lab_greys_out_a_knob_its_loss_does_not_take_and_keeps_labels_inline(lab):
    set_controls(lab, loss="masked")
    assert "lab-control-off" in lab.controls["else_scale"]._dom_classes
    assert "lab-control-off" not in lab.controls["silence_weight"]._dom_classes
    set_controls(lab, loss="per-frame (question)")
    assert "lab-control-off" in lab.controls["silence_weight"]._dom_classes
    widths = {c.style.description_width for c in lab.controls.values()}
    assert len(widths) == 1  # every label inline, one width


def test_the_text_fallback_says_to_run_the_cell_and_never_breaks_a_word(lab):
    result = set_controls(
        lab,
        clip="silent",
        loss="per-frame (question)",
        policy="keep",
        mode="eager",
        else_scale="off",
    )
    text = lab._repr_mimebundle_()["text/plain"]
    lines = text.split("\n")
    assert (
        lines[0]
        == FALLBACK_NOTE
        == ("Run this cell to get the interactive gradient lab. When it last ran, it showed:")
    )
    assert all(len(line) <= FALLBACK_WIDTH for line in lines)
    paragraphs = [" ".join(p.split("\n")) for p in "\n".join(lines[1:]).split("\n\n")]
    assert paragraphs == [result.describe(), result.adam.describe()]
    assert text.count(result.report.summary()) == 1


# --------------------------------------------------------------------------- bad input


def two_args(reference, estimate):
    return tf.constant(0.0)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"losses": {"mse": "mse"}}, TypeError, "loss 'mse' must be callable"),
        ({"losses": {"mse": two_args}}, TypeError, "must take three arguments"),
        ({"losses": {}}, TypeError, "losses must be a non-empty dict"),
        ({"losses": [mse]}, TypeError, "losses must be a non-empty dict"),
        ({"losses": {"": mse}}, TypeError, "non-empty string"),
        ({"clips": {"x": (np.zeros((2, 2400), np.float32), None)}}, TypeError, "FrameLabels"),
        ({"clips": {"x": "vowel_a"}}, TypeError, "clip 'x' must be"),
        ({"clips": {}}, TypeError, "clips must be a non-empty dict"),
        ({"model": "my model"}, TypeError, "expected a Keras model"),
        ({"clip": "loud"}, ValueError, "clip must be one of"),
        ({"mode": "graph"}, ValueError, "mode must be one of"),
        ({"policy": "ignore"}, ValueError, "policy must be one of"),
        ({"else_scale": "1e-3"}, ValueError, "else_scale must be one of"),
        ({"silence_weight": 2}, ValueError, "silence_weight must be one of"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error(model, kwargs, error, message):
    kwargs = {"model": model, **kwargs}
    with pytest.raises(error, match=message):
        GradientLab(**kwargs)


@pytest.fixture(scope="module")
def silent_labels():
    return lab_examples({"silent": LAB_CLIPS["silent"]})["silent"].labels


def test_a_clip_that_is_not_1d_float_audio_is_refused(model, silent_labels):
    samples = (silent_labels.num_frames - 1) * silent_labels.hop_length
    # the labels are fine: the same labels with 1-D float audio of the right length are taken
    assert (
        lab_examples({"mine": (np.zeros(samples, np.float32), silent_labels)})[
            "mine"
        ].labels.num_frames
        == 16
    )
    for audio, match in (
        (np.zeros((samples, 2), np.float32), "must have shape"),
        (np.zeros(samples, np.int16), "floating point"),
        (np.zeros(samples + 800, np.float32), "labels have"),
    ):
        with pytest.raises((ValueError, LabelError), match=match):
            GradientLab(model, clips={"mine": (audio, silent_labels)})


def test_a_lab_without_a_voiced_gradient_for_adam_says_so(model):
    with pytest.raises(ValueError, match="warms Adam up with loss 'question' on clip 'silent'"):
        GradientLab(
            model,
            losses={"question": cond_loop_voicing_loss},
            clips={"silent": LAB_CLIPS["silent"]},
        )


def test_a_loss_that_does_not_return_a_scalar_is_refused(model):
    def per_sample(reference, estimate, labels):
        return tf.square(estimate - reference)

    with pytest.raises(ValueError, match="must return a float scalar"):
        GradientLab(model, losses={"per-sample": per_sample})


@pytest.mark.parametrize(
    "args, message",
    [
        (("loud", "masked", "eager"), "clip must be one of"),
        (("silent", "mse", "eager"), "loss must be one of"),
        (("silent", "masked", "graph"), "mode must be one of"),
    ],
)
def test_bad_choices_are_refused(lab, args, message):
    with pytest.raises(ValueError, match=message):
        lab.result_for(*args)


@pytest.mark.parametrize("clip", [c for c in LAB_CLIPS if c != "silent"])
def test_all_losses_give_gradients_on_clips_with_speech(lab, clip):
    for loss_name in ("per-frame (question)", "masked"):
        assert lab.result_for(clip, loss_name, "eager").report.all("ok")


# ------------------------------------------------- stored widget state and its text fallback


def stored_lab_disagreements(notebook: dict) -> list[str]:
    """For every lab a notebook displays, where its stored widget state (what JupyterLab
    shows) and its stored text fallback (what a static view and nbval show) disagree: the
    summary line, the Adam panel, and each control named in the summary."""
    state = notebook["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    problems, labs = [], 0
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            text = "".join(data.get("text/plain", ""))
            if WIDGET_VIEW not in data or not text.startswith(FALLBACK_NOTE):
                continue
            labs += 1
            root = data[WIDGET_VIEW]["model_id"]
            if root not in state:
                problems.append(f"lab {root}: no stored widget state")
                continue
            by_class = {}
            for model_id in _stored_descendants(state, root):
                for css in state[model_id]["state"].get("_dom_classes", ()):
                    by_class[css.removeprefix("gradient-lab-")] = state[model_id]["state"]
            summary = shown_text(by_class["summary"]["value"])
            adam = shown_text(by_class["adam"]["value"])
            said = [
                " ".join(p.split("\n"))
                for p in text.removeprefix(FALLBACK_NOTE + "\n").split("\n\n")
            ]
            if said != [summary, adam]:
                problems.append(f"lab {root}: text {text!r} but widgets {summary!r} / {adam!r}")
            setting = said[0].split(": loss ")[0]
            shown = dict(re.findall(rf"({'|'.join(CONTROL_NAMES)})=(.*?)(?:, (?=\w+=)|$)", setting))
            for name in CONTROL_NAMES:
                control = by_class[name]
                value = control["_options_labels"][control["index"]]
                expected = None if control.get("disabled") else value
                if shown.get(name) != expected:
                    problems.append(
                        f"lab {root}: {name} is {value!r} in the widget state, "
                        f"{shown.get(name)!r} in the text"
                    )
    return problems if labs else ["no lab displayed"]


def _stored_descendants(state: dict, model_id: str):
    yield model_id
    for child in state[model_id]["state"].get("children", ()):
        yield from _stored_descendants(state, child.removeprefix("IPY_MODEL_"))


def test_06s_stored_widget_state_agrees_with_its_text_fallback():
    notebook = json.loads((ROOT / "notebooks" / "06_capstone.ipynb").read_text())
    assert stored_lab_disagreements(notebook) == []


def test_the_agreement_check_finds_a_lab_changed_after_display(lab):
    set_controls(lab, clip="voiced", loss="masked", policy="keep")

    def stored() -> dict:  # what a run stores: the text at display, the state at the end
        state = widgets.Widget.get_manager_state(
            drop_defaults=False, widgets=list(_descendants(lab.widget))
        )
        return {
            "metadata": {"widgets": {WIDGET_STATE: json.loads(json.dumps(state))}},
            "cells": [{"outputs": [{"data": shown}]}],
        }

    shown = lab._repr_mimebundle_()
    assert stored_lab_disagreements(stored()) == []
    lab.controls["policy"].value = "zeros"  # a later cell moves a control
    problems = stored_lab_disagreements(stored())
    assert any("policy is 'zeros' in the widget state, 'keep' in the text" in p for p in problems)
