"""The gradient lab, driven without a browser: set the widgets, read the result."""

import pytest

from helpers.widgets import LAB_CLIPS, GradientLab, lab_model, lab_result


@pytest.fixture(scope="module")
def model():
    return lab_model(seed=0)


@pytest.fixture(scope="module")
def lab(model):
    return GradientLab(model)


def test_lab_starts_on_the_seed_failure(lab):
    values = {name: control.value for name, control in lab.controls.items()}
    assert values == {"clip": "silent", "loss": "per-frame (seed)", "else_scale": "off",
                      "silence_weight": "1", "mode": "eager", "policy": "None"}
    assert lab.result.report.all("none")
    assert "5 none" in lab.summary.value


def test_setting_a_widget_recomputes_and_redraws(lab):
    lab.controls["clip"].value = "silent"
    lab.controls["loss"].value = "per-frame (seed)"
    lab.controls["mode"].value = "tf.function"
    assert lab.result.mode == "tf.function" and lab.result.report.all("zero")
    lab.controls["loss"].value = "masked"
    assert lab.result.loss_name == "masked" and lab.result.report.all("ok")
    outputs = lab.view.outputs
    assert len(outputs) == 2  # the table and the plot, once each (the old view was cleared)
    assert "text/html" in outputs[0]["data"] and "image/png" in outputs[1]["data"]
    assert "masked" in lab.summary.value


def test_the_hack_reconnects_every_gradient_on_silence(model):
    result = lab_result("silent", "per-frame (seed)", "eager", model, else_scale="1e-10")
    assert result.report.all("ok")


@pytest.mark.parametrize("clip", [c for c in LAB_CLIPS if c != "silent"])
def test_all_losses_give_gradients_on_clips_with_speech(model, clip):
    for loss_name in ("per-frame (seed)", "masked"):
        assert lab_result(clip, loss_name, "eager", model).report.all("ok")


def test_plain_text_view_is_the_summary_and_the_adam_panel(lab):
    bundle = lab._repr_mimebundle_()
    assert bundle["text/plain"].startswith("Gradient lab, showing clip=")
    assert bundle["text/plain"] == lab.text()
    assert "application/vnd.jupyter.widget-view+json" in bundle


@pytest.mark.parametrize("args, message", [
    (("loud", "masked", "eager"), "clip must be one of"),
    (("silent", "mse", "eager"), "loss must be one of"),
    (("silent", "masked", "graph"), "mode must be one of"),
])
def test_bad_choices_are_refused(model, args, message):
    with pytest.raises(ValueError, match=message):
        lab_result(*args, model)
