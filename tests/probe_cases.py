"""Cases for the locator (used by tests/test_probe_locate.py), not a test module itself.

``PUBLIC``: the course's 15 cases modelled on real public "gradients are None" reports,
reduced to tiny models, with marks where a practitioner would put them. Each returns
``(probe, loss, sources, names)``; ``PUBLIC`` holds what the locator must say (its first
break, whether it is intact, the cause of some None sources) and what the report must say
(statuses, and a word of the first hint). The report each case is modelled on is named in
its docstring.

``ASIDE``: a second set in the manner of the team's held-aside set (which is not in this
repository): more reduced public reports, each a way the locator used to go wrong or crash,
and healthy controls that must come out intact with no break. ``ASIDE`` holds the first
break (None: no break), whether the path is intact, causes that must appear, and words that
must not appear in the verdict.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from helpers.diagnosis.probe import LOSS, VARIABLES, GradientProbe


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
    model = _mlp(
        front,
        keras.layers.Lambda(lambda t: tf.cast(t > 0.0, tf.float32)),
        keras.layers.Dense(1, name="back"),
        name="lam",
    )
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
        self.buffer = self.add_weight(
            shape=(4, input_shape[-1]), trainable=False, initializer="zeros", name="buffer"
        )

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
    """Keras 3 losses read the logits behind a softmax output: healthy."""
    model = _mlp(
        keras.layers.Dense(5, activation="relu"), keras.layers.Dense(3, activation="softmax")
    )
    with GradientProbe() as probe:
        probs = probe.mark("probs", model(_x()))
        loss = keras.losses.CategoricalCrossentropy()(tf.one_hot([0, 1, 2, 1], 3), probs)
    return probe, loss, model.trainable_variables, None


# case: (first break or None, intact, causes that must appear, report statuses, hint word); a
# break from a tensor source starts at its name, as the text says
PUBLIC = {
    predict_inside_the_tape: ((VARIABLES, "pred"), False, set(), "all none", "cut:"),
    model_called_before_the_tape: ((VARIABLES, "probs"), False, {"unread"}, "all none", "cut:"),
    losses_collected_as_python_floats: (("y_pred", "spread"), False, set(), "all none", "cut:"),
    numpy_in_the_loss: (("y_pred", LOSS), False, set(), "all none", "cut:"),
    argmax_in_the_loss: (("logits", "guess"), False, set(), "all none", "cut:"),
    input_gradient_never_watched: (
        ("image", "probs"),
        False,
        {"unwatched"},
        "all none",
        "tape.watch",
    ),
    watch_model_inputs: (TypeError, None, set(), None, None),
    gradient_for_token_ids: (("ids", "vectors"), False, {"integer"}, "some none", "integer"),
    batch_norm_in_model_variables: (None, False, {"untrainable"}, "some none", "not trainable"),
    weights_derived_in_build: ((VARIABLES, "q"), False, {"unread"}, "all none", "cut:"),
    layer_output_dropped: ((VARIABLES, "out"), False, {"cut"}, "some none", "not used"),
    variable_rebound_to_a_tensor: (
        ("w", "out"),
        False,
        {"unwatched"},
        "all none",
        "tape.watch",
    ),
    lambda_layer_thresholds: (("hidden", "gated"), False, set(), "some none", "not used"),
    assign_inside_call: (("hidden", "out"), False, set(), "all none", "cut:"),
    softmax_output_with_keras_loss: (None, True, set(), "all ok", None),
}


# -- the second set: reduced public reports the locator used to miss, and healthy controls ----
def _seq(*layers, inputs=6, name="seq"):
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((inputs,)), *layers], name=name)


def watched_integer_token_ids():
    """Saliency on token ids: `tape.watch(ids)` on an int32 tensor (tensorflow/tensorflow
    #35212 family). Used to be reported as "the variables"."""
    keras.utils.set_random_seed(0)
    embed = keras.layers.Embedding(10, 4)
    ids = tf.constant([[1, 5, 2]])
    with GradientProbe() as probe:
        probe.watch(ids)
        vectors = probe.mark("vectors", embed(ids))
        loss = tf.reduce_sum(tf.square(vectors))
    return probe, loss, [ids], ["token_ids"]


class DerivedKernel(keras.layers.Layer):
    """Weight normalisation done wrong: the unit-norm kernel is computed once, in build()
    (tensorflow/addons#1017 family)."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.v = self.add_weight(shape=(input_shape[-1], self.units), name="v")
        self.kernel = self.v / tf.norm(self.v)

    def call(self, x):
        return x @ self.kernel


def derived_weights_after_a_healthy_layer():
    """Weights derived in build(), behind a healthy layer, every layer auto-marked. Used to
    name the healthy layer before it."""
    model = _seq(keras.layers.Dense(5, name="front"), DerivedKernel(3, name="derived"))
    with GradientProbe() as probe:
        probe.mark_layers(model)
        loss = tf.reduce_mean(tf.square(model(_x())))
    return probe, loss, model.trainable_variables, None


def _before_after(op):
    """A Dense layer's output marked 'before', ``op`` of it marked 'after', their sum."""
    model = _seq(keras.layers.Dense(3))
    with GradientProbe() as probe:
        out = probe.mark("before", model(_x()))
        loss = tf.reduce_sum(probe.mark("after", tf.reshape(op(out), (4, 3))))
    return probe, loss, model.trainable_variables, None


def py_function_with_a_numpy_body():
    """A NumPy body in tf.py_function (tensorflow/tensorflow#36276): TensorFlow's own gradient
    raises. Used to crash the probe (KeyError: b'pyfunc_0')."""
    return _before_after(
        lambda out: tf.py_function(lambda t: tf.constant(t.numpy() * 2.0), [out], tf.float32)
    )


def numpy_function_in_the_loss():
    """tf.numpy_function has no gradient (tensorflow/tensorflow#27554)."""
    return _before_after(lambda out: tf.numpy_function(lambda t: t * 2.0, [out], tf.float32))


@tf.custom_gradient
def _clip_without_gradient(x):
    return tf.clip_by_value(x, -1.0, 1.0), lambda dy: None


def custom_gradient_returning_none():
    """A custom_gradient whose gradient function returns None (tensorflow/tensorflow#31945)."""
    return _before_after(_clip_without_gradient)


def loss_weight_read_as_a_python_float():
    """A learnable loss weight read with float() (keras-team/keras#14152 family): the weight
    leaves TensorFlow at float()."""
    model = _seq(keras.layers.Dense(3))
    weight = tf.Variable(0.5, name="loss_weight")
    with GradientProbe() as probe:
        out = probe.mark("denoised", model(_x()))
        loss = float(weight) * tf.reduce_mean(tf.square(out))
    return probe, loss, [*model.trainable_variables, weight], None


class _Int8(keras.layers.Layer):
    def call(self, x):
        return tf.cast(tf.cast(x * 10.0, tf.int8), tf.float32) / 10.0


def int8_cast_inside_a_sequential():
    """Quantisation inside a model (tensorflow/tensorflow#33337), marks on input and output
    only. Used to add a false "computed before the `with` block" note."""
    model = _seq(
        keras.layers.Dense(4, name="a"), _Int8(name="quantise"), keras.layers.Dense(3, name="b")
    )
    with GradientProbe() as probe:
        x = probe.mark("input", _x())
        loss = tf.reduce_sum(probe.mark("output", model(x)))
    return probe, loss, model.trainable_variables, None


def layer_created_inside_the_step():
    """A new Dense made inside the step reads new weights (tensorflow/tensorflow#27120)."""
    model = _seq(keras.layers.Dense(3, name="head"))
    with GradientProbe() as probe:
        out = probe.mark("out", keras.layers.Dense(3, name="head")(_x()))
        loss = tf.reduce_sum(out)
    return probe, loss, model.trainable_variables, None


def control_frozen_layer_in_model_weights():
    """layer.trainable = False, then model.weights passed (keras-team/keras#17214): in Keras 3
    the tf.Variable underneath stays trainable, so the tape still gives gradients (intact)."""
    model = _seq(keras.layers.Dense(4, name="frozen"), keras.layers.Dense(2, name="head"))
    model.get_layer("frozen").trainable = False
    with GradientProbe() as probe:
        probe.mark_layers(model)
        loss = tf.reduce_sum(model(_x()))
    return probe, loss, model.weights, None


def numpy_in_a_gan_step():
    """The generator's output taken to NumPy before the discriminator (a GAN step,
    tensorflow/tensorflow#38751 family)."""
    generator = _seq(keras.layers.Dense(6, name="g"), name="generator")
    discriminator = _seq(keras.layers.Dense(1, name="d"), name="discriminator")
    with GradientProbe() as probe:
        fake = probe.mark("fake", generator(_x()))
        score = probe.mark("score", discriminator(fake.numpy()))
        loss = -tf.reduce_mean(score)
    return probe, loss, generator.trainable_variables, None


def control_py_function_with_a_tensorflow_body():
    """Healthy: a py_function whose body uses TensorFlow ops has a gradient."""
    return _before_after(lambda out: tf.py_function(lambda t: t * 2.0, [out], tf.float32))


@tf.function
def _nested_loss(y):
    return tf.reduce_mean(tf.square(y - 1.0))


def control_loss_in_a_nested_tf_function():
    """Healthy: the loss computed by a tf.function called inside the block."""
    model = _seq(keras.layers.Dense(3))
    with GradientProbe() as probe:
        loss = _nested_loss(probe.mark("out", model(_x())))
    return probe, loss, model.trainable_variables, None


@tf.custom_gradient
def _straight_through_round(x):
    return tf.round(x), lambda dy: dy


def control_straight_through_custom_gradient():
    """Healthy: a custom_gradient straight-through estimator."""
    return _before_after(_straight_through_round)


class _Block(keras.Model):
    def __init__(self):
        super().__init__(name="net")
        self.enc = keras.layers.Dense(4, name="enc")
        self.inner = _seq(
            keras.layers.Dense(4, activation="relu", name="mid"),
            keras.layers.Dropout(0.2),
            inputs=4,
            name="inner",
        )
        self.dec = keras.layers.Dense(2, name="dec")

    def call(self, x, training=False):
        return self.dec(self.inner(self.enc(x), training=training))


def control_subclassed_model_auto_marked():
    """Healthy: a subclassed model with a nested sub-model, every layer auto-marked."""
    keras.utils.set_random_seed(0)
    model = _Block()
    model(_x())
    with GradientProbe() as probe:
        probe.mark_layers(model)
        loss = tf.reduce_mean(tf.square(model(_x(), training=True)))
    return probe, loss, model.trainable_variables, None


def control_functional_two_branches_with_gru():
    """Healthy: a Functional model, a GRU branch and a Dense branch concatenated."""
    keras.utils.set_random_seed(0)
    inputs = keras.Input((5, 6))
    recurrent = keras.layers.GRU(3, name="gru")(inputs)
    pooled = keras.layers.Dense(3, name="dense")(keras.layers.GlobalAveragePooling1D()(inputs))
    out = keras.layers.Dense(1, name="head")(keras.layers.Concatenate()([recurrent, pooled]))
    model = keras.Model(inputs, out, name="two")
    with GradientProbe() as probe:
        probe.mark_layers(model)
        loss = tf.reduce_mean(tf.square(model(_x((2, 5, 6)))))
    return probe, loss, model.trainable_variables, None


# case: (first break or None, intact, causes that must appear, words that must not appear)
ASIDE = {
    watched_integer_token_ids: (("token_ids", "vectors"), False, {"integer"}, ["the variables"]),
    derived_weights_after_a_healthy_layer: (
        (VARIABLES, "seq/derived"),
        False,
        {"unread"},
        ["seq/front'"],
    ),
    py_function_with_a_numpy_body: (("before", "after"), False, set(), ["reach no mark"]),
    numpy_function_in_the_loss: (("before", "after"), False, {"cut"}, []),
    custom_gradient_returning_none: (("before", "after"), False, {"cut"}, []),
    loss_weight_read_as_a_python_float: (
        (VARIABLES, "float() (conversion 1)"),
        False,
        {"cut"},
        ["before 'denoised'"],
    ),
    int8_cast_inside_a_sequential: (
        (VARIABLES, "output"),
        False,
        {"cut"},
        ["computed before the `with` block"],
    ),
    layer_created_inside_the_step: ((VARIABLES, "out"), False, {"unread"}, []),
    control_frozen_layer_in_model_weights: (None, True, set(), ["broken"]),
    numpy_in_a_gan_step: (("fake", "score"), False, {"cut"}, []),
    control_py_function_with_a_tensorflow_body: (None, True, set(), ["broken", "raises"]),
    control_loss_in_a_nested_tf_function: (None, True, set(), ["broken"]),
    control_straight_through_custom_gradient: (None, True, set(), ["broken"]),
    control_subclassed_model_auto_marked: (None, True, set(), ["broken", "side branch"]),
    control_functional_two_branches_with_gru: (None, True, set(), ["broken", "side branch"]),
}
