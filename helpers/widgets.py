"""The interactive gradient lab's view: ipywidgets controls for a ``helpers.lab`` computation
(clip, loss, its knobs, execution mode, what to do with missing gradients), the summary line,
the gradient table with its plot, and the Adam panel (notebook 04's lesson: zeros are not a
neutral update, Adam's momentum keeps moving; the panel gives the next step's size and its
direction, the cosine with the last voiced step). Controls, by name (``GradientLab.controls``):
``clip``, ``loss``, ``else_scale`` (the accepted answer's hack: the scale of the
else-branches), ``silence_weight`` (the masked loss's silence term), ``mode`` (``eager`` or
``tf.function``) and ``policy`` (``None``, ``zeros`` or ``skip``). Callbacks write into
widgets, so the lab can be driven and tested without a browser: set
``lab.controls["clip"].value`` and read ``lab.result``.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as widgets
import keras
import matplotlib.pyplot as plt
from IPython.display import HTML, Image

from helpers.gradients import GradientReport
from helpers.lab import LabComputation, LabResult
from helpers.lab_settings import (
    ELSE_SCALES,
    KNOBS,
    MODES,
    POLICIES,
    SILENCE_WEIGHTS,
    LabSetting,
)
from helpers.plots import plot_gradient_norms


class GradientLab:
    """The lab: six controls, a summary line, a gradient table with its plot, and the Adam
    panel. Changing a control recomputes (once per setting) and redraws.

    ``GradientLab(model=None, losses=None, clips=None)`` takes what ``LabComputation`` takes;
    ``clip``, ``loss``, ... set the controls' first values. Every element has the CSS class
    ``gradient-lab-<name>`` (CONTRIBUTING.md, "The gradient lab in a stored notebook").
    """

    def __init__(self, model: keras.Model | None = None, *,
                 losses: Mapping[str, Callable] | None = None,
                 clips: Mapping[str, Any] | None = None, clip: str | None = None,
                 loss: str | None = None, mode: str = "eager", policy: str = "None",
                 else_scale: str = "off", silence_weight: str = "1"):
        self.lab = LabComputation(model, losses=losses, clips=clips)
        self.model, self.losses, self.examples = self.lab.model, self.lab.losses, self.lab.examples
        clip = clip if clip is not None else ("silent" if "silent" in self.examples
                                              else next(iter(self.examples)))
        loss = loss if loss is not None else ("per-frame (question)" if "per-frame (question)"
                                              in self.losses else next(iter(self.losses)))
        self.lab.setting(clip, loss, mode, policy, else_scale, silence_weight)  # a clear error
        self._pictures: dict[tuple, tuple[str, bytes]] = {}
        self.controls: dict[str, widgets.Widget] = {
            "clip": widgets.Dropdown(options=list(self.examples), value=clip,
                                     description="clip"),
            "loss": widgets.Dropdown(options=list(self.losses), value=loss,
                                     description="loss"),
            "else_scale": widgets.SelectionSlider(
                options=list(ELSE_SCALES), value=else_scale, description="else_scale",
                continuous_update=False),
            "silence_weight": widgets.SelectionSlider(
                options=list(SILENCE_WEIGHTS), value=silence_weight,
                description="silence_weight", continuous_update=False),
            "mode": widgets.ToggleButtons(options=list(MODES), value=mode, description="mode"),
            "policy": widgets.ToggleButtons(options=list(POLICIES), value=policy,
                                            description="policy"),
        }
        self.summary = widgets.HTML()
        self.view = widgets.Output()
        self.adam_panel = widgets.HTML()
        for name, control in self.controls.items():
            control.style.description_width = "initial"
            control.add_class(f"gradient-lab-{name}")
            control.observe(self._on_change, names="value")
        self.summary.add_class("gradient-lab-summary")
        self.view.add_class("gradient-lab-table")
        self.adam_panel.add_class("gradient-lab-adam")
        c = self.controls
        self.widget = widgets.VBox([
            widgets.HBox([c["clip"], c["loss"]]),
            widgets.HBox([c["else_scale"], c["silence_weight"]]),
            c["mode"], c["policy"], self.summary, self.adam_panel, self.view])
        self.widget.add_class("gradient-lab")
        self.result: LabResult | None = None
        self.error: str | None = None  # what went wrong in the last change, if anything
        self.update()

    def setting(self) -> LabSetting:
        """The setting the controls show now."""
        v = {name: control.value for name, control in self.controls.items()}
        return self.lab.setting(v["clip"], v["loss"], v["mode"], v["policy"], v["else_scale"],
                                v["silence_weight"])

    def result_for(self, clip: str, loss: str, mode: str = "eager", policy: str = "None",
                   else_scale: str = "off", silence_weight: str = "1") -> LabResult:
        """The result of any setting (cached), without moving the controls or drawing."""
        return self.lab.result_for(clip, loss, mode, policy, else_scale, silence_weight)

    def tracing_count(self) -> int:
        """How many times the lab's ``tf.function``s have traced, all together."""
        return self.lab.tracing_count()

    def _on_change(self, _change) -> None:
        # A callback's exception would only reach JupyterLab's log console: show it in the
        # lab instead (a learner's loss may fail on one of the clips).
        try:
            self.update()
        except Exception as error:  # noqa: BLE001 - shown to the learner, not hidden
            self.error = f"{self.setting().describe()}: {type(error).__name__}: {error}"
            self.summary.value = f"<b>{html.escape(self.error)}</b>"
            self.adam_panel.value = ""
            self.view.outputs = ()

    def update(self) -> LabResult:
        """Recompute (or take from the cache) for the current controls and redraw."""
        setting = self.setting()
        for knob in KNOBS:  # a slider the loss does not take is greyed out
            self.controls[knob].disabled = getattr(setting, knob) is None
        self.result, self.error = self.lab.result(setting), None
        table_html, png = self._picture(self.result.report)
        self.summary.value = f"<b>{html.escape(self.result.describe())}</b>"
        self.adam_panel.value = html.escape(self.result.adam.describe())
        self.view.outputs = ()
        self.view.append_display_data(HTML(table_html))
        self.view.append_display_data(Image(data=png, format="png"))
        return self.result

    def _picture(self, report: GradientReport) -> tuple[str, bytes]:
        """The report's table (HTML) and plot (PNG), drawn once per distinct report: the
        plot takes longer than an eager gradient."""
        key = tuple((r.name, r.status, r.norm) for r in report)
        if key not in self._pictures:
            figure = plot_gradient_norms(report, title=report.summary())
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png", dpi=80)
            plt.close(figure)
            self._pictures[key] = (report._repr_html_(), buffer.getvalue())
        return self._pictures[key]

    # -- display

    def _repr_mimebundle_(self, **_kwargs) -> dict:
        # The live view is the widget; the plain-text fallback (what a static copy of the
        # notebook shows, and what nbval compares) is the summary line and the Adam panel as
        # they are when the lab is displayed. The notebook stores the widget state as it is
        # at the end of the run: change the lab after displaying it and the two disagree
        # (tests/test_widgets.py checks 06).
        return {
            "text/plain": self.text(),
            "application/vnd.jupyter.widget-view+json": {
                "version_major": 2, "version_minor": 0, "model_id": self.widget.model_id},
        }

    def text(self) -> str:
        """The plain-text view: the summary line and the Adam panel."""
        return f"Gradient lab, showing {self.result.describe()}\n{self.result.adam.describe()}"

    def __repr__(self) -> str:
        return f"GradientLab({self.result.describe() if self.result else 'not run'})"
