"""Where a value leaves the tape inside the probe's block: converted to a Python or NumPy
number (``float(t)``, ``int(t)``, ``t.numpy()``, ``t.__array__()``, ``np.asarray(t)`` and
NumPy's other array constructors, a NumPy ufunc such as ``np.abs(t)``; SciPy and librosa
call those on what they are given), or written into a variable (``v.assign(t)``,
``assign_add``, ``assign_sub``).

TensorFlow has no hook for this, so while a probe records eagerly, the conversion and
assignment methods of eager tensors and variables and NumPy's array constructors are wrapped,
and eager tensors get an ``__array_wrap__`` (which NumPy calls on a ufunc's inputs), to note
each float tensor converted or assigned; ``tf.stop_gradient`` and ``tf.cond`` are wrapped to
note where they ran (walls). All is restored on exit (also on error); every such touch is
made through ``internals``, which lists them with the versions they were verified on. A
conversion made inside a library is named by the library function the block called
(``lfilter()``). The probe later asks which sources reach each noted tensor: a source whose
gradient is None and that reaches one left the tape there.

Not seen: code that reads a tensor's memory through the buffer protocol without any of those
(``np.frombuffer``, a compiled extension, some NumPy reductions); the verdict then names
leaving TensorFlow among the causes it cannot tell apart.
"""

from __future__ import annotations

import contextlib
import inspect
import sysconfig
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import tensorflow as tf

from helpers.diagnosis.probe.internals import (
    array_wrap_owner,
    eager_tensor_type,
    method_owners,
    module_functions,
    patched,
)
from helpers.diagnosis.why_none import is_variable

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
# Calls that cut a path inside TensorFlow, with no conversion to see: where a break has no
# other explanation, the verdict names them instead of guessing at NumPy.
WALLS = {"stop_gradient": "tf.stop_gradient()", "cond": "tf.cond()"}
_inside = [False]  # inside a wrapped method: float() calls .numpy(); note it once


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


def _owners() -> list[tuple[type, str, str]]:
    """``(class, method, label)`` for every conversion and assignment method of eager
    tensors and variables, on the class that defines it (labels of assignments: the
    method's name)."""
    labels = {**CONVERSIONS, **{name: name for name in ASSIGNMENTS}}
    return [(owner, name, labels[name]) for owner, name in method_owners(tuple(labels))]


def _is_float(value: Any) -> bool:
    try:
        dtype = tf.as_dtype(value.dtype)
    except TypeError:
        return False
    return dtype.is_floating or dtype.is_complex


def _is_read(value: Any) -> bool:
    """An eager tensor or a variable (what NumPy can read), of a float dtype."""
    eager = isinstance(value, eager_tensor_type())
    return (eager or is_variable(value)) and _is_float(value)


@contextlib.contextmanager
def noting_exits(
    note: Callable[..., None], note_wall: Callable[[str], None] = lambda label: None
) -> Iterator[None]:
    """While open (eagerly), call ``note(label, tensor)`` for every float eager tensor or
    variable converted to a Python or NumPy number, ``note(label, value, variable)`` for
    every float tensor assigned to a variable (label: ``assign`` / ``assign_add`` /
    ``assign_sub``), and ``note_wall(label)`` for every call of a wall (``WALLS``).
    Restores what it wrapped on exit, even on error (``internals.patched``)."""
    if not tf.executing_eagerly():
        yield
        return
    replacements: list[tuple[Any, str, Callable[[Any], Any]]] = [
        (owner, name, _wrapper(name, label, note)) for owner, name, label in _owners()
    ]
    replacements += [
        (
            module,
            name,
            lambda original, label=f"np.{name}()": _numpy_constructor(original, label, note),
        )
        for module, name in module_functions(tuple(f"np.{n}" for n in NUMPY_CONSTRUCTORS))
    ]
    replacements += [
        (module, name, lambda original, label=WALLS[name]: _wall(original, label, note_wall))
        for module, name in module_functions(tuple(f"tf.{n}" for n in WALLS))
    ]
    replacements.append(
        (array_wrap_owner(), "__array_wrap__", lambda original: _array_wrap(original, note))
    )
    with patched(replacements):
        yield


def _wrapper(
    name: str, label: str, note: Callable[..., None]
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    wrap = _assignment if name in ASSIGNMENTS else _conversion
    return lambda original: wrap(original, label, note)


def _wall(
    original: Callable[..., Any], label: str, note_wall: Callable[[str], None]
) -> Callable[..., Any]:
    """``tf.stop_gradient`` / ``tf.cond``: note the call, then make it."""

    def wall(*args: Any, **kwargs: Any) -> Any:
        if not _inside[0]:
            note_wall(label)
        return original(*args, **kwargs)

    return _named_like(wall, original, label)


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
        if tf.is_tensor(value) and not is_variable(value) and _is_float(value):
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
