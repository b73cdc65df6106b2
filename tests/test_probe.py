"""helpers.diagnosis.probe: the locator names the two marks around every kind of break, stays quiet
on intact paths, and rejects misuse with errors that say what to do."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.diagnosis.probe import LOSS, VARIABLES, GradientProbe, Location, ProbeError


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((8,)),
            keras.layers.Dense(4, activation="tanh", name="enc"),
            keras.layers.Dense(8, name="dec"),
        ],
        name="denoiser",
    )


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(0)
    return (
        tf.constant(rng.normal(size=(3, 8)), tf.float32),
        tf.constant(rng.normal(size=(3, 8)), tf.float32),
    )


def _mse(a, b):
    return tf.reduce_mean(tf.square(a - b))


# -- intact paths ---------------------------------------------------------------------------
def test_intact_path(model, frames):
    noisy, clean = frames
    with GradientProbe() as probe:
        x = probe.mark("noisy", noisy)
        hidden = probe.mark("hidden", model.layers[0](x))
        out = probe.mark("denoised", model.layers[1](hidden))
        loss = _mse(out, clean)
    where = probe.locate(loss, model.trainable_weights)
    assert isinstance(where, Location)
    assert where.broken_between is None and where.intact
    assert where.names == ["noisy", "hidden", "denoised"]
    assert all(m.loss_reaches for m in where.marks)
    assert where["noisy"].variables == ()
    assert where["hidden"].variables == ("denoiser/enc/kernel", "denoiser/enc/bias")
    assert len(where["denoised"].variables) == 4
    assert where["denoised"].loss_gradient == "ok"
    assert where.unreached_variables() == []
    assert repr(where).startswith("Gradient path intact")


def test_mark_returns_its_value_unchanged(frames):
    noisy, _ = frames
    array = np.ones(3)
    with GradientProbe() as probe:
        assert probe.mark("t", noisy) is noisy
        assert probe.mark("a", array) is array
        assert probe.mark("f", 0.5) == 0.5
    assert probe.marks == ["t", "a", "f"]


def test_probe_gradient_and_report_match_a_plain_tape(model, frames):
    noisy, clean = frames
    with tf.GradientTape() as tape:
        loss = _mse(model(noisy), clean)
    expected = tape.gradient(loss, model.trainable_weights)
    with GradientProbe() as probe:
        loss = _mse(probe.mark("denoised", model(noisy)), clean)
        inside = probe.gradient(loss, model.trainable_weights)  # allowed inside the block
        assert probe.locate(loss, model.trainable_weights).intact  # also inside the block
    after = probe.gradient(loss, model.trainable_weights)
    for e, i, a in zip(expected, inside, after):
        np.testing.assert_allclose(e, i)
        np.testing.assert_allclose(e, a)
    report = probe.report(loss, model.trainable_weights)
    assert report.all("ok")
    assert probe.locate(loss, model.trainable_weights).intact


def test_loss_reaching_a_mark_with_zeros_is_flagged(model, frames):
    noisy, _ = frames
    with GradientProbe() as probe:
        out = probe.mark("denoised", model(noisy))
        loss = tf.reduce_sum(tf.sign(out))  # Sign's gradient is registered as zeros
    where = probe.locate(loss, model.trainable_weights)
    assert where.intact
    assert where["denoised"].loss_gradient == "zero"
    assert "all zeros" in repr(where)


# -- the breaks -----------------------------------------------------------------------------
def test_break_by_numpy(model, frames):
    noisy, clean = frames
    with GradientProbe() as probe:
        out = probe.mark("denoised", model(noisy))
        audio = probe.mark("audio_np", np.asarray(out) * 0.5)
        back = probe.mark("back_in_tf", tf.convert_to_tensor(audio))
        loss = _mse(back, clean)
    where = probe.locate(loss, model.trainable_weights)
    assert where.broken_between == ("denoised", "back_in_tf")
    assert where["audio_np"].kind == "numpy"
    assert not where["audio_np"].loss_reaches and not where["audio_np"].variables
    text = repr(where)
    assert "'denoised'" in text and "'back_in_tf'" in text and "NumPy array" in text
    assert probe.report(loss, model.trainable_weights).all("none")


def test_break_by_integer_cast(model, frames):
    noisy, clean = frames
    with GradientProbe() as probe:
        out = probe.mark("denoised", model(noisy))
        codes = probe.mark("codes", tf.cast(tf.round(out * 100.0), tf.int32))
        back = probe.mark("decoded", tf.cast(codes, tf.float32) / 100.0)
        loss = _mse(back, clean)
    where = probe.locate(loss, model.trainable_weights)
    assert where.broken_between == ("denoised", "decoded")
    assert where["codes"].kind == "integer" and where["codes"].dtype == "int32"
    assert "an int32 tensor" in repr(where)


def test_break_by_rounding_without_int(model, frames):
    noisy, clean = frames
    with GradientProbe() as probe:
        out = probe.mark("denoised", model(noisy))
        rounded = probe.mark("rounded", tf.round(out))
        loss = _mse(rounded, clean)
    where = probe.locate(loss, model.trainable_weights)
    assert where.broken_between == ("denoised", "rounded")
    assert where["rounded"].loss_reaches and not where["rounded"].variables


def test_break_by_variable_assign(model, frames):
    noisy, clean = frames
    state = tf.Variable(tf.zeros((3, 8)), trainable=False, name="state")
    with GradientProbe() as probe:
        out = probe.mark("denoised", model(noisy))
        state.assign(out)
        read = probe.mark("state", state)
        loss = _mse(read, clean)
    where = probe.locate(loss, model.trainable_weights)
    assert where.broken_between == ("denoised", "state")
    assert where["state"].kind == "variable" and where["state"].loss_reaches
    assert "assign" in repr(where)


def test_break_by_stop_gradient(model, frames):
    noisy, clean = frames
    with GradientProbe() as probe:
        out = probe.mark("denoised", model(noisy))
        target = probe.mark("stopped", tf.stop_gradient(out))
        loss = _mse(target, clean)
    where = probe.locate(loss, model.trainable_weights)
    assert where.broken_between == ("denoised", "stopped")
    assert "Look at the code between 'denoised' and 'stopped'" in repr(where)


def test_loss_computed_outside_the_block(model, frames):
    noisy, clean = frames
    with GradientProbe() as probe:
        out = probe.mark("denoised", model(noisy))
    loss = _mse(out, clean)
    where = probe.locate(loss, model.trainable_weights)
    assert where.broken_between == ("denoised", LOSS)
    assert "after the `with` block ended" in where.loss_note
    assert "broken between 'denoised' and the loss" in repr(where)


def test_loss_computed_before_the_block(model, frames):
    noisy, clean = frames
    loss = _mse(model(noisy), clean)
    with GradientProbe() as probe:
        probe.mark("denoised", model(noisy))
    where = probe.locate(loss, model.trainable_weights)
    assert where.broken_between == ("denoised", LOSS)
    assert "before the `with` block began" in where.loss_note


@pytest.mark.parametrize(
    "make_loss, words",
    [
        (lambda out, clean: np.mean((np.asarray(out) - np.asarray(clean)) ** 2), "NumPy float32"),
        (lambda out, clean: float(tf.reduce_mean(out)), "Python float"),
    ],
)
def test_loss_outside_tensorflow(model, frames, make_loss, words):
    noisy, clean = frames
    with GradientProbe() as probe:
        out = probe.mark("denoised", model(noisy))
        loss = make_loss(out, clean)
    where = probe.locate(loss, model.trainable_weights)
    assert where.broken_between == ("denoised", LOSS)
    assert words in repr(where)


def test_no_gradient_registered_is_reported_not_raised(model, frames):
    noisy, _ = frames
    with GradientProbe() as probe:
        out = probe.mark("denoised", model(noisy))
        image = probe.mark("contrast", tf.image.adjust_contrast(out[..., None], 2.0))
        loss = tf.reduce_mean(image)
    where = probe.locate(loss, model.trainable_weights)
    assert where.broken_between == ("denoised", "contrast")
    assert where["denoised"].loss_gradient == "error"
    assert "AdjustContrastv2" in repr(where) and "LookupError" in repr(where)


def test_a_variable_that_is_not_trainable_is_no_break(frames):
    noisy, clean = frames
    gain = tf.Variable(2.0, trainable=False, name="gain")
    with GradientProbe() as probe:
        out = probe.mark("scaled", noisy * gain)
        loss = _mse(out, clean)
    where = probe.locate(loss, [gain])
    assert where.broken_between is None and not where.intact  # agrees with the report: None
    assert where.causes == {"gain": "untrainable"}
    assert "'gain' is not trainable" in repr(where) and "trainable_variables" in repr(where)
    with GradientProbe() as probe:
        probe.watch(gain)
        loss = _mse(probe.mark("scaled", noisy * gain), clean)
    assert probe.locate(loss, [gain]).intact


def test_no_marks(model, frames):
    noisy, clean = frames
    with GradientProbe() as probe:
        out = model(noisy)
    broken = probe.locate(_mse(out, clean), model.trainable_weights)
    assert broken.broken_between == (VARIABLES, LOSS)
    with GradientProbe() as probe:
        loss = _mse(model(noisy), clean)
    assert probe.locate(loss, model.trainable_weights).intact


def test_marks_are_listed_in_the_order_they_were_made(model, frames):
    noisy, clean = frames
    with GradientProbe() as probe:
        hidden = model.layers[0](noisy)
        out = probe.mark("denoised", model.layers[1](hidden))
        probe.mark("hidden", hidden)
        loss = _mse(tf.stop_gradient(out), clean) + 0.0 * tf.reduce_sum(hidden)
    where = probe.locate(loss, model.trainable_weights)
    assert where.names == ["denoised", "hidden"]
    assert where.broken_between == ("denoised", LOSS)  # 'hidden' feeds 'denoised': no end


def test_repr_names_both_marks_and_no_address(model, frames):
    noisy, clean = frames
    with GradientProbe() as probe:
        out = probe.mark("denoised", model(noisy))
        loss = _mse(probe.mark("stopped", tf.stop_gradient(out)), clean)
    text = repr(probe.locate(loss, model.trainable_weights))
    assert "'denoised'" in text and "'stopped'" in text and "0x" not in text


# -- tf.function ----------------------------------------------------------------------------
def test_whole_probe_inside_one_trace(model, frames):
    noisy, clean = frames
    verdicts = []

    @tf.function
    def step(x):
        with GradientProbe() as probe:
            out = probe.mark("denoised", model(x))
            loss = _mse(probe.mark("stopped", tf.stop_gradient(out)), clean)
        verdicts.append(probe.locate(loss, model.trainable_weights))
        return loss

    step(noisy)
    step(noisy)  # no retrace: the verdict is made once, while tracing
    assert len(verdicts) == 1
    assert verdicts[0].traced and verdicts[0].broken_between == ("denoised", "stopped")
    assert verdicts[0]["stopped"].loss_gradient is None  # values are unknown while tracing
    assert "tracing a tf.function" in repr(verdicts[0])


def test_a_function_cannot_return_the_verdict(model, frames):
    noisy, clean = frames

    @tf.function
    def step(x):
        with GradientProbe() as probe:
            loss = _mse(probe.mark("denoised", model(x)), clean)
        return probe.locate(loss, model.trainable_weights)

    with pytest.raises(TypeError, match="found return value of type Location"):
        step(noisy)


def test_mark_inside_a_function_called_from_an_eager_probe_raises(model, frames):
    noisy, _ = frames

    @tf.function
    def forward(x, probe):
        return probe.mark("inside", model(x))

    with GradientProbe() as probe, pytest.raises(ProbeError, match="inside a tf.function"):
        forward(noisy, probe)


def test_marks_around_a_tf_function_work(model, frames):
    noisy, clean = frames
    compiled = tf.function(model)
    with GradientProbe() as probe:
        out = probe.mark("denoised", compiled(noisy))
        loss = _mse(out, clean)
    assert probe.locate(loss, model.trainable_weights).intact


# -- bad inputs -----------------------------------------------------------------------------
def test_mark_outside_the_block_raises(frames):
    noisy, _ = frames
    probe = GradientProbe()
    with pytest.raises(ProbeError, match="before the `with"):
        probe.mark("early", noisy)
    with probe:
        pass
    with pytest.raises(ProbeError, match="after the `with"):
        probe.mark("late", noisy)
    with pytest.raises(ProbeError, match="one forward pass"):
        with probe:
            pass


def test_locate_before_the_block_raises(model):
    with pytest.raises(ProbeError, match="needs a recorded forward pass"):
        GradientProbe().locate(tf.constant(1.0), model.trainable_weights)


def test_duplicate_mark_name(frames):
    noisy, _ = frames
    with GradientProbe() as probe:
        probe.mark("frame", noisy)
        with pytest.raises(ValueError, match="already a mark named 'frame'"):
            probe.mark("frame", noisy)


def test_bad_variables(model, frames):
    noisy, clean = frames
    with GradientProbe() as probe:
        loss = _mse(probe.mark("denoised", model(noisy)), clean)
    with pytest.raises(ValueError, match="not built yet"):
        probe.locate(loss, [])
    replaced = tf.Variable(1.0) + 1  # `x = x + 1` made a tensor of the variable
    where = probe.locate(loss, [replaced], names=["x"])
    assert where.causes == {"x": "unwatched"} and "assign_add" in repr(where)
    with pytest.raises(TypeError, match="must be a list"):
        probe.locate(loss, model.trainable_weights[0])
    with pytest.raises(TypeError, match="KerasTensor"):
        probe.locate(loss, [keras.Input((3,))])
    with pytest.raises(ValueError, match="one per source"):
        probe.locate(loss, model.trainable_weights, names=["a"])
    with pytest.raises(TypeError, match="expected a tf.Variable"):
        probe.locate(loss, ["kernel"])
    with pytest.raises(TypeError, match="expected a tf.Variable"):
        probe.locate(loss, [np.ones(3)])
    with pytest.raises(TypeError, match="loss is None"):
        probe.locate(None, model.trainable_weights)
    with pytest.raises(TypeError, match="loss must be a tensor"):
        probe.locate("loss", model.trainable_weights)


def test_marking_a_keras_variable(model, frames):
    noisy, clean = frames
    kernel = model.get_layer("dec").kernel
    with GradientProbe() as probe:
        probe.mark("dec_kernel", kernel)
        loss = _mse(model(noisy), clean)
    where = probe.locate(loss, model.trainable_weights)
    assert where["dec_kernel"].kind == "variable"
    assert where["dec_kernel"].loss_reaches
    assert where["dec_kernel"].variables == ("denoiser/dec/kernel",)
    assert where.intact


# -- structure --------------------------------------------------------------------------------
