import math

import numpy as np
import pytest
import tensorflow as tf
from matplotlib.colors import to_hex

import helpers  # noqa: F401
from helpers.gradients import GradientReport, GradientRow, gradient_report
from helpers.plots import plot_gradient_norms, plot_norm_history, plot_reports, status_gid

MIXED = GradientReport([
    GradientRow("dense/kernel", (3, 2), "ok", 0.5),
    GradientRow("dense/bias", (2,), "zero", 0.0),
    GradientRow("gru/kernel", (3, 6), "nonfinite", math.nan),
    GradientRow("gru/bias", (6,), "none", None),
    GradientRow("head/kernel", (2, 1), "ok", 1e-7),
])


def _artists(fig, gid):
    return [a for ax in fig.axes for a in ax.get_children() if a.get_gid() == gid]


def test_one_bar_or_marker_per_variable_with_its_status():
    fig = plot_gradient_norms(MIXED)
    for status in ("ok", "zero", "nonfinite", "none"):
        expected = MIXED.statuses.count(status)
        assert len(_artists(fig, status_gid(status))) == expected, status
    # every row that is not a bar also carries a text label
    labels = [a.get_text() for s in ("zero", "nonfinite", "none")
              for a in _artists(fig, status_gid(s) + "-label")]
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


def test_real_gradients_plot():
    w = tf.Variable([1.0, 2.0], name="w")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w**2)
    fig = plot_gradient_norms(gradient_report(tape.gradient(loss, [w]), [w]))
    assert len(_artists(fig, status_gid("ok"))) == 1


@pytest.mark.parametrize("bad", [[], "report", None])
def test_bad_inputs(bad):
    with pytest.raises((TypeError, ValueError)):
        plot_gradient_norms(bad)
    with pytest.raises((TypeError, ValueError)):
        plot_norm_history(bad if bad is not None else [])
