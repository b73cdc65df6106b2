"""Where gradients are ``None``, zero or NaN: the gradient report (``gradient_report``), why a
gradient is ``None``, the pictures of it, and the locator (``GradientProbe``), which finds
where the tape stops seeing the computation.
"""

from helpers.course.quiet_tensorflow import import_tensorflow

import_tensorflow()  # first, so TensorFlow's start-up log stays out

from helpers.diagnosis.plots import (
    norms_figure_height,
    plot_gradient_norms,
    plot_norm_history,
    plot_norm_ratios,
    plot_reports,
    plot_spectrogram,
    plot_state_gradients,
)
from helpers.diagnosis.probe import GradientProbe
from helpers.diagnosis.report import (
    STATUSES,
    GradientReport,
    gradient_report,
    gradients_of,
    max_abs_diff,
    op_gradient,
    variable_name,
)

__all__ = [
    "norms_figure_height",
    "plot_gradient_norms",
    "plot_norm_history",
    "plot_norm_ratios",
    "plot_reports",
    "plot_spectrogram",
    "plot_state_gradients",
    "GradientReport",
    "STATUSES",
    "gradient_report",
    "gradients_of",
    "max_abs_diff",
    "op_gradient",
    "variable_name",
    "GradientProbe",
]
