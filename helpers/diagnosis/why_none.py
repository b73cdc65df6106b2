"""Why is a gradient None? One decision, shared by the gradient report's hint column
(``helpers.diagnosis.report``) and the locator's causes (``helpers.diagnosis.probe``).

``tape.gradient`` returns None for a source in a handful of ways; which one depends on the
source (a variable or a tensor, trainable or not, its dtype) and on what the tape saw of it
(``watched``: whether the tape watched it or recorded a read of it). A bare list of
gradients does not know what the tape saw (``watched=None``); then, if every source is None,
a cut is the likely cause, else a source the loss never used.
"""

from __future__ import annotations

from typing import Any, Literal

import keras
import tensorflow as tf

Cause = Literal["untrainable", "integer", "unwatched", "unread", "cut", "unused"]

HINTS: dict[Cause, str] = {
    "untrainable": "not trainable: pass trainable_variables",
    "integer": "integer dtype: no gradient",
    "unwatched": "a tensor: tape.watch it before use",
    "unread": "never read inside the tape: read it inside the block",
    "cut": "cut: NumPy, int/round, stop_gradient, assign, constant, outside the tape?",
    "unused": "not used on the way to the loss, or read outside the tape?",
}


def is_variable(value: Any) -> bool:
    """A ``tf.Variable`` or a Keras 3 variable (which also passes ``tf.is_tensor``)."""
    return isinstance(value, (tf.Variable, keras.Variable))


def why_none(source: Any, *, watched: bool | None = None, every_none: bool = False) -> Cause:
    """The cause of a None gradient for ``source`` (a variable or a tensor).

    ``watched``: did the tape watch the source or see a read of it (None: not known, as for
    a gradient list on its own); ``every_none``: is every source's gradient None.
    """
    tensor = tf.is_tensor(source) and not is_variable(source)
    if not tensor and not getattr(source, "trainable", True) and not watched:
        return "untrainable"
    try:
        dtype = tf.as_dtype(getattr(source, "dtype", None))
        if not (dtype.is_floating or dtype.is_complex):
            return "integer"
    except TypeError:
        pass
    if tensor:
        return "cut" if watched else "unwatched"
    if watched is None:
        return "cut" if every_none else "unused"
    return "cut" if watched else "unread"


__all__ = ["HINTS", "Cause", "is_variable", "why_none"]
