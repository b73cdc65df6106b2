"""helpers.probe.keras_marks: ``probe.mark_layers(model)`` marks every layer's output by its
path, on Sequential, Functional and subclassed models with nested sub-models, eagerly and in
``tf.function``; leaves the model exactly as it was, also after an error; and gives the
same answer as the hand-placed marks of every Keras case of the field guide (notebook 05)."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

import helpers  # noqa: F401
from helpers.denoiser import make_frame_denoiser
from helpers.probe import LOSS, VARIABLES, GradientProbe, ProbeError
from helpers.probe.keras_marks import layers_by_path


def _data(shape=(4, 6), seed=0):
    return tf.constant(np.random.default_rng(seed).normal(size=shape), tf.float32)


class _Stop(keras.layers.Layer):
    def call(self, x):
        return tf.stop_gradient(x)


def _inner():
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(4, name="s1"),
                             _Stop(name="stop"), keras.layers.Dense(4, name="s2")],
                            name="inner")


def sequential():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((6,)), keras.layers.Dense(4, name="enc"), _inner(),
                             keras.layers.Dense(2, name="dec")], name="net")


def functional():
    keras.utils.set_random_seed(0)
    inputs = keras.Input((6,))
    hidden = _inner()(keras.layers.Dense(4, name="enc")(inputs))
    return keras.Model(inputs, keras.layers.Dense(2, name="dec")(hidden), name="net")


class _Subclassed(keras.Model):
    def __init__(self):
        super().__init__(name="net")
        self.enc = keras.layers.Dense(4, name="enc")
        self.inner = _inner()
        self.dec = keras.layers.Dense(2, name="dec")

    def call(self, x):
        return self.dec(self.inner(self.enc(x)))


def subclassed():
    keras.utils.set_random_seed(0)
    model = _Subclassed()
    model(_data())
    return model


MODELS = [sequential, functional, subclassed]


def _state(model):
    """What must be the same after the block: the attributes, call, the weights' values."""
    layers = [layer for _, layer in layers_by_path(model)]
    return ([sorted(vars(layer)) for layer in layers], [layer.call for layer in layers],
            [v.numpy().copy() for v in model.weights])


def _assert_unchanged(model, before):
    attributes, calls, weights = _state(model)
    assert attributes == before[0]
    assert calls == before[1] and not any("call" in vars(layer)
                                          for _, layer in layers_by_path(model))
    for now, then in zip(weights, before[2]):
        np.testing.assert_array_equal(now, then)


@pytest.mark.parametrize("make", MODELS, ids=lambda make: make.__name__)
def test_names_the_layer_after_which_the_path_breaks_eagerly(make):
    model = make()
    before = _state(model)
    with GradientProbe() as probe:
        paths = probe.mark_layers(model)
        loss = tf.reduce_sum(model(_data()))
    where = probe.locate(loss, model.trainable_variables)
    assert "net/inner/stop" in paths and "net/enc" in paths
    assert where.broken_between == ("net/inner/s1", "net/inner/stop")
    assert where.names[:3] == ["net/enc", "net/inner/s1", "net/inner/stop"]  # forward order
    _assert_unchanged(model, before)


@pytest.mark.parametrize("make", MODELS, ids=lambda make: make.__name__)
def test_names_the_layer_inside_tf_function(make):
    model = make()
    before = _state(model)
    verdicts = []

    @tf.function
    def step(x):
        with GradientProbe() as probe:
            probe.mark_layers(model)
            loss = tf.reduce_sum(model(x))
        verdicts.append(probe.locate(loss, model.trainable_variables))
        return loss

    step(_data())
    assert verdicts[0].traced
    assert verdicts[0].broken_between == ("net/inner/s1", "net/inner/stop")
    _assert_unchanged(model, before)


@pytest.mark.parametrize("make", MODELS, ids=lambda make: make.__name__)
def test_the_model_is_unchanged_after_an_error_in_the_block(make):
    model = make()
    before = _state(model)
    with pytest.raises(RuntimeError, match="inside the block"):
        with GradientProbe() as probe:
            probe.mark_layers(model)
            model(_data())
            raise RuntimeError("an error inside the block")
    _assert_unchanged(model, before)
    out = model(_data())  # and it still runs, unmarked
    assert out.shape == (4, 2)


def test_a_healthy_model_is_intact_and_a_shared_layer_is_marked_per_call():
    keras.utils.set_random_seed(0)
    shared = keras.layers.Dense(6, activation="tanh", name="shared")
    inputs = keras.Input((6,))
    model = keras.Model(inputs, shared(shared(inputs)), name="twice")
    with GradientProbe() as probe:
        probe.mark_layers(model)
        loss = tf.reduce_sum(model(_data()))
    where = probe.locate(loss, model.trainable_variables)
    assert where.intact and where.breaks == []
    assert where.names == ["twice/shared", "twice/shared (call 2)", "twice"]


def test_bad_uses():
    with pytest.raises(ProbeError, match="before the `with"):
        GradientProbe().mark_layers(sequential())
    with GradientProbe() as probe, pytest.raises(TypeError, match="Keras model or layer"):
        probe.mark_layers(lambda x: x)
    model = sequential()
    with GradientProbe() as probe:
        probe.mark_layers(model)
        with pytest.raises(ValueError, match="twice"):
            probe.mark_layers(model)
    assert not any("call" in vars(layer) for _, layer in layers_by_path(model))


def test_model_predict_inside_the_block_is_not_marked_and_its_exit_is_named():
    model = sequential()
    with GradientProbe() as probe:
        probe.mark_layers(model)
        predicted = model.predict(_data(), verbose=0)  # runs in its own tf.function
        loss = tf.reduce_sum(tf.convert_to_tensor(predicted))
    assert probe.marks == []
    where = probe.locate(loss, model.trainable_variables)
    assert where.broken_between == (VARIABLES, ".numpy() (conversion 1)")


# -- every Keras case of the field guide: hand-placed marks and auto-marks agree --------------
FRAMES = _data((8, 512)), _data((8, 512), seed=1)


def _mse(a, b):
    return tf.reduce_mean(tf.square(a - b))


def _guide_case(name, auto):
    """One of notebook 05's Keras cases, with its own marks (auto=False) or none but
    ``probe.mark_layers(model)``. Returns the verdict."""
    noisy, clean = FRAMES
    model = make_frame_denoiser()
    mark = (lambda n, v: v) if auto else None
    with GradientProbe() as probe:
        if auto:
            probe.mark_layers(model)
        else:
            mark = probe.mark
        if name == "healthy":
            hidden = mark("hidden", model.get_layer("encoder")(mark("noisy", noisy)))
            loss = _mse(mark("denoised", model.get_layer("decoder")(hidden)), clean)
        elif name == "numpy overlap-add":
            out = mark("denoised", model(noisy))
            audio = mark("audio", tf.convert_to_tensor(out.numpy() * 0.5))
            loss = _mse(audio, clean)
        elif name == "pcm":
            out = mark("denoised", model(noisy))
            pcm = mark("pcm", tf.cast(tf.round(out * 32767.0), tf.int16))
            loss = _mse(mark("decoded", tf.cast(pcm, tf.float32) / 32767.0), clean)
        elif name == "adjust_contrast":
            out = mark("denoised", model(noisy))
            loss = tf.reduce_mean(mark("stretched", tf.image.adjust_contrast(out[..., None],
                                                                             2.0)))
        elif name == "assign":
            buffer = tf.Variable(tf.zeros((8, 512)), trainable=False)
            buffer.assign(mark("denoised", model(noisy)))
            loss = _mse(mark("buffer", buffer), clean)
        elif name == "stop_gradient":
            hidden = mark("hidden", model.get_layer("encoder")(noisy))
            frozen = mark("hidden_stopped", tf.stop_gradient(hidden))
            loss = _mse(mark("denoised", model.get_layer("decoder")(frozen)), clean)
        elif name == "loss after the block":
            out = mark("denoised", model(noisy))
        elif name == "librosa (.numpy())":
            out = mark("denoised", model(noisy))
            loss = _mse(tf.constant(mark("mel_np", np.abs(out.numpy()))), clean)
    if name == "loss after the block":
        loss = _mse(out, clean)
    return probe.locate(loss, model.trainable_weights)


# manual break -> the same place in layer paths (the model's output is "denoiser")
GUIDE = {
    "healthy": (None, None),
    "numpy overlap-add": (("denoised", "audio"), ("denoiser", LOSS)),
    "pcm": (("denoised", "decoded"), ("denoiser", LOSS)),
    "adjust_contrast": (("denoised", "stretched"), ("denoiser", LOSS)),
    "assign": (("denoised", "buffer"), ("denoiser", LOSS)),
    "stop_gradient": (("hidden", "hidden_stopped"), ("denoiser/encoder", "denoiser/decoder")),
    "loss after the block": (("denoised", LOSS), ("denoiser", LOSS)),
    "librosa (.numpy())": (("denoised", LOSS), ("denoiser", LOSS)),
}


@pytest.mark.parametrize("name", list(GUIDE))
def test_field_guide_cases_agree_with_hand_placed_marks(name):
    manual_break, auto_break = GUIDE[name]
    manual, auto = _guide_case(name, auto=False), _guide_case(name, auto=True)
    assert manual.broken_between == manual_break, repr(manual)
    assert auto.broken_between == auto_break, repr(auto)
    assert auto.intact == manual.intact and auto.causes == manual.causes
    if manual_break is not None:  # the same layer: the manual start is that layer's output
        assert manual_break[0] in {"denoised": "denoiser", "hidden": "denoiser/encoder"}
        assert auto_break[0] == {"denoised": "denoiser",
                                 "hidden": "denoiser/encoder"}[manual_break[0]]
