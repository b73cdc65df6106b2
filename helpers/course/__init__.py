"""Course plumbing every notebook uses: how numbers print, HTML tables, short tracebacks,
reproducibility, argument checks and the threads TensorFlow uses. Imports no TensorFlow
(``make_deterministic`` and ``versions`` import it, quietly, when called).
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
from helpers.course.threads import (
    MAX_THREADS,
    THREADS_VARIABLE,
    apply_thread_count,
    cgroup_cpu_limit,
    thread_count,
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
    "MAX_THREADS",
    "THREADS_VARIABLE",
    "apply_thread_count",
    "cgroup_cpu_limit",
    "thread_count",
    "short_tracebacks",
]
