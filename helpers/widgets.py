"""The interactive gradient lab: pick a clip, a loss and an execution mode, see the gradients.

The lab runs the course's GRU denoiser (``helpers.denoiser``) on a short excerpt of a clip
with a little noise added, scores its output against the clean excerpt with one of three
losses, and shows the gradient report and the per-variable plot:

* ``per-frame (seed)``: ``cond_loop_voicing_loss``, seed 004's per-frame ``tf.cond`` loop;
* ``per-frame + 1e-10 hack``: the same with the seed answer's ``* 1e-10`` else-branch;
* ``masked``: ``masked_voicing_loss``, the vectorised fix with its silence term.

``lab_result`` does the work and is a plain function. ``GradientLab`` wraps it in widgets; its
callbacks write into an ``Output`` widget through ``append_display_data`` (widget state, not
cell output), so the lab can be driven and tested without a browser: set ``lab.clip.value``
and read ``lab.result``.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import ipywidgets as widgets
import keras
import matplotlib.pyplot as plt
import tensorflow as tf
from IPython.display import HTML, Image

from helpers.dataset import excerpt, load_clip, make_example
from helpers.denoiser import enhance, make_step_model
from helpers.gradients import GradientReport, gradient_report
from helpers.plots import plot_gradient_norms
from helpers.printing import sig
from helpers.reproducibility import make_deterministic
from helpers.voicing_loss import cond_loop_voicing_loss, masked_voicing_loss

# Clip choices: (clip name, first frame, number of frames). 16 frames = 0.24 s keeps the
# eager per-frame loop under a second.
LAB_CLIPS: dict[str, tuple[str, int, int]] = {
    "voiced": ("vowel_a", 10, 16),
    "unvoiced": ("fricative_s", 4, 16),
    "silent": ("silence", 4, 16),
    "real": ("arctic_a0009", 30, 16),
}
LAB_LOSSES: dict[str, Callable] = {
    "per-frame (seed)": cond_loop_voicing_loss,
    "per-frame + 1e-10 hack": partial(cond_loop_voicing_loss, else_scale=1e-10),
    "masked": masked_voicing_loss,
}
MODES = ("eager", "tf.function")


@dataclass(frozen=True)
class LabResult:
    """What one lab setting gives: the loss value and the gradient report."""

    clip: str
    loss_name: str
    mode: str
    loss: float
    report: GradientReport

    def describe(self) -> str:
        return (f"clip={self.clip}, loss={self.loss_name}, mode={self.mode}: "
                f"loss {sig(self.loss)}; {self.report.summary()}")


def lab_model(seed: int = 0) -> keras.Model:
    """A fresh, untrained step model with repeatable weights."""
    make_deterministic(seed)
    return make_step_model()


def lab_result(clip: str, loss_name: str, mode: str, step_model: keras.Model) -> LabResult:
    """Run the step model on the chosen clip and return the loss and its gradient report."""
    for value, options, what in ((clip, LAB_CLIPS, "clip"), (loss_name, LAB_LOSSES, "loss"),
                                 (mode, MODES, "mode")):
        if value not in options:
            raise ValueError(f"{what} must be one of {list(options)}; got {value!r}.")
    name, start, count = LAB_CLIPS[clip]
    source = load_clip(name)
    reference, labels = excerpt(source.clean, source.labels, start, start + count)
    example = make_example(clip, reference, labels, seed=0)
    loss_fn = LAB_LOSSES[loss_name]
    variables = step_model.trainable_variables
    clean = tf.constant(example.reference)

    def loss_and_grads():
        with tf.GradientTape() as tape:
            estimate = enhance(step_model, example.noisy)
            loss = loss_fn(clean, estimate, example.labels)
        return loss, tape.gradient(loss, variables)

    if mode == "tf.function":
        loss_and_grads = tf.function(loss_and_grads, autograph=False)
    loss, grads = loss_and_grads()
    return LabResult(clip, loss_name, mode, float(loss), gradient_report(grads, variables))


class GradientLab:
    """Three controls and a view. Changing any control recomputes and redraws."""

    def __init__(self, step_model: keras.Model | None = None, clip: str = "silent",
                 loss_name: str = "per-frame (seed)", mode: str = "eager"):
        self.step_model = step_model if step_model is not None else lab_model()
        self.clip = widgets.Dropdown(options=list(LAB_CLIPS), value=clip, description="clip")
        self.loss = widgets.Dropdown(options=list(LAB_LOSSES), value=loss_name,
                                     description="loss")
        self.mode = widgets.ToggleButtons(options=list(MODES), value=mode, description="mode")
        self.summary = widgets.HTML()
        self.view = widgets.Output()
        self.result: LabResult | None = None
        for control in (self.clip, self.loss, self.mode):
            control.observe(self._on_change, names="value")
        self.widget = widgets.VBox([widgets.HBox([self.clip, self.loss]), self.mode,
                                    self.summary, self.view])
        self.update()

    def _on_change(self, _change) -> None:
        self.update()

    def update(self) -> LabResult:
        """Recompute for the current controls and redraw the view."""
        self.result = lab_result(self.clip.value, self.loss.value, self.mode.value,
                                 self.step_model)
        self.summary.value = f"<b>{self.result.describe()}</b>"
        figure = plot_gradient_norms(self.result.report, title=self.result.report.summary())
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=80)
        plt.close(figure)
        self.view.outputs = ()
        self.view.append_display_data(HTML(self.result.report._repr_html_()))
        self.view.append_display_data(Image(data=buffer.getvalue(), format="png"))
        return self.result

    def _repr_mimebundle_(self, **_kwargs) -> dict:
        # The live view is the widget; the plain-text fallback (what a static copy of the
        # notebook shows, and what nbval compares) is one stable line, not the widget tree.
        return {
            "text/plain": f"Gradient lab, showing {self.result.describe()}",
            "application/vnd.jupyter.widget-view+json": {
                "version_major": 2, "version_minor": 0, "model_id": self.widget.model_id},
        }

    def __repr__(self) -> str:
        return f"GradientLab({self.result.describe() if self.result else 'not run'})"


def lab_table(clip: str, step_model: keras.Model) -> list[LabResult]:
    """Every loss in every mode for one clip: the lab's static view."""
    return [lab_result(clip, loss_name, mode, step_model)
            for loss_name in LAB_LOSSES for mode in MODES]


def print_lab_table(results: list[LabResult]) -> None:
    """One line per setting: loss, mode, loss value and the report's summary."""
    print(f"{'loss':24s} {'mode':12s} {'loss value':>11s}   gradients")
    for r in results:
        print(f"{r.loss_name:24s} {r.mode:12s} {sig(r.loss):>11s}   {r.report.summary()}")


__all__ = ["GradientLab", "LabResult", "lab_model", "lab_result", "lab_table",
           "print_lab_table", "LAB_CLIPS", "LAB_LOSSES", "MODES"]
