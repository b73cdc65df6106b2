"""Auto-marks for Keras models: mark every layer's output by its path, without editing the
model's code.

``marking_layers(probe, model)`` wraps the ``call`` of the model and of every layer inside it
(nested layers and sub-models included) with an instance attribute that marks the output
(``internals.set_call``),
and removes those attributes on exit, even on error: afterwards the model has the same
weights, the same ``call`` and no attribute it did not have. Works for Sequential, Functional
and subclassed models, eagerly and inside ``tf.function`` (Keras calls ``layer.call``
through ``layer.__call__`` in every case).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import keras
import tensorflow as tf

from helpers.diagnosis.probe.internals import has_own_call, restore_call, set_call


def layers_by_path(model: keras.layers.Layer) -> list[tuple[str, keras.layers.Layer]]:
    """``(path, layer)`` for the model and every layer inside it, depth first; the path joins
    the layers' names with ``/`` (``denoiser/encoder/dense``). A layer reached twice (shared)
    is listed once."""
    if not isinstance(model, keras.layers.Layer):
        raise TypeError(f"mark_layers expects a Keras model or layer, got {type(model).__name__}.")
    found: list[tuple[str, keras.layers.Layer]] = []
    seen: set[int] = set()

    def visit(layer: keras.layers.Layer, path: str) -> None:
        if id(layer) in seen:
            return
        seen.add(id(layer))
        found.append((path, layer))
        for child in _children(layer):
            visit(child, f"{path}/{child.name}")

    visit(model, model.name)
    return found


def _children(layer: keras.layers.Layer) -> list[keras.layers.Layer]:
    if isinstance(layer, keras.layers.RNN):
        return []  # its cell runs once per time step (and once more to build): too many marks
    listed = getattr(layer, "layers", None)  # a model lists its own layers
    if isinstance(listed, (list, tuple)):
        children = list(listed)
    else:  # a layer keeps its sublayers as (public) attributes
        children = []
        for key, value in vars(layer).items():
            items = (
                value
                if isinstance(value, (list, tuple))
                else value.values()
                if isinstance(value, dict)
                else [value]
            )
            children += [
                item
                for item in items
                if not key.startswith("_")
                and isinstance(item, keras.layers.Layer)
                and item is not layer
                and all(item is not c for c in children)
            ]
    return [c for c in children if not isinstance(c, keras.layers.InputLayer)]


@contextlib.contextmanager
def marking_layers(
    mark: Callable[[str, Any], Any], model: keras.layers.Layer, skip: Callable[[], bool]
) -> Iterator[list[str]]:
    """While open, every call of a layer of ``model`` passes its output to ``mark(path, out)``
    (``path (call 2)`` for a second call), unless ``skip()``. Yields the layer paths."""
    layers = layers_by_path(model)
    calls: dict[str, int] = {}
    wrapped = []
    try:
        for path, layer in layers:
            if has_own_call(layer):
                raise ValueError(
                    f"layer {path!r} already has its call wrapped (mark_layers "
                    "on the same model twice?)."
                )
            set_call(layer, _marked(layer.call, path, mark, skip, calls))
            wrapped.append(layer)
        yield [path for path, _ in layers]
    finally:
        for layer in wrapped:
            restore_call(layer)


def _marked(
    call: Callable[..., Any],
    path: str,
    mark: Callable[[str, Any], Any],
    skip: Callable[[], bool],
    calls: dict[str, int],
) -> Callable[..., Any]:
    def marked_call(*args: Any, **kwargs: Any) -> Any:
        out = call(*args, **kwargs)
        leaves = keras.tree.flatten(out)
        if skip() or not leaves or not all(_markable(t) for t in leaves):
            return out
        calls[path] = calls.get(path, 0) + 1
        return mark(path if calls[path] == 1 else f"{path} (call {calls[path]})", out)

    marked_call.__wrapped__ = call  # type: ignore[attr-defined]
    return marked_call


def _markable(value: Any) -> bool:
    return (
        tf.is_tensor(value)
        and not isinstance(value, keras.KerasTensor)
        and not isinstance(value, (tf.RaggedTensor, tf.SparseTensor))
    )
