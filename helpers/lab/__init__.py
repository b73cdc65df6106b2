"""Notebook 06's gradient lab: its settings, what it computes (the report and Adam's next
step), and its ipywidgets view (``GradientLab``).
"""

from helpers.course.quiet_tensorflow import import_tensorflow

import_tensorflow()  # first, so TensorFlow's start-up log stays out

from helpers.lab.view import GradientLab

__all__ = [
    "GradientLab",
]
