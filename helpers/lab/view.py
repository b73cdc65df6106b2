"""The interactive gradient lab's view: ipywidgets controls for a ``LabComputation``
(clip, loss, its knobs, execution mode, what to do with missing gradients), the summary line,
the gradient table with its plot, and the Adam panel (notebook 04's lesson: zeros are not a
neutral update, Adam's momentum keeps moving; the panel gives the next step's size and its
direction, the cosine with the last voiced step). Controls, by name (``GradientLab.controls``):
``clip``, ``loss``, ``else_scale`` (the accepted answer's hack: the scale of the
else-branches), ``silence_weight`` (the masked loss's silence term), ``mode`` (``eager`` or
``tf.function``) and ``policy`` (``keep`` the tape's ``None``, ``zeros`` or ``skip``).
Callbacks write into widgets, so the lab can be driven and tested without a browser: set
``lab.controls["clip"].value`` and read ``lab.result``.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as widgets
import keras
from IPython.display import HTML, Image
from matplotlib.figure import Figure

from helpers.course import escape
from helpers.diagnosis import STATUSES, GradientReport, norms_figure_height, plot_gradient_norms
from helpers.lab.computation import LabComputation, LabResult
from helpers.lab.settings import (
    ELSE_SCALES,
    KNOBS,
    MODES,
    POLICIES,
    SILENCE_WEIGHTS,
    LabSetting,
)

# The plot's x range, the same for every setting so that two settings compare by eye: every
# norm the course's lab gives lies inside (measured over all its settings: 9.2e-16, silence
# with the hack's scale at 1e-12, to 1.87, the voiced clip). A learner's norm above it is
# drawn to the edge; one below it gets no bar (the table gives its value).
LAB_NORM_RANGE = (1e-16, 1e2)
LAB_FIGURE_TITLE = "gradient norm of each variable"
LAB_FIGURE_WIDTH = 8.0  # inches; the height grows with the number of variables, as in 00
LAB_NO_HINT = "No hint: every gradient is there and non-zero."
FALLBACK_NOTE = "Run this cell to get the interactive gradient lab. When it last ran, it showed:"
FALLBACK_WIDTH = 80  # characters per line of the text fallback (no line long enough to break)
CONTROL_LABEL_WIDTH = "110px"  # every control's label, inline, the same width
# The lab's own styles (a <style> in a hidden HTML widget, scoped to .gradient-lab): the
# selected toggle in the theme's brand colour, a disabled control greyed out whole, and the
# toggles' labels inline like the other controls' (ipywidgets puts them above).
LAB_CSS = """<style>
.gradient-lab .jupyter-button.mod-active {
  background-color: var(--jp-brand-color1, #1976d2);
  color: var(--jp-ui-inverse-font-color1, #ffffff);
}
.gradient-lab .lab-control-off { opacity: 0.4; }
.gradient-lab .widget-toggle-buttons { display: flex; align-items: center; }
.gradient-lab .widget-toggle-buttons > .widget-label {
  flex-shrink: 0; margin-right: 8px; text-align: right;
}
</style>"""


class GradientLab:
    """The lab: six controls, a summary line, a gradient table with its plot, and the Adam
    panel. Changing a control recomputes (once per setting) and redraws.

    ``GradientLab(model=None, losses=None, clips=None)`` takes what ``LabComputation`` takes;
    ``clip``, ``loss``, ... set the controls' first values. Every element has the CSS class
    ``gradient-lab-<name>`` (CONTRIBUTING.md, "Stored outputs").
    """

    def __init__(
        self,
        model: keras.Model | None = None,
        *,
        losses: Mapping[str, Callable] | None = None,
        clips: Mapping[str, Any] | None = None,
        clip: str | None = None,
        loss: str | None = None,
        mode: str = "eager",
        policy: str = "keep",
        else_scale: str = "off",
        silence_weight: str = "1",
    ):
        self.lab = LabComputation(model, losses=losses, clips=clips)
        self.model, self.losses, self.examples = self.lab.model, self.lab.losses, self.lab.examples
        clip = (
            clip
            if clip is not None
            else ("silent" if "silent" in self.examples else next(iter(self.examples)))
        )
        loss = (
            loss
            if loss is not None
            else (
                "per-frame (question)"
                if "per-frame (question)" in self.losses
                else next(iter(self.losses))
            )
        )
        self.lab.setting(clip, loss, mode, policy, else_scale, silence_weight)  # a clear error
        self._pictures: dict[tuple, tuple[str, bytes]] = {}
        self.controls: dict[str, widgets.Widget] = {
            "clip": widgets.Dropdown(options=list(self.examples), value=clip, description="clip"),
            "loss": widgets.Dropdown(options=list(self.losses), value=loss, description="loss"),
            "else_scale": widgets.SelectionSlider(
                options=list(ELSE_SCALES),
                value=else_scale,
                description="else_scale",
                continuous_update=False,
            ),
            "silence_weight": widgets.SelectionSlider(
                options=list(SILENCE_WEIGHTS),
                value=silence_weight,
                description="silence_weight",
                continuous_update=False,
            ),
            "mode": widgets.ToggleButtons(options=list(MODES), value=mode, description="mode"),
            "policy": widgets.ToggleButtons(
                options=list(POLICIES), value=policy, description="policy"
            ),
        }
        self.summary = widgets.HTML()
        self.view = widgets.Output()
        self.adam_panel = widgets.HTML()
        for name, control in self.controls.items():
            control.style.description_width = CONTROL_LABEL_WIDTH
            if isinstance(control, widgets.ToggleButtons):
                control.style.button_width = "auto"
            control.add_class(f"gradient-lab-{name}")
            control.observe(self._on_change, names="value")
        self.summary.add_class("gradient-lab-summary")
        self.view.add_class("gradient-lab-table")
        self.adam_panel.add_class("gradient-lab-adam")
        c = self.controls
        self.widget = widgets.VBox(
            [
                widgets.HTML(LAB_CSS, layout=widgets.Layout(display="none")),
                widgets.HBox([c["clip"], c["loss"]]),
                widgets.HBox([c["else_scale"], c["silence_weight"]]),
                widgets.HBox([c["mode"], c["policy"]]),
                self.summary,
                self.adam_panel,
                self.view,
            ]
        )
        self.widget.add_class("gradient-lab")
        self.result: LabResult | None = None
        self.error: str | None = None  # what went wrong in the last change, if anything
        self.update()

    def setting(self) -> LabSetting:
        """The setting the controls show now."""
        v = {name: control.value for name, control in self.controls.items()}
        return self.lab.setting(
            v["clip"], v["loss"], v["mode"], v["policy"], v["else_scale"], v["silence_weight"]
        )

    def result_for(self, clip: str, loss: str, *choices: str, **named: str) -> LabResult:
        """The result of any setting (cached), without moving the controls or drawing: a clip,
        a loss and, by name, any of mode, policy, else_scale and silence_weight (the defaults
        are the lab's: ``eager``, ``keep``, ``off``, ``1``)."""
        return self.lab.result_for(clip, loss, *choices, **named)

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
            self.summary.value = text_html(self.error, bold=True)
            self.adam_panel.value = ""
            self.view.outputs = ()

    def update(self) -> LabResult:
        """Recompute (or take from the cache) for the current controls and redraw."""
        setting = self.setting()
        for knob in KNOBS:  # a slider the loss does not take is greyed out
            off = getattr(setting, knob) is None
            self.controls[knob].disabled = off
            (self.controls[knob].add_class if off else self.controls[knob].remove_class)(
                "lab-control-off"
            )
        self.result, self.error = self.lab.result(setting), None
        table_html, png = self._picture(self.result.report)
        self.summary.value = text_html(self.result.describe(), bold=True)
        self.adam_panel.value = text_html(self.result.adam.describe())
        self.view.outputs = ()
        self.view.append_display_data(HTML(table_html))
        self.view.append_display_data(Image(data=png, format="png"))
        return self.result

    def _picture(self, report: GradientReport) -> tuple[str, bytes]:
        """The report's table (HTML) and plot (PNG), drawn once per distinct report: the
        plot takes longer than an eager gradient."""
        key = tuple((r.name, r.status, r.norm) for r in report)
        if key not in self._pictures:
            figure = lab_figure(report)
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png")  # at the figure's dpi, like the inline plots
            self._pictures[key] = (lab_table(report), buffer.getvalue())
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
                "version_major": 2,
                "version_minor": 0,
                "model_id": self.widget.model_id,
            },
        }

    def text(self) -> str:
        """The plain-text view: a note to run the cell, then the summary line and the Adam
        panel, each wrapped between words (a notebook breaks a long line anywhere)."""
        return fallback_text(self.result)

    def __repr__(self) -> str:
        return f"GradientLab({self.result.describe() if self.result else 'not run'})"


def lab_figure(report: GradientReport) -> Figure:
    """The lab's plot: one x range (``LAB_NORM_RANGE``), one title and a legend of every
    status, so that its size and layout are the same in every setting.

    A plain ``Figure``, not one from pyplot: the lab draws it in a widget callback, and a
    pyplot figure is the inline backend's to show, in whatever cell runs next, if it is
    still open then."""
    figure = Figure(
        figsize=(LAB_FIGURE_WIDTH, norms_figure_height(len(report))), layout="constrained"
    )
    plot_gradient_norms(
        report,
        ax=figure.add_subplot(),
        title=LAB_FIGURE_TITLE,
        xlim=LAB_NORM_RANGE,
        legend_statuses=STATUSES,
    )
    return figure


def lab_table(report: GradientReport) -> str:
    """The lab's table: the same four columns in every setting, the hints under it (the
    summary line above the lab already gives the report's summary)."""
    return report.to_html(summary=False, hint_column=False, no_hint=LAB_NO_HINT)


def text_html(text: str, bold: bool = False) -> str:
    """A line of the lab's text as HTML, at the notebook's line height when it wraps."""
    inner = f"<b>{escape(text)}</b>" if bold else escape(text)
    return f"<div style='line-height:1.4'>{inner}</div>"


def fallback_text(result: LabResult) -> str:
    """What a notebook shows where the widget is not drawn: ``FALLBACK_NOTE``, then the
    summary line and the Adam panel as paragraphs of at most ``FALLBACK_WIDTH`` characters."""

    def wrap(text: str) -> str:
        return textwrap.fill(text, FALLBACK_WIDTH, break_long_words=False, break_on_hyphens=False)

    return f"{FALLBACK_NOTE}\n{wrap(result.describe())}\n\n{wrap(result.adam.describe())}"
