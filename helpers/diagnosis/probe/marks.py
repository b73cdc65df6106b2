"""The probe's marks: what a marked value is, and the module-level ``mark`` for model code.

A mark is a named point of the forward pass. Float tensors and variables get a tape of their
own; NumPy arrays, Python numbers and integer tensors are where a path leaves the tape, and
say so.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import keras
import numpy as np
import tensorflow as tf

from helpers.diagnosis.probe.internals import creation_order
from helpers.diagnosis.why_none import is_variable

VARIABLES = "(variables)"
LOSS = "(loss)"

Kind = Literal["float", "integer", "variable", "numpy", "python"]
NO_GRADIENT_KINDS = ("integer", "numpy", "python")
_active: list[Any] = []  # the GradientProbes whose `with` block is running, innermost last


class ProbeError(RuntimeError):
    """The probe was used in a way it cannot answer (outside its block, across a
    ``tf.function`` boundary, twice)."""

    __init__ = Exception.__init__  # lets AutoGraph re-raise it as itself


def mark(name: str, value: Any) -> Any:
    """Record ``value`` (a tensor or a nested list / dict of them) into the probe that is
    recording, and return it unchanged. Does nothing when no probe is recording."""
    return _active[-1].mark(name, value) if _active else value


@dataclass
class Mark:
    """One recorded point: its value, what kind of value it is, and (for a float tensor or a
    variable) a tape that watches only it, so it sees only what comes after the mark."""

    name: str
    kind: Kind
    dtype: str
    value: Any
    note: str = ""
    tape: tf.GradientTape | None = None


def classify(name: str, value: Any) -> Mark:
    """The mark of ``value``; a clear TypeError for what cannot be marked."""
    if is_variable(value):
        return Mark(
            name,
            "variable",
            tf.as_dtype(value.dtype).name,
            value,
            "a variable: the tape sees reads of it, never how its value was "
            "computed (assign / assign_add cut the path). Mark the tensor you "
            "assign instead.",
        )
    if isinstance(value, (np.ndarray, np.generic)):
        return Mark(
            name,
            "numpy",
            np.asarray(value).dtype.name,
            value,
            "a NumPy array: the computation left TensorFlow here (.numpy(), np.*, "
            "model.predict, librosa?), and nothing before it can get a gradient.",
        )
    if isinstance(value, (bool, numbers.Number)):
        return Mark(
            name,
            "python",
            type(value).__name__,
            value,
            "a Python number: the computation left TensorFlow here (float(), "
            "int(), .item(), .numpy()?), and nothing before it can get a gradient.",
        )
    if isinstance(value, keras.KerasTensor):
        raise TypeError(
            f"mark {name!r}: got a symbolic keras.KerasTensor (from keras.Input). "
            "Mark values computed inside the `with` block, e.g. model(x)."
        )
    if isinstance(value, (tf.RaggedTensor, tf.SparseTensor, tf.IndexedSlices)):
        raise TypeError(f"mark {name!r}: got a {type(value).__name__}; mark a dense tensor.")
    if tf.is_tensor(value):
        if value.dtype.is_floating or value.dtype.is_complex:
            return Mark(name, "float", value.dtype.name, value)
        return Mark(
            name,
            "integer",
            value.dtype.name,
            value,
            f"{a_or_an(value.dtype.name)} tensor: integers, booleans and strings carry "
            "no gradient (round, argmax, a cast to int?).",
        )
    raise TypeError(
        f"mark {name!r}: expected a tensor, a variable, a NumPy array, a Python "
        f"number or a list / dict of them, got {type(value).__name__}."
    )


def leaves(name: str, value: Any) -> list[tuple[str, Any]]:
    """``(name, value)``, or for a nested list / dict one ``(name[0], leaf)``,
    ``(name['key'], leaf)`` per leaf; a ValueError for a name that cannot be a mark's."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a mark needs a non-empty name (a str), got {name!r}.")
    if name in (VARIABLES, LOSS):
        raise ValueError(f"{name!r} is reserved for the ends of the path; pick another.")
    nested = isinstance(value, (list, tuple, dict))
    found = keras.tree.flatten_with_path(value) if nested else [((), value)]
    if not found:
        raise ValueError(f"mark {name!r}: the structure holds no tensor.")
    return [(name + "".join(f"[{p!r}]" for p in path), leaf) for path, leaf in found]


def watch_mark(m: Mark, tape: tf.GradientTape, watched: set[Any], begun: int | None) -> None:
    """Watch a float or variable mark on the probe's tape and open its own tape; note a
    float tensor made before the block began (``begun``: the creation counter then)."""
    value = watchable(m.value)
    tape.watch(value)
    watched.add(value.ref())
    m.tape = tf.GradientTape(persistent=True, watch_accessed_variables=False)
    m.tape.__enter__()
    m.tape.watch(value)
    made = creation_order(m.value) if begun is not None else None
    if m.kind == "float" and made is not None and made < begun:
        m.note = "computed before the `with` block began: the tape never saw how it was made."


def same_trace(eager: bool, graph: Any) -> bool:
    """Is this code running where the probe's block runs (eagerly, or in the same trace)?"""
    now = tf.executing_eagerly()
    return now == eager and (now or tf.compat.v1.get_default_graph() is graph)


def check_same_trace(what: str, eager: bool, graph: Any, tensor: Any = None) -> None:
    """A ProbeError, saying what to do, when ``what`` runs outside the probe's trace."""
    if not same_trace(eager, graph):
        now = tf.executing_eagerly()
        raise ProbeError(
            f"{what} ran {'eagerly' if now else 'inside a tf.function'}, but the probe's "
            f"`with` block {'runs eagerly' if eager else 'is in another trace'}. A "
            "probe sees only the trace it was opened in: mark the inputs and outputs of "
            "the tf.function instead, or run it eagerly while you debug "
            "(tf.config.run_functions_eagerly(True)), or put the whole `with` block and "
            "locate() inside one tf.function."
        )
    tensor_graph = getattr(tensor, "graph", None)
    if tensor is not None and not eager and tensor_graph is not None and tensor_graph is not graph:
        raise ProbeError(f"{what}: the loss belongs to another tf.function trace.")


def require(state: str, what: str, *, recording: bool) -> None:
    """A ProbeError when ``probe.<what>()`` is called outside the block (``recording``) or
    before it (not ``recording``); ``state``: new, recording or done."""
    if recording and state != "recording":
        when = "before" if state == "new" else "after"
        raise ProbeError(
            f"probe.{what}() was called {when} the `with GradientProbe() as "
            "probe:` block. The tape records only inside it: call it there."
        )
    if not recording and state == "new":
        raise ProbeError(
            f"probe.{what}() needs a recorded forward pass: run it inside "
            "`with GradientProbe() as probe:` first."
        )


def is_plain_tensor(value: Any) -> bool:
    """A tensor, not a variable (Keras 3 variables pass ``tf.is_tensor``)."""
    return tf.is_tensor(value) and not is_variable(value)


def watchable(value: Any) -> Any:
    """What a tape watches for ``value``: the tf.Variable behind a Keras variable."""
    return value.value if isinstance(value, keras.Variable) else value


def check_sources(sources: Any) -> list[Any]:
    """``sources`` as a list of variables and tensors, or a clear error."""
    if is_variable(sources) or tf.is_tensor(sources):
        raise TypeError("sources must be a list; wrap a single one: [w].")
    if isinstance(sources, (dict, str)) or not isinstance(sources, Sequence):
        raise TypeError(
            f"sources must be a list of variables or tensors, got {type(sources).__name__}."
        )
    sources = list(sources)
    if not sources:
        raise ValueError(
            "the list of sources is empty. If it came from model.trainable_weights, the model "
            "was not built yet when you read it: a Keras layer creates its weights the first "
            "time it is called. Call it once (or give it a keras.Input) first."
        )
    for i, s in enumerate(sources):
        if isinstance(s, keras.KerasTensor):
            raise TypeError(
                f"sources[{i}] is a symbolic KerasTensor (model.inputs?): it never "
                "holds a value. Watch and pass the tensor you feed the model."
            )
        if not (is_variable(s) or tf.is_tensor(s)):
            raise TypeError(
                f"sources[{i}] is a {type(s).__name__}; expected a tf.Variable, "
                "a keras.Variable or a tensor (NumPy: tf.convert_to_tensor it and "
                "probe.watch it inside the block)."
            )
    return sources


def a_or_an(word: str) -> str:
    return f"an {word}" if word.startswith("int") else f"a {word}"


def error_text(error: Exception) -> str:
    """The exception's type and first line, without TensorFlow's node prefixes."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    text = re.sub(r"\{\{[^}]*\}\}\s*", "", text)
    text = re.sub(r"\s*\[Op:[^\]]*\].*$", "", text)
    return f"{type(error).__name__} ({text})" if text else type(error).__name__
