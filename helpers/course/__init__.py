"""Course plumbing every notebook uses: how numbers print, HTML tables, short tracebacks,
reproducibility and argument checks. Imports no TensorFlow (``make_deterministic`` and
``versions`` import it, quietly, when called).
"""

from helpers.course.checks import check_choice, check_int, is_int
from helpers.course.printing import bound_text, difference_text, norm_text, sig
from helpers.course.reproducibility import make_deterministic, versions
from helpers.course.tables import (
    STATUS_COLOURS,
    STATUS_HEX,
    code_html,
    escape,
    html_table,
    status_html,
)
from helpers.course.tracebacks import short_tracebacks

__all__ = [
    "check_choice",
    "check_int",
    "is_int",
    "bound_text",
    "difference_text",
    "norm_text",
    "sig",
    "make_deterministic",
    "versions",
    "STATUS_COLOURS",
    "STATUS_HEX",
    "code_html",
    "escape",
    "html_table",
    "status_html",
    "short_tracebacks",
]
