"""Where a value leaves the tape inside the probe's block: converted to a Python or NumPy
number (``float(t)``, ``int(t)``, ``t.numpy()``, ``t.__array__()``, ``np.asarray(t)`` and
NumPy's other array constructors, a NumPy ufunc such as ``np.abs(t)``; SciPy and librosa
call those on what they are given), or written into a variable (``v.assign(t)``,
``assign_add``, ``assign_sub``).

TensorFlow has no hook for this, so while a probe records eagerly, the conversion and
assignment methods of eager tensors and variables and NumPy's array constructors are wrapped,
and eager tensors get an ``__array_wrap__`` (which NumPy calls on a ufunc's inputs), to note
each float tensor converted or assigned; all is restored on exit (also on error). A
conversion made inside a library is named by the library function the block called
(``lfilter()``). The probe later asks which sources reach each noted tensor: a source whose
gradient is None and that reaches one left the tape there.

Not seen: code that reads a tensor's memory through the buffer protocol without any of those
(``np.frombuffer``, a compiled extension, some NumPy reductions); the verdict then says the
computation likely left TensorFlow.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sysconfig
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np
import tensorflow as tf

CONVERSIONS = {
    "__float__": "float()",
    "__int__": "int()",
    "__index__": "int()",
    "numpy": ".numpy()",
    "__array__": "np.asarray()",
}
METHODS = ("float()", "int()", ".numpy()")  # the rest: NumPy and library calls
ASSIGNMENTS = ("assign", "assign_add", "assign_sub")
NUMPY_CONSTRUCTORS = ("asarray", "asanyarray", "array", "ascontiguousarray", "asfortranarray")
_inside = [False]  # inside a wrapped method: float() calls .numpy(); note it once
_MISSING = object()


@dataclass
class Exit:
    """One place where a value left the tape: ``label`` (``float()``, ``np.asarray()``,
    ``assign``...), the float tensor or variable converted, or the tensor assigned
    (``value``), and how many marks had been made (``position``). An assignment also keeps
    the ``variable`` written and a ``tape`` watching it from then on, to tell whether the
    loss reads what was written."""

    label: str
    value: Any
    position: int
    variable: Any = None
    tape: tf.GradientTape | None = None


@functools.cache
def _owners() -> list[tuple[type, str, str]]:
    """``(class, method, label)`` for every conversion and assignment method of eager
    tensors and variables, on the class that defines it (labels of assignments: the
    method's name)."""
    found: list[tuple[type, str, str]] = []
    methods = [*CONVERSIONS.items(), *((name, name) for name in ASSIGNMENTS)]
    for cls in (type(tf.constant(0.0)), type(tf.Variable(0.0)), keras.Variable):
        for name, label in methods:
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


def _is_read(value: Any) -> bool:
    """An eager tensor or a variable (what NumPy can read), of a float dtype."""
    eager = isinstance(value, type(tf.constant(0.0)))
    return (eager or isinstance(value, (tf.Variable, keras.Variable))) and _is_float(value)


@contextlib.contextmanager
def noting_exits(note: Callable[..., None]) -> Iterator[None]:
    """While open (eagerly), call ``note(label, tensor)`` for every float eager tensor or
    variable converted to a Python or NumPy number, and ``note(label, value, variable)``
    for every float tensor assigned to a variable (label: ``assign`` / ``assign_add`` /
    ``assign_sub``). Restores what it wrapped on exit, even on error."""
    if not tf.executing_eagerly():
        yield
        return
    saved = []
    for owner, name, label in _owners():
        saved.append((owner, name, owner.__dict__[name]))
        wrap = _assignment if name in ASSIGNMENTS else _conversion
        setattr(owner, name, wrap(owner.__dict__[name], label, note))
    for name in NUMPY_CONSTRUCTORS:
        saved.append((np, name, getattr(np, name)))
        setattr(np, name, _numpy_constructor(getattr(np, name), f"np.{name}()", note))
    tensors = next(c for c in type(tf.constant(0.0)).__mro__ if "__array__" in c.__dict__)
    saved.append((tensors, "__array_wrap__", tensors.__dict__.get("__array_wrap__", _MISSING)))
    tensors.__array_wrap__ = _array_wrap(tensors.__dict__.get("__array_wrap__"), note)
    try:
        yield
    finally:
        for owner, name, original in reversed(saved):
            if original is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


def _conversion(
    original: Callable[..., Any], label: str, note: Callable[..., None]
) -> Callable[..., Any]:
    def conversion(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _inside[0]:
            return original(self, *args, **kwargs)
        _inside[0] = True
        try:
            if _is_float(self):
                note(label, self)
            return original(self, *args, **kwargs)
        finally:
            _inside[0] = False

    return _named_like(conversion, original, label)


def _numpy_constructor(
    original: Callable[..., Any], label: str, note: Callable[..., None]
) -> Callable[..., Any]:
    """``np.asarray`` and the like: note the float eager tensors and variables among the
    object (or the items of a list / tuple) converted."""

    def constructor(value: Any, *args: Any, **kwargs: Any) -> Any:
        if _inside[0]:
            return original(value, *args, **kwargs)
        _inside[0] = True
        try:
            items = value if isinstance(value, (list, tuple)) else [value]
            for item in [v for v in items if _is_read(v)]:
                note(_called(label), item)
            return original(value, *args, **kwargs)
        finally:
            _inside[0] = False

    return _named_like(constructor, original, label)


def _array_wrap(original: Callable[..., Any] | None, note: Callable[..., None]) -> Any:
    """``__array_wrap__`` for eager tensors: NumPy calls it with a ufunc's result (np.abs(t),
    np.log(t)); note the float tensors the ufunc read, and return the result as NumPy
    would."""

    def array_wrap(self: Any, array: Any, context: Any = None, return_scalar: bool = False) -> Any:
        if not _inside[0]:
            ufunc, inputs = (context[0], context[1]) if context else (None, (self,))
            name = getattr(ufunc, "__name__", "")
            for item in [v for v in inputs if _is_read(v)]:
                note(_called(f"np.{name}()" if name else "np.asarray()"), item)
        if original is not None:
            return original(self, array, context, return_scalar)
        return array[()] if return_scalar else array

    return array_wrap


def _assignment(
    original: Callable[..., Any], label: str, note: Callable[..., None]
) -> Callable[..., Any]:
    """``variable.assign(value)``: note a float tensor written into the variable, after the
    write (a Keras variable's assign calls the tf.Variable's: noted once)."""

    def assignment(self: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        if _inside[0]:
            return original(self, value, *args, **kwargs)
        _inside[0] = True
        try:
            result = original(self, value, *args, **kwargs)
        finally:
            _inside[0] = False
        plain = tf.is_tensor(value) and not isinstance(value, (tf.Variable, keras.Variable))
        if plain and _is_float(value):
            note(label, value, self)
        return result

    return _named_like(assignment, original, label)


def _called(label: str) -> str:
    """``name()`` of the outermost library function (installed, not the block's own code)
    on the way to this conversion (``np.`` before a NumPy one), else ``label``."""
    libraries = tuple({sysconfig.get_paths()[key] for key in ("purelib", "platlib", "stdlib")})
    frame = inspect.currentframe()
    outermost = None
    while frame is not None and frame.f_code.co_filename.startswith((__file__, *libraries)):
        code = frame.f_code
        if code.co_filename != __file__ and "<" not in code.co_qualname:  # not a decorator's
            numpy = str(frame.f_globals.get("__name__", "")).partition(".")[0] == "numpy"
            outermost = f"np.{code.co_name}()" if numpy else f"{code.co_name}()"
        frame = frame.f_back
    return outermost or label


def _named_like(
    wrapper: Callable[..., Any], original: Callable[..., Any], label: str
) -> Callable[..., Any]:
    wrapper.__name__ = getattr(original, "__name__", label)
    wrapper.__doc__ = getattr(original, "__doc__", None)
    return wrapper
