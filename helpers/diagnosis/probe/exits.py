"""Where a value leaves TensorFlow inside the probe's block: ``float(t)``, ``int(t)``,
``t.numpy()`` on a tensor or a variable, ``np.asarray(variable)``. (``np.asarray(tensor)``
goes through the buffer protocol, which has no Python method to wrap: not seen; the marks
still find that break.)

TensorFlow has no hook for this, so while a probe records eagerly, the conversion methods of
eager tensors and variables are wrapped to note each float tensor converted, and restored on
exit (also on error). The probe later asks which sources reach each noted tensor: a source
whose gradient is None and that reaches one left TensorFlow there, as a Python or NumPy
number.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import keras
import tensorflow as tf

CONVERSIONS = {
    "__float__": "float()",
    "__int__": "int()",
    "__index__": "int()",
    "numpy": ".numpy()",
    "__array__": "np.asarray()",
}
_converting = [False]  # inside a wrapped conversion: float() calls .numpy(); note it once


@functools.cache
def _owners() -> list[tuple[type, str, str]]:
    """``(class, method, label)`` for every conversion method of eager tensors and variables,
    on the class that defines it."""
    found: list[tuple[type, str, str]] = []
    for cls in (type(tf.constant(0.0)), type(tf.Variable(0.0)), keras.Variable):
        for name, label in CONVERSIONS.items():
            owner = next((c for c in cls.__mro__ if name in c.__dict__), None)
            if owner is not None and (owner, name, label) not in found:
                found.append((owner, name, label))
    return found


def _is_float(value: Any) -> bool:
    try:
        dtype = tf.as_dtype(value.dtype)
    except TypeError:
        return False
    return dtype.is_floating or dtype.is_complex


@contextlib.contextmanager
def noting_exits(note: Callable[[str, Any], None]) -> Iterator[None]:
    """While open (eagerly), call ``note(label, tensor)`` for every float eager tensor that
    is converted to a Python or NumPy number. Restores the methods on exit, even on error."""
    if not tf.executing_eagerly():
        yield
        return
    saved = []
    for owner, name, label in _owners():
        saved.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, _wrapped(owner.__dict__[name], label, note))
    try:
        yield
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)


def _wrapped(
    original: Callable[..., Any], label: str, note: Callable[[str, Any], None]
) -> Callable[..., Any]:
    def conversion(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _converting[0]:
            return original(self, *args, **kwargs)
        _converting[0] = True
        try:
            if _is_float(self):
                note(label, self)
            return original(self, *args, **kwargs)
        finally:
            _converting[0] = False

    conversion.__name__ = getattr(original, "__name__", label)
    conversion.__doc__ = getattr(original, "__doc__", None)
    return conversion
