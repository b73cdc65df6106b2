"""Short tracebacks for errors in a notebook: the learner's own lines and the message.

An error raised deep inside Keras prints about 45 lines of library code, and the two lines
that matter (the learner's line, the message) sit at the top and the bottom. After
``short_tracebacks()``, IPython shows only the frames of the notebook's cells, one line
saying how many library frames were left out, and the exception. The kernel still reports
the error as before (its name and message), so nbval checks a ``raises-exception`` cell
exactly as it did; ``%tb`` prints the full traceback of the last error.
"""

from __future__ import annotations

import linecache
import sys
import traceback
from collections.abc import Callable
from types import TracebackType

__all__ = ["MESSAGE_LINES", "short_traceback", "short_tracebacks"]

MESSAGE_LINES = 6  # of an exception's message, shown in the short form


def short_tracebacks(on: bool = True) -> None:
    """From now on, show errors of this IPython kernel in short form (``on=False``: in full).

    Outside IPython (a script, a test process) it does nothing: there is no traceback display
    to change.
    """
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    if on:
        shell.set_custom_exc((Exception,), _show_short_traceback)
    else:
        shell.set_custom_exc((), None)


def short_traceback(
    error: BaseException, tb: TracebackType | None, cell_label: Callable[[str], str | None]
) -> list[str]:
    """The lines of a short traceback: every frame whose file ``cell_label`` names (a
    notebook cell: ``"Cell In[7]"``) with its source line, one line per run of other frames
    saying whose they are, then ``Type: message`` (at most ``MESSAGE_LINES`` of it: its start
    and its last line). Frames before the first cell frame (the shell's own) are dropped."""
    lines: list[str] = []
    hidden: list[str] = []
    for frame, line_number in traceback.walk_tb(tb):
        filename = frame.f_code.co_filename
        label = cell_label(filename)
        if label is None:
            if lines:  # only frames the learner's code called
                hidden.append(str(frame.f_globals.get("__name__", "?")).partition(".")[0])
            continue
        lines += _hidden_note(hidden)
        hidden = []
        source = linecache.getline(filename, line_number).strip()
        lines += [f"{label}, line {line_number}", f"----> {line_number} {source}"]
    lines += _hidden_note(hidden)
    message = "".join(traceback.format_exception_only(type(error), error)).rstrip("\n")
    qualified = f"{type(error).__module__}.{type(error).__qualname__}:"
    if message.startswith(qualified):  # json.decoder.JSONDecodeError -> JSONDecodeError
        message = f"{type(error).__name__}:" + message[len(qualified) :]
    message_lines = message.splitlines()
    if len(message_lines) > MESSAGE_LINES:  # TensorFlow's graph errors list node definitions
        left_out = len(message_lines) - MESSAGE_LINES + 1
        message_lines = [
            *message_lines[: MESSAGE_LINES - 2],
            f"      ({left_out} more lines of the message not shown; %tb shows them)",
            message_lines[-1],
        ]
    return lines + message_lines


def _hidden_note(packages: list[str]) -> list[str]:
    if not packages:
        return []
    names = ", ".join(dict.fromkeys(packages))
    frames = "frame" if len(packages) == 1 else "frames"
    return [f"      ({len(packages)} {frames} inside {names} not shown; %tb shows them)"]


def _cell_label(shell) -> Callable[[str], str | None]:
    """``"Cell In[7]"`` for a file IPython compiled from a cell, else None."""

    def label(filename: str) -> str | None:
        named = shell.compile.format_code_name(filename)
        return None if named is None else f"{named[0]} {named[1]}"

    return label


def _show_short_traceback(
    shell,
    etype: type[BaseException],
    value: BaseException,
    tb: TracebackType | None,
    tb_offset: int | None = None,
) -> None:
    """IPython's custom exception handler (``set_custom_exc``): the short form, shown by the
    shell's public ``showtraceback`` through IPython's hook for an exception's own traceback
    (``_render_traceback_``), so the kernel sends its error message (name, message, lines)."""
    from IPython.core.error import UsageError

    own_form = issubclass(etype, (SyntaxError, UsageError)) or hasattr(value, "_render_traceback_")
    if not own_form:
        lines = short_traceback(value, tb, _cell_label(shell))
        try:
            value._render_traceback_ = lambda: lines
        except AttributeError:  # an exception type that takes no attributes: the full form
            pass
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb  # for %tb, %debug
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
