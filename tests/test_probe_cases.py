"""The locator and the gradient report on 15 cases modelled on real public "gradients are
None" reports, reduced to tiny models, with marks where a practitioner would put them.

Each case returns ``(probe, loss, sources, names)``; ``EXPECTED`` holds what the locator
must say (its first break, whether it is intact, the cause of some None sources) and what
the report must say (statuses, and a word of the first hint). The report each case is
modelled on is named in its docstring.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

import helpers  # noqa: F401
from helpers.probe import LOSS, VARIABLES, GradientProbe


def _x(shape=(4, 6), seed=0):
    return tf.constant(np.random.default_rng(seed).normal(size=shape), tf.float32)


def _mlp(*layers, inputs=6, name=None):
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((inputs,)), *layers], name=name)


def predict_inside_the_tape():
    """model.predict returns NumPy (tensorflow/tensorflow#20630, #38751)."""
    model = _mlp(keras.layers.Dense(2))
    with GradientProbe() as probe:
        pred = probe.mark("pred", model.predict(_x(), verbose=0))
        error = probe.mark("error", tf.convert_to_tensor(pred) - 1.0)
        loss = tf.reduce_mean(tf.square(error))
    return probe, loss, model.trainable_variables, None


def model_called_before_the_tape():
    """The forward pass ran before `with` (keras-team/keras-io#406)."""
    model = _mlp(keras.layers.Dense(3, activation="softmax"))
    probs = model(_x())
    with GradientProbe() as probe:
        probs = probe.mark("probs", probs)
        loss = -tf.reduce_mean(tf.math.log(probs[:, 0]))
    return probe, loss, model.trainable_variables, None


def losses_collected_as_python_floats():
    """Per-sample losses appended as float(loss) (tensorflow/tensorflow#30190)."""
    model = _mlp(keras.layers.Dense(1))
    with GradientProbe() as probe:
        y = probe.mark("y_pred", model(_x()))
        losses = probe.mark("losses", [float(tf.square(y[i, 0])) for i in range(4)])
        spread = probe.mark("spread", tf.math.reduce_std(tf.constant(losses)))
        loss = spread
    return probe, loss, model.trainable_variables, None


def numpy_in_the_loss():
    """The loss converts its inputs to NumPy (tensorflow/tensorflow#50111, #36596)."""
    model = _mlp(keras.layers.Dense(2))
    with GradientProbe() as probe:
        y = probe.mark("y_pred", model(_x()))
        loss = tf.constant(np.mean(np.square(y.numpy() - 1.0)))
    return probe, loss, model.trainable_variables, None


def argmax_in_the_loss():
    """Cross-entropy on tf.argmax of the logits (ftramer/ensemble-adv-training#4)."""
    model = _mlp(keras.layers.Dense(3))
    labels = tf.one_hot([0, 1, 2, 0], 3)
    with GradientProbe() as probe:
        logits = probe.mark("logits", model(_x()))
        classes = probe.mark("classes", tf.argmax(logits, axis=1))
        guess = probe.mark("guess", tf.one_hot(classes, 3))
        loss = keras.losses.CategoricalCrossentropy()(labels, guess)
    return probe, loss, model.trainable_variables, None


def input_gradient_never_watched():
    """Saliency: d loss / d input is None (tensorflow/tensorflow#40652, #29942)."""
    model = _mlp(keras.layers.Dense(3, activation="softmax"))
    image = _x((1, 6))
    with GradientProbe() as probe:
        probs = probe.mark("probs", model(image))
        loss = probs[0, 1]
    return probe, loss, [image], ["image"]


def watch_model_inputs():
    """tape.watch(model.inputs), symbolic in Keras 3 (tensorflow/tensorflow#31264)."""
    model = _mlp(keras.layers.Dense(2))
    with GradientProbe() as probe:
        loss = tf.reduce_sum(probe.mark("out", model(_x())))
    return probe, loss, list(model.inputs), None


def gradient_for_token_ids():
    """Gradient with respect to integer token ids of an Embedding (attribution scripts)."""
    keras.utils.set_random_seed(0)
    embed = keras.layers.Embedding(10, 4)
    ids = tf.constant([[1, 5, 2]])
    with GradientProbe() as probe:
        vectors = probe.mark("vectors", embed(ids))
        loss = tf.reduce_sum(tf.square(vectors))
    return probe, loss, [ids, *embed.trainable_variables], ["ids", "embeddings"]


def batch_norm_in_model_variables():
    """tape.gradient(loss, model.variables) with BatchNorm (tensorflow/tensorflow#26404)."""
    model = _mlp(keras.layers.Dense(4), keras.layers.BatchNormalization(), keras.layers.Dense(1))
    with GradientProbe() as probe:
        out = probe.mark("out", model(_x(), training=True))
        loss = tf.reduce_mean(tf.square(out))
    return probe, loss, model.variables, None


class _NoisyDense(keras.layers.Layer):
    """Noisy weights built once in build(), not per call (tensorflow/tensorflow#32729)."""

    def build(self, input_shape):
        self.mu = self.add_weight(shape=(input_shape[-1], 2), name="mu")
        self.sigma = self.add_weight(shape=(input_shape[-1], 2), name="sigma")
        self.kernel = self.mu + self.sigma * tf.random.normal((input_shape[-1], 2), seed=1)

    def call(self, x):
        return x @ self.kernel


def weights_derived_in_build():
    keras.utils.set_random_seed(0)
    layer = _NoisyDense(name="noisy")
    layer(_x())
    with GradientProbe() as probe:
        q = probe.mark("q", layer(_x()))
        loss = tf.reduce_mean(tf.square(q))
    return probe, loss, layer.trainable_variables, None


class _ChainDropped(keras.Model):
    """call() feeds every layer the input, so only the last counts
    (tensorflow/tensorflow#36880)."""

    def __init__(self):
        super().__init__(name="chain")
        self.first = keras.layers.Dense(6, name="first")
        self.last = keras.layers.Dense(1, name="last")

    def call(self, x):
        out = self.first(x)
        return self.last(x) + 0.0 * tf.stop_gradient(out)


def layer_output_dropped():
    keras.utils.set_random_seed(0)
    model = _ChainDropped()
    model(_x())
    with GradientProbe() as probe:
        loss = tf.reduce_mean(tf.square(probe.mark("out", model(_x()))))
    return probe, loss, model.trainable_variables, None


def variable_rebound_to_a_tensor():
    """`w = w - lr * grad` instead of assign_sub (tensorflow/tensorflow#29942 family)."""
    w = tf.Variable(0.5, name="w")
    w = w - 0.1  # the update that made a tensor of it
    with GradientProbe() as probe:
        out = probe.mark("out", _x() * w)
        loss = tf.reduce_mean(tf.square(out))
    return probe, loss, [w], ["w"]


def lambda_layer_thresholds():
    """A Lambda layer with a non-differentiable threshold (tensorflow/tensorflow#42311)."""
    front = keras.layers.Dense(4, name="front")
    keras.utils.set_random_seed(0)
    model = _mlp(front, keras.layers.Lambda(lambda t: tf.cast(t > 0.0, tf.float32)),
                 keras.layers.Dense(1, name="back"), name="lam")
    with GradientProbe() as probe:
        hidden = probe.mark("hidden", model.layers[0](_x()))
        gated = probe.mark("gated", model.layers[1](hidden))
        out = probe.mark("out", model.layers[2](gated))
        loss = tf.reduce_mean(tf.square(out - 1.0))
    return probe, loss, model.trainable_variables, None


class _Buffered(keras.layers.Layer):
    """Writes its input into a variable and returns the variable (tensorflow/tensorflow#34549
    family: stateful assignment inside call)."""

    def build(self, input_shape):
        self.buffer = self.add_weight(shape=(4, input_shape[-1]), trainable=False,
                                      initializer="zeros", name="buffer")

    def call(self, x):
        self.buffer.assign(x)
        return self.buffer * 1.0


def assign_inside_call():
    model = _mlp(keras.layers.Dense(3, name="enc"))
    buffered = _Buffered()
    with GradientProbe() as probe:
        hidden = probe.mark("hidden", model(_x()))
        out = probe.mark("out", buffered(hidden))
        loss = tf.reduce_mean(tf.square(out))
    return probe, loss, model.trainable_variables, None


def softmax_output_with_keras_loss():
    """Keras 3 losses read the logits behind a softmax output (issue 10, defect 1): healthy."""
    model = _mlp(keras.layers.Dense(5, activation="relu"),
                 keras.layers.Dense(3, activation="softmax"))
    with GradientProbe() as probe:
        probs = probe.mark("probs", model(_x()))
        loss = keras.losses.CategoricalCrossentropy()(tf.one_hot([0, 1, 2, 1], 3), probs)
    return probe, loss, model.trainable_variables, None


# case: (first break or None, intact, causes that must appear, report statuses, hint word)
EXPECTED = {
    predict_inside_the_tape: ((VARIABLES, "pred"), False, set(), "all none", "cut:"),
    model_called_before_the_tape: ((VARIABLES, "probs"), False, {"unread"}, "all none",
                                   "cut:"),
    losses_collected_as_python_floats: (("y_pred", "spread"), False, set(), "all none",
                                        "cut:"),
    numpy_in_the_loss: (("y_pred", LOSS), False, set(), "all none", "cut:"),
    argmax_in_the_loss: (("logits", "guess"), False, set(), "all none", "cut:"),
    input_gradient_never_watched: ((VARIABLES, "probs"), False, {"unwatched"}, "all none",
                                   "tape.watch"),
    watch_model_inputs: (TypeError, None, set(), None, None),
    gradient_for_token_ids: ((VARIABLES, "vectors"), False, {"integer"}, "some none",
                             "integer"),
    batch_norm_in_model_variables: (None, False, {"untrainable"}, "some none",
                                    "not trainable"),
    weights_derived_in_build: ((VARIABLES, "q"), False, {"unread"}, "all none", "cut:"),
    layer_output_dropped: ((VARIABLES, "out"), False, {"cut"}, "some none", "not used"),
    variable_rebound_to_a_tensor: ((VARIABLES, "out"), False, {"unwatched"}, "all none",
                                   "tape.watch"),
    lambda_layer_thresholds: (("hidden", "gated"), False, set(), "some none", "not used"),
    assign_inside_call: (("hidden", "out"), False, set(), "all none", "cut:"),
    softmax_output_with_keras_loss: (None, True, set(), "all ok", None),
}


@pytest.mark.parametrize("case", list(EXPECTED), ids=lambda case: case.__name__)
def test_locator_and_report_on_a_real_case(case):
    broken, intact, causes, statuses, hint = EXPECTED[case]
    probe, loss, sources, names = case()
    if broken is TypeError:
        with pytest.raises(TypeError, match="model.inputs"):
            probe.locate(loss, sources, names)
        return
    where = probe.locate(loss, sources, names)
    assert where.broken_between == broken, repr(where)
    assert where.intact == intact
    assert causes <= set(where.causes.values())
    report = probe.report(loss, sources, names)
    kind, status = statuses.split()
    assert (report.all(status) if kind == "all" else report.any(status)
            and not report.all(status)), report
    assert where.intact == (not report.any("none"))  # the verdict agrees with the report
    first_hint = next((h for h in report.hints if h), None)
    assert (hint is None and first_hint is None) or hint in first_hint
