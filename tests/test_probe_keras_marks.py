"""helpers.diagnosis.probe.keras_marks:
``probe.mark_layers(model)`` marks every layer's output by its
path, on Sequential, Functional and subclassed models with nested sub-models, eagerly and in
``tf.function``; leaves the model exactly as it was, also after an error; and gives the
same answer as the hand-placed marks of every Keras case of the field guide (notebook 05)."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from probe_cases import DerivedKernel

from helpers.diagnosis.probe import LOSS, VARIABLES, GradientProbe, ProbeError
from helpers.diagnosis.probe.keras_marks import layers_by_path
from helpers.models import make_dense_frame_denoiser as dense


def _data(shape=(4, 6), seed=0):
    return tf.constant(np.random.default_rng(seed).normal(size=shape), tf.float32)


class _Stop(keras.layers.Layer):
    def call(self, x):
        return tf.stop_gradient(x)


def _inner():
    return keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(4, name="s1"),
            _Stop(name="stop"),
            keras.layers.Dense(4, name="s2"),
        ],
        name="inner",
    )


def sequential():
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((6,)),
            keras.layers.Dense(4, name="enc"),
            _inner(),
            keras.layers.Dense(2, name="dec"),
        ],
        name="net",
    )


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
    return (
        [sorted(vars(layer)) for layer in layers],
        [layer.call for layer in layers],
        [v.numpy().copy() for v in model.weights],
    )


def _assert_unchanged(model, before):
    attributes, calls, weights = _state(model)
    assert attributes == before[0]
    assert calls == before[1] and not any(
        "call" in vars(layer) for _, layer in layers_by_path(model)
    )
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
    assert where.broken_between == (VARIABLES, "predict() (conversion 1)")  # the call named


# -- every Keras case of the field guide: hand-placed marks and auto-marks agree --------------
FRAMES = _data((8, 512)), _data((8, 512), seed=1)


def _mse(a, b):
    return tf.reduce_mean(tf.square(a - b))


class _OutputGain(keras.layers.Layer):
    def build(self, input_shape):
        self.gain = self.add_weight(shape=(), initializer="ones", name="gain", trainable=False)

    def call(self, x):
        return self.gain * x


def _gained():
    return keras.Sequential([dense(), _OutputGain(name="output")], name="gained")


def _batch_norm():
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((512,)),
            keras.layers.Dense(16, name="encoder"),
            keras.layers.BatchNormalization(name="norm"),
            keras.layers.Dense(512, name="decoder"),
        ],
        name="bn_denoiser",
    )


def _unit_norm():
    keras.utils.set_random_seed(0)
    layer = DerivedKernel(512, name="unit_norm")
    layer.build((None, 512))
    return layer


def _early(model):
    _EARLY[model.name] = model(FRAMES[0])


_EARLY: dict[str, tf.Tensor] = {}


def _body(name, mark, model):
    """Notebook 05's code for one case; ``mark`` is probe.mark, or a no-op with auto-marks."""
    noisy, clean = FRAMES
    if name == "healthy":
        hidden = mark("hidden", model.get_layer("encoder")(mark("noisy", noisy)))
        return _mse(mark("denoised", model.get_layer("decoder")(hidden)), clean)
    if name in ("stop_gradient", "stop_gradient in tf.function"):
        frozen = mark(
            "hidden_stopped", tf.stop_gradient(mark("hidden", model.get_layer("encoder")(noisy)))
        )
        return _mse(mark("denoised", model.get_layer("decoder")(frozen)), clean)
    if name == "forward pass before the block":
        return _mse(mark("denoised", _EARLY[model.name]), clean)
    out = mark("denoised", model(noisy, training=True) if name == "batch norm" else model(noisy))
    if name == "loss after the block":
        return out  # the loss is computed from it after the block
    if name == "numpy overlap-add":
        return _mse(mark("audio", tf.convert_to_tensor(out.numpy() * 0.5)), clean)
    if name == "pcm":
        pcm = mark("pcm", tf.cast(tf.round(out * 32767.0), tf.int16))
        return _mse(mark("decoded", tf.cast(pcm, tf.float32) / 32767.0), clean)
    if name == "adjust_contrast":
        return tf.reduce_mean(mark("stretched", tf.image.adjust_contrast(out[..., None], 2.0)))
    if name == "assign":
        buffer = tf.Variable(tf.zeros((8, 512)), trainable=False)
        buffer.assign(out)
        return _mse(mark("buffer", buffer), clean)
    if name == "librosa (.numpy())":
        return _mse(tf.constant(mark("mel_np", np.abs(out.numpy()))), clean)
    if name == "tf.cond on the energy":
        energy = mark("energy", tf.reduce_mean(tf.square(out)))
        return tf.cond(energy < 0.0, lambda: energy, lambda: tf.constant(0.0))
    return _mse(out, clean)  # gain, batch norm, derived weights, input never watched


# case: (model, sources, before the block, manual break, auto break); the model's output layer
# is "dense_frame_denoiser", so a manual break after 'denoised' is a break after that layer
# with auto-marks
GUIDE = {
    "healthy": (dense, None, None, None, None),
    "numpy overlap-add": (dense, None, None, ("denoised", "audio"), ("dense_frame_denoiser", LOSS)),
    "pcm": (dense, None, None, ("denoised", "decoded"), ("dense_frame_denoiser", LOSS)),
    "adjust_contrast": (
        dense,
        None,
        None,
        ("denoised", "stretched"),
        ("dense_frame_denoiser", LOSS),
    ),
    "assign": (dense, None, None, ("denoised", "buffer"), ("dense_frame_denoiser", LOSS)),
    "loss after the block": (dense, None, None, ("denoised", LOSS), ("dense_frame_denoiser", LOSS)),
    "librosa (.numpy())": (dense, None, None, ("denoised", LOSS), ("dense_frame_denoiser", LOSS)),
    "stop_gradient": (
        dense,
        None,
        None,
        ("hidden", "hidden_stopped"),
        ("dense_frame_denoiser/encoder", "dense_frame_denoiser/decoder"),
    ),
    "stop_gradient in tf.function": (
        dense,
        None,
        None,
        ("hidden", "hidden_stopped"),
        ("dense_frame_denoiser/encoder", "dense_frame_denoiser/decoder"),
    ),
    "gain not trainable": (_gained, "all", None, None, None),
    "batch norm": (_batch_norm, "all", None, None, None),
    "derived weights in build()": (
        _unit_norm,
        None,
        None,
        (VARIABLES, "denoised"),
        (VARIABLES, "unit_norm"),
    ),
    "forward pass before the block": (
        dense,
        None,
        _early,
        (VARIABLES, "denoised"),
        (VARIABLES, LOSS),
    ),
    "input never watched": (
        dense,
        "input",
        None,
        ("noisy", "denoised"),
        ("noisy", "dense_frame_denoiser/encoder"),
    ),
    "tf.cond on the energy": (dense, None, None, ("energy", LOSS), ("dense_frame_denoiser", LOSS)),
}


def _guide_case(name, auto):
    """One of notebook 05's Keras cases, with its hand-placed marks, or with none but
    ``probe.mark_layers(model)``. Returns the verdict."""
    make, which, before, _, _ = GUIDE[name]
    model = make()
    sources = {"all": model.weights, "input": [FRAMES[0]]}.get(which, model.trainable_weights)
    if before:
        before(model)

    def step():
        with GradientProbe() as probe:
            if auto:
                probe.mark_layers(model)
            loss = _body(name, (lambda n, v: v) if auto else probe.mark, model)
        if name == "loss after the block":
            loss = _mse(loss, FRAMES[1])
        return probe.locate(loss, sources, names=["noisy"] if which == "input" else None)

    if name.endswith("tf.function"):
        found = []
        tf.function(lambda: found.append(step()), autograph=False)()
        return found[0]
    return step()


@pytest.mark.parametrize("name", list(GUIDE))
def test_field_guide_cases_agree_with_hand_placed_marks(name):
    *_, manual_break, auto_break = GUIDE[name]
    manual, auto = _guide_case(name, auto=False), _guide_case(name, auto=True)
    assert manual.broken_between == manual_break, repr(manual)
    assert auto.broken_between == auto_break, repr(auto)
    assert auto.intact == manual.intact and auto.causes == manual.causes
    if manual_break is not None:  # the same place: the manual start is that layer's output
        same = {
            "denoised": "dense_frame_denoiser",
            "hidden": "dense_frame_denoiser/encoder",
            "energy": "dense_frame_denoiser",
            VARIABLES: VARIABLES,
            "noisy": "noisy",  # the input, a tensor source: named
        }
        assert auto_break[0] == same[manual_break[0]]


# -- a variable assigned inside a layer's call: the cause named with auto-marks too ---------
class _AutoGain(keras.layers.Layer):
    """Writes a gain computed from its input into a variable, and returns the variable's
    value: the path goes through gains.assign()."""

    def build(self, input_shape):
        self.gains = self.add_weight(
            shape=(input_shape[-1],), initializer="ones", trainable=False, name="gains"
        )

    def call(self, x):
        self.gains.assign(tf.reduce_mean(tf.abs(x), axis=0))
        return tf.ones_like(x) * self.gains


def _gain_model():
    keras.utils.set_random_seed(0)
    layers = [keras.layers.Dense(4, name="enc"), _AutoGain(name="agc"), keras.layers.Dense(2)]
    return keras.Sequential([keras.Input((6,)), *layers], name="net")


def test_an_assignment_inside_a_layer_is_named_with_auto_marks_as_with_hand_marks():
    model = _gain_model()
    with GradientProbe() as probe:
        probe.mark_layers(model)
        loss = tf.reduce_sum(model(_data()))
    auto = probe.locate(loss, model.trainable_variables)
    model = _gain_model()
    with GradientProbe() as probe:
        hidden = probe.mark("hidden", model.get_layer("enc")(_data()))
        gained = model.get_layer("agc")(hidden)
        probe.mark("gains", model.get_layer("agc").gains)
        loss = tf.reduce_sum(model.layers[-1](gained))
    manual = probe.locate(loss, model.trainable_variables)
    assert auto.broken_between == ("net/enc", "net/agc")
    assert manual.broken_between == ("hidden", "gains")
    assert auto.causes == manual.causes == {"net/enc/kernel": "cut", "net/enc/bias": "cut"}
    cause = "assign / assign_add cut the path"
    for where in (auto, manual):
        lines = where.details[where.broken_between]
        assert sum(cause in line for line in lines) == 1, lines
    assert "only through 'gains.assign() (assignment 1)'" in repr(auto)
