"""helpers.diagnosis.plots: gradient-report pictures, state-gradient curves, the spectrogram."""

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import tensorflow as tf
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from helpers.audio import AudioError, LabelError, load_clip, num_frames, stft_magnitude
from helpers.diagnosis.plots import (
    HEATMAP_KEY,
    HEATMAP_WIDTH,
    PATH_COLOURS,
    plot_gradient_norms,
    plot_gradient_path,
    plot_norm_history,
    plot_norm_ratios,
    plot_reports,
    plot_spectrogram,
    plot_state_gradients,
    status_gid,
)
from helpers.diagnosis.report import GradientReport, GradientRow, gradient_report

MIXED = GradientReport(
    [
        GradientRow("dense/kernel", (3, 2), "ok", 0.5),
        GradientRow("dense/bias", (2,), "zero", 0.0),
        GradientRow("gru/kernel", (3, 6), "nonfinite", math.nan),
        GradientRow("gru/bias", (6,), "none", None),
        GradientRow("head/kernel", (2, 1), "ok", 1e-7),
    ]
)


def _artists(fig, gid):
    return [a for ax in fig.axes for a in ax.get_children() if a.get_gid() == gid]


def test_one_bar_or_marker_per_variable_with_its_status():
    fig = plot_gradient_norms(MIXED)
    for status in ("ok", "zero", "nonfinite", "none"):
        expected = MIXED.statuses.count(status)
        assert len(_artists(fig, status_gid(status))) == expected, status
    # every row that is not a bar also carries a text label
    labels = [
        a.get_text()
        for s in ("zero", "nonfinite", "none")
        for a in _artists(fig, status_gid(s) + "-label")
    ]
    assert labels == ["zero (no bar)", "NaN (no bar)", "None (no bar)"]


def test_statuses_are_visibly_distinct():
    fig = plot_gradient_norms(MIXED)
    looks = set()
    for status in ("zero", "nonfinite", "none"):
        (marker,) = _artists(fig, status_gid(status))
        looks.add((marker.get_marker(), to_hex(marker.get_color()), marker.get_fillstyle()))
    bar = _artists(fig, status_gid("ok"))[0]
    looks.add(("bar", to_hex(bar.get_facecolor()), "full"))
    assert len(looks) == 4
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == ["norm (log scale)", "zero", "NaN / inf", "None"]


def test_log_scale_holds_tiny_and_large_norms():
    fig = plot_gradient_norms(MIXED)
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    assert ax.get_xscale() == "log" and lo < 1e-7 and hi > 0.5
    widths = sorted(p.get_width() + p.get_x() for p in _artists(fig, status_gid("ok")))
    assert widths == pytest.approx([1e-7, 0.5])


def test_rows_follow_variable_order_top_down():
    fig = plot_gradient_norms(MIXED)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ys = list(fig.axes[0].get_yticks())
    assert [name for _, name in sorted(zip(ys, labels), reverse=True)] == MIXED.names


def test_side_by_side_shares_one_scale():
    after = GradientReport([GradientRow(r.name, r.shape, "ok", 2.0) for r in MIXED])
    fig = plot_reports({"before": MIXED, "after": after})
    assert len(fig.axes) == 2
    assert fig.axes[0].get_xlim() == fig.axes[1].get_xlim()
    assert len(_artists(fig, status_gid("ok"))) == 2 + 5


def test_side_by_side_has_one_legend_for_the_figure():
    after = GradientReport([GradientRow(r.name, r.shape, "ok", 2.0) for r in MIXED])
    none = GradientReport([GradientRow(r.name, r.shape, "none", None) for r in MIXED])
    fig = plot_reports({"after": after, "none": none, "before": MIXED})
    assert all(ax.get_legend() is None for ax in fig.axes)
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "norm (log scale)",
        "zero",
        "NaN / inf",
        "None",
    ]
    # A panel with only None rows shares the figure's legend, drawn once.
    fig = plot_reports({"none": none, "after": after})
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["norm (log scale)", "None"]


@pytest.mark.parametrize(
    "plot",
    [
        lambda: plot_gradient_norms(MIXED),
        lambda: plot_reports({"a": MIXED, "b": MIXED}),
    ],
)
def test_markers_leave_the_variable_names_readable(plot):
    fig = plot()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    names = [
        t.get_window_extent(renderer)
        for ax in fig.axes
        for t in ax.get_yticklabels()
        if t.get_visible() and t.get_text()
    ]
    assert names
    for status in ("zero", "nonfinite", "none"):
        for marker in _artists(fig, status_gid(status)):
            box = marker.get_window_extent(renderer)
            left_of_axes = marker.axes.get_window_extent(renderer).x0
            assert box.x0 > left_of_axes, f"the {status} marker sticks out of its panel"
            assert not any(box.overlaps(name) for name in names), status


def test_side_by_side_rejects_different_variables():
    other = GradientReport([GradientRow("x", (), "ok", 1.0)])
    with pytest.raises(ValueError, match="same variables"):
        plot_reports({"a": MIXED, "b": other})


def test_history_heatmap_marks_special_cells():
    ok = GradientReport([GradientRow(r.name, r.shape, "ok", 1.0) for r in MIXED])
    fig = plot_norm_history([ok, MIXED, ok], steps=[10, 20, 30])
    (special,) = _artists(fig, "grad-heatmap-status")
    cells = special.get_array()
    assert cells.mask.sum() == 15 - 3  # only the three broken cells of step 20 are drawn
    assert np.flatnonzero(~cells.mask[:, 1]).tolist() == [1, 2, 3]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["10", "20", "30"]


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ([*range(0, 120, 4), 119], [0, 20, 40, 60, 80, 100]),  # notebook 02's history
        (list(range(20)), [0, 5, 10, 15]),  # 06's live run
        (list(range(7, 60)), [10, 20, 30, 40, 50]),
        ([3, 17, 31], [3, 31]),  # no round step among the columns: the ends
    ],
)
def test_history_heatmap_ticks_are_round_step_numbers_at_their_columns(steps, expected):
    ok = GradientReport([GradientRow(r.name, r.shape, "ok", 1.0) for r in MIXED])
    ax = plot_norm_history([ok] * len(steps), steps=steps).axes[0]
    labels = [int(t.get_text()) for t in ax.get_xticklabels()]
    assert labels == expected
    assert [steps[round(x)] for x in ax.get_xticks()] == labels  # each at its own column


def test_history_heatmap_has_a_key_for_none_zero_and_nan_even_when_all_are_healthy():
    ok = GradientReport([GradientRow(r.name, r.shape, "ok", 1.0) for r in MIXED])
    for history in ([ok, ok], [ok, MIXED]):
        fig = plot_norm_history(history)
        (key,) = fig.legends
        assert [t.get_text() for t in key.get_texts()] == ["None", "zero", "NaN / inf"]
        colours = [to_hex(p.get_facecolor()) for p in key.get_patches()]
        assert colours == [to_hex(HEATMAP_KEY[s]) for s in ("none", "zero", "nonfinite")]
        special = _artists(fig, "grad-heatmap-status")[0]
        assert [to_hex(special.cmap(i)) for i in range(3)] == colours  # the cells' colours
        plt.close(fig)


def test_history_heatmap_prints_names_at_the_size_of_the_other_figures():
    """The figure is as wide as the course's wide figures whatever the number of steps (the
    notebook shrinks a wider one, and its text with it), and its text is matplotlib's size."""
    ok = GradientReport([GradientRow(r.name, r.shape, "ok", 1.0) for r in MIXED])
    for count in (3, 31, 200):
        fig = plot_norm_history([ok] * count)
        assert fig.get_figwidth() == HEATMAP_WIDTH <= 10
        sizes = {t.get_fontsize() for t in fig.axes[0].get_yticklabels()}
        assert sizes == {plt.rcParams["font.size"]}
        assert {t.get_fontsize() for t in fig.legends[0].get_texts()} == sizes
        plt.close(fig)


def test_history_steps_must_increase():
    ok = GradientReport([GradientRow(r.name, r.shape, "ok", 1.0) for r in MIXED])
    with pytest.raises(ValueError, match="must increase"):
        plot_norm_history([ok, ok], steps=[5, 5])


def test_real_gradients_plot():
    w = tf.Variable([1.0, 2.0], name="w")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w**2)
    fig = plot_gradient_norms(gradient_report(tape.gradient(loss, [w]), [w]))
    assert len(_artists(fig, status_gid("ok"))) == 1


@pytest.mark.parametrize(
    "bad, history_error, history_match",
    [
        ([], ValueError, "needs at least one report"),
        ("report", TypeError, "expected a GradientReport .*got str"),
        (None, ValueError, "needs at least one report"),
    ],
)
def test_bad_inputs(bad, history_error, history_match):
    expected = "expected a GradientReport from helpers.diagnosis.gradient_report"
    with pytest.raises(TypeError, match=expected):
        plot_gradient_norms(bad)
    with pytest.raises(history_error, match=history_match):
        plot_norm_history(bad if bad is not None else [])


# --- how far back through time a gradient reaches -------------------------------------------


def test_plot_state_gradients_draws_one_line_per_run_and_marks_none():
    fig = plot_state_gradients({"full": [1e-3, 1e-4, None], "assign": [1e-5, 1e-5, 1e-5]})
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["full", "full: None", "assign"]
    (crosses,) = [line for line in ax.get_lines() if line.get_label() == "full: None"]
    assert crosses.get_xdata().tolist() == [2]
    assert ax.get_ylim()[0] < 1e-5


def test_plot_state_gradients_with_only_none_and_no_curves():
    fig = plot_state_gradients({"cut": [None, None]})
    assert fig.axes[0].get_ylim()[0] == pytest.approx(1e-6)
    with pytest.raises(ValueError, match="at least one curve"):
        plot_state_gradients({})


def _report_of(norms):
    variables = [tf.Variable(tf.zeros(2), name=f"v{i}") for i in range(len(norms))]
    grads = [None if n is None else tf.constant([n, 0.0]) for n in norms]
    return gradient_report(grads, variables)


def test_plot_norm_ratios_shows_a_forty_percent_change_on_a_linear_axis():
    fig = plot_norm_ratios(_report_of([0.6, 2e-4]), _report_of([1.0, 2e-4]), title="A / B")
    ax = fig.axes[0]
    assert ax.get_xscale() == "linear" and ax.get_title() == "A / B"
    widths = [bar.get_width() for bar in _artists(fig, "grad-ok")]
    assert widths == pytest.approx([0.6, 1.0])
    assert ax.get_xlim()[0] == 0 and ax.get_xlim()[1] >= 1.1


def test_plot_norm_ratios_refuses_missing_gradients_and_other_variables():
    with pytest.raises(ValueError, match="healthy.*v1"):
        plot_norm_ratios(_report_of([0.6, None]), _report_of([1.0, 1.0]))
    with pytest.raises(ValueError, match="same variables"):
        plot_norm_ratios(_report_of([0.6]), _report_of([1.0, 1.0]))


# --- the spectrogram ---------------------------------------------------------------------------


def test_spectrogram_shows_the_courses_stft():
    clip = load_clip("vowel_a")
    fig = plot_spectrogram(clip.audio, labels=clip.labels, title="vowel a")
    assert len(fig.axes) == 3  # spectrogram, label strip, colour bar
    (mesh,) = fig.axes[0].collections
    db = np.asarray(mesh.get_array()).reshape(257, num_frames(len(clip.audio)))
    magnitude = stft_magnitude(clip.audio).numpy().T
    expected = 20 * np.log10(np.maximum(magnitude, 1e-5) / magnitude.max())
    np.testing.assert_allclose(db, expected, atol=1e-3)
    assert len(plot_spectrogram(clip.audio).axes) == 2  # no labels: spectrogram and colour bar


def test_spectrogram_plot_rejects_bad_audio_and_labels():
    clip = load_clip("vowel_a")
    with pytest.raises(AudioError, match="all NaN"):
        plot_spectrogram(np.full(1000, np.nan, np.float32))
    with pytest.raises(LabelError, match="expected the labels of this clip"):
        plot_spectrogram(clip.audio[:8000], labels=clip.labels)


# -- the locator's picture of a gradient path -------------------------------------------------
PATH_CASE = dict(
    marks=["denoised", "audio_np", "audio"],
    sources=["enc/kernel", "enc/bias", "gain"],
    reaches=[[True, False, False], [True, False, False], [False, False, False]],
    loss_reaches=[False, False, True],
    sources_reached=[False, False, False],
    breaks=[("denoised", "audio"), ("(variables)", "audio")],
    passes_no_gradient=[False, True, False],
)


def test_gradient_path_draws_marks_in_order_reach_breaks_and_apart():
    fig = plot_gradient_path(**PATH_CASE)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "sources",
        "denoised",
        "audio_np",
        "audio",
        "loss",
    ]
    dots = _artists(fig, "path-reach")
    assert [list(d.get_xdata()) for d in dots] == [[1], [1]]  # both reach 'denoised' only
    breaks = _artists(fig, "path-break")
    assert len(breaks) == 2 and {to_hex(b.get_facecolor()) for b in breaks} == {
        PATH_COLOURS["break"]
    }
    assert len(_artists(fig, "path-apart")) == 1 and len(_artists(fig, "path-separator")) == 1
    assert [t.get_text() for t in ax.get_yticklabels()][-1] == "gain"
    assert len(_artists(fig, "path-loss")) == 1 and len(_artists(fig, "path-no-loss")) == 2
    assert [t.get_text() for t in ax.get_xticklabels() if t.get_gid() == "path-no-gradient"] == [
        "audio_np"
    ]


def test_gradient_path_healthy_has_no_break_and_nothing_apart():
    fig = plot_gradient_path(["out"], ["w"], [[True]], [True], [True], [])
    assert _artists(fig, "path-break") == [] and _artists(fig, "path-apart") == []
    assert len(_artists(fig, "path-source-ok")) == 1


@pytest.mark.parametrize(
    "change, match",
    [
        ({"sources": []}, "at least one source"),
        ({"reaches": [[True]]}, "one row of 3 booleans"),
        ({"loss_reaches": [True]}, "one boolean per mark"),
        ({"sources_reached": [True]}, "one boolean per source"),
    ],
)
def test_gradient_path_rejects_mismatched_data(change, match):
    with pytest.raises(ValueError, match=match):
        plot_gradient_path(**{**PATH_CASE, **change})
