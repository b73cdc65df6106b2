"""Every private or patched TensorFlow, Keras and NumPy API the locator touches, in one place,
with the versions each was verified on.

TensorFlow has no hook for "a value left the tape" and no public creation order of eager
tensors, so while a probe records eagerly it reads one private counter and wraps a few
methods and functions (restoring them on exit). A release that moves one of them breaks the
locator; ``TOUCHES`` says what would move, and ``GradientProbe()`` warns, in one sentence, on
a TensorFlow or Keras it was not verified on (``unverified_versions``), then goes on: most
releases keep all of them, and tests/test_probe_internals.py says which one moved.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np
import tensorflow as tf

# major.minor of each library every touch below was verified on (the course's locks).
VERIFIED = {"TensorFlow": ("2.21",), "Keras": ("3.15",)}


@dataclass(frozen=True)
class Touch:
    """One private or patched API: what it is, how the probe uses it, on which library."""

    api: str
    use: str
    library: str


TOUCHES = (
    Touch(
        "tensor._id, tensorflow.python.framework.ops.uid()",
        "private: the creation order of eager tensors (made before or after the block?)",
        "TensorFlow",
    ),
    Touch(
        "EagerTensor, tf.Variable: __float__, __int__, __index__, numpy, __array__, assign, "
        "assign_add, assign_sub (on the class that defines each)",
        "wrapped while a probe records eagerly: conversions and assignments",
        "TensorFlow",
    ),
    Touch(
        "EagerTensor.__array_wrap__",
        "added while a probe records eagerly: NumPy ufuncs on a tensor",
        "TensorFlow",
    ),
    Touch(
        "keras.Variable: the same conversion and assignment methods",
        "wrapped while a probe records eagerly",
        "Keras",
    ),
    Touch(
        "tf.stop_gradient, tf.cond (module attributes)",
        "wrapped while a probe records eagerly: a wall or a branch in a break",
        "TensorFlow",
    ),
    Touch(
        "np.asarray, np.asanyarray, np.array, np.ascontiguousarray, np.asfortranarray",
        "wrapped while a probe records eagerly: conversions to NumPy",
        "NumPy",
    ),
    Touch(
        "layer.call (an instance attribute over the class's method)",
        "set while mark_layers is open: Keras calls layer.call through layer.__call__",
        "Keras",
    ),
)


class UnverifiedVersionWarning(UserWarning):
    """The locator runs on a TensorFlow or Keras it was not verified on."""


def installed_versions() -> dict[str, str]:
    return {"TensorFlow": tf.__version__, "Keras": keras.__version__}


def unverified_versions(installed: dict[str, str] | None = None) -> str | None:
    """One sentence naming the TensorFlow / Keras the locator was not verified on, or None."""
    installed = installed_versions() if installed is None else installed
    other = [
        f"{name} {version}"
        for name, version in installed.items()
        if ".".join(version.split(".")[:2]) not in VERIFIED[name]
    ]
    if not other:
        return None
    verified = " and ".join(f"{name} {' / '.join(v)}" for name, v in VERIFIED.items())
    return (
        f"GradientProbe was verified on {verified}, not on {' and '.join(other)}: it goes on, "
        "but a break may be missed or misplaced if that release moved an API listed in "
        "helpers/diagnosis/probe/internals.py."
    )


def check_versions() -> None:
    """Warn (``UnverifiedVersionWarning``) on an unverified TensorFlow or Keras."""
    message = unverified_versions()
    if message:
        warnings.warn(message, UnverifiedVersionWarning, stacklevel=3)


# -- the private creation counter -----------------------------------------------------------


def creation_order(tensor: Any = None) -> int | None:
    """The creation number of an eager tensor (``tensor._id``), or without ``tensor`` the
    counter's next value (``ops.uid()``): tells whether the loss or a mark was made before or
    after the ``with`` block. None when the internal is gone (the verdict omits the note)."""
    try:
        from tensorflow.python.framework import ops

        number = ops.uid() if tensor is None else getattr(tensor, "_id", None)
    except (ImportError, AttributeError):  # pragma: no cover - TF internals changed
        return None
    return number if isinstance(number, int) else None


# -- patched methods and functions ------------------------------------------------------------

MISSING = object()  # an attribute the owner did not define (removed again on exit)


def eager_tensor_type() -> type:
    return type(tf.constant(0.0))


@functools.cache
def method_owners(names: tuple[str, ...]) -> list[tuple[type, str]]:
    """``(class, method)`` for each of ``names`` on eager tensors, ``tf.Variable`` and
    ``keras.Variable``: the class in the MRO that defines it, each pair once."""
    found: list[tuple[type, str]] = []
    for cls in (eager_tensor_type(), type(tf.Variable(0.0)), keras.Variable):
        for name in names:
            owner = next((c for c in cls.__mro__ if name in c.__dict__), None)
            if owner is not None and (owner, name) not in found:
                found.append((owner, name))
    return found


def array_wrap_owner() -> type:
    """The eager-tensor class that defines ``__array__`` (NumPy looks for
    ``__array_wrap__`` there)."""
    return next(c for c in eager_tensor_type().__mro__ if "__array__" in c.__dict__)


def defined(owner: Any, name: str) -> Any:
    """What ``owner`` itself defines as ``name`` (a class's own attribute, a module's), or
    ``MISSING``."""
    return vars(owner).get(name, MISSING)


@contextlib.contextmanager
def patched(replacements: list[tuple[Any, str, Callable[[Any], Any]]]) -> Iterator[None]:
    """Set ``owner.name = make(original)`` for each ``(owner, name, make)`` (``original``:
    what ``owner`` itself defined, else None), and restore every one on exit, even on error."""
    saved: list[tuple[Any, str, Any]] = []
    try:
        for owner, name, make in replacements:
            original = defined(owner, name)
            saved.append((owner, name, original))
            setattr(owner, name, make(None if original is MISSING else original))
        yield
    finally:
        for owner, name, original in reversed(saved):
            if original is MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


def module_functions(names: tuple[str, ...]) -> list[tuple[Any, str]]:
    """``(module, name)``: ``np.asarray`` and the like, ``tf.stop_gradient``, ``tf.cond``
    (``np.`` or ``tf.`` before the name), wrapped where user code looks them up."""
    modules = {"np": np, "tf": tf}
    return [(modules[name.partition(".")[0]], name.partition(".")[2]) for name in names]


# -- layer.call as an instance attribute ------------------------------------------------------


def has_own_call(layer: keras.layers.Layer) -> bool:
    """Whether ``layer.call`` is already an instance attribute (wrapped, and not restored)."""
    return "call" in vars(layer)


def set_call(layer: keras.layers.Layer, call: Callable[..., Any]) -> None:
    """Shadow the layer's ``call`` with ``call`` (past Keras' attribute tracking)."""
    object.__setattr__(layer, "call", call)


def restore_call(layer: keras.layers.Layer) -> None:
    object.__delattr__(layer, "call")
