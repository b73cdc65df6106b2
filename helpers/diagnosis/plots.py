"""The pictures of gradients and clips: gradient reports (per-variable norms, before/after
panels, norms over training), how far back through time a gradient reaches, the spectrogram
of a clip with its per-frame labels, and the locator's picture of a gradient path. (The
capstone's margins are drawn beside their statistics, ``helpers.capstone.plot_margin_rows``.)

A None gradient, a zero gradient and a NaN gradient must never look like a small norm, and
never like each other. On the log-scale bar plot a healthy gradient is a bar; the other three
get no bar at all but a distinct marker just inside the left edge (clear of the variable
names), a text label on the row, and an entry in the legend: one legend per figure, also when
``plot_reports`` puts several reports side by side.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import ScaledTranslation

from helpers.course import STATUS_HEX
from helpers.diagnosis.report import STATUSES, GradientReport, Status

VOICING_COLOURS = {0: "#bdbdbd", 1: "#1a9850", 2: "#fdae61"}  # silent, voiced, unvoiced

# How each status is drawn. "ok" is a bar; the others are markers with a label.
STYLE: dict[Status, dict] = {
    "ok": {"color": STATUS_HEX["ok"], "label": "norm (log scale)"},
    "zero": {"color": STATUS_HEX["zero"], "marker": "o", "label": "zero", "fill": "none"},
    "nonfinite": {
        "color": STATUS_HEX["nonfinite"],
        "marker": "^",
        "label": "NaN / inf",
        "fill": "full",
    },
    "none": {"color": STATUS_HEX["none"], "marker": "X", "label": "None", "fill": "full"},
}


# The heatmap's flat colours for the cells that have no norm (its key names them).
HEATMAP_KEY: dict[Status, str] = {
    "none": STYLE["none"]["color"],
    "zero": "white",
    "nonfinite": STYLE["nonfinite"]["color"],
}
HEATMAP_WIDTH = 9.0  # inches: names, cells and colour bar
MARKER_INSET = 10.0  # points from the left edge of the axes to the centre of a status marker


def norms_figure_height(rows: int) -> float:
    """The height in inches of ``plot_gradient_norms``' own figure for ``rows`` variables."""
    return 0.45 * rows + 1.4


def status_gid(status: Status) -> str:
    """The matplotlib ``gid`` every artist of this status carries (tests look for it)."""
    return f"grad-{status}"


def plot_gradient_norms(
    report: GradientReport,
    ax: Axes | None = None,
    title: str | None = None,
    xlim: tuple[float, float] | None = None,
    legend: bool = True,
    legend_statuses: Sequence[Status] | None = None,
) -> Figure:
    """Horizontal bar plot of each variable's gradient norm, log scale, first variable on top.

    Pass ``xlim`` to share one scale between several plots, and ``legend=False`` to leave the
    legend to the figure (``plot_reports`` does both). ``legend_statuses``: the statuses the
    legend lists (default: those in the report; the lab lists all, for one layout).
    """
    _check_report(report)
    fig, ax = _figure_and_axes(ax, height=norms_figure_height(len(report)))
    lo, hi = xlim or norm_limits([report])
    y = np.arange(len(report))[::-1]
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    # Markers sit MARKER_INSET points inside the left edge (x in axes units, y in data), so
    # they never cover the end of a variable's name, whatever the scale.
    inside = ax.get_yaxis_transform() + ScaledTranslation(
        MARKER_INSET / 72, 0, ax.figure.dpi_scale_trans
    )
    for row, yi in zip(report, y):
        if row.status == "ok":
            ax.barh(
                yi,
                row.norm - lo,
                left=lo,
                height=0.6,
                color=STYLE["ok"]["color"],
                gid=status_gid("ok"),
            )
            continue
        style = STYLE[row.status]
        ax.plot(
            [0],
            [yi],
            linestyle="none",
            marker=style["marker"],
            markersize=11,
            color=style["color"],
            fillstyle=style["fill"],
            markeredgewidth=2,
            transform=inside,
            clip_on=False,
            zorder=5,
            gid=status_gid(row.status),
        )
        nonfinite = "NaN" if row.norm is None or math.isnan(row.norm) else "inf"
        text = {"none": "None", "zero": "zero", "nonfinite": nonfinite}[row.status]
        ax.annotate(
            f"{text} (no bar)",
            (0, yi),
            xycoords=inside,
            xytext=(12, 0),
            textcoords="offset points",
            va="center",
            color=style["color"],
            fontweight="bold",
            gid=status_gid(row.status) + "-label",
        )
    ax.set_yticks(y, [row.name for row in report])
    ax.set_ylim(-0.7, len(report) - 0.3)
    ax.set_xlabel("gradient norm (log scale)")
    ax.set_title(title or report.summary())
    ax.grid(axis="x", which="major", alpha=0.3)
    if legend:
        ax.legend(
            handles=_legend_handles([report], legend_statuses),
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize="small",
            frameon=False,
        )
    return fig


def plot_reports(reports: Mapping[str, GradientReport], suptitle: str | None = None) -> Figure:
    """Several reports side by side (for example before and after a fix), one shared scale."""
    if not reports:
        raise ValueError(
            "plot_reports needs at least one report, e.g. {'before': r1, 'after': r2}."
        )
    for report in reports.values():
        _check_report(report)
    names = [list(r.names) for r in reports.values()]
    if any(n != names[0] for n in names):
        raise ValueError("plot_reports expects reports over the same variables in the same order.")
    height = norms_figure_height(len(names[0])) + 0.2  # the panels' titles take two lines
    fig, axes = plt.subplots(
        1,
        len(reports),
        figsize=(5.2 * len(reports), height),
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    limits = norm_limits(list(reports.values()))
    for ax, (title, report) in zip(axes[0], reports.items()):
        plot_gradient_norms(
            report, ax=ax, title=f"{title}\n{report.summary()}", xlim=limits, legend=False
        )
    for ax in axes[0][1:]:
        ax.tick_params(labelleft=False)
    # One legend for the figure: every status that appears in any panel, once.
    fig.legend(
        handles=_legend_handles(list(reports.values())),
        loc="outside right upper",
        fontsize="small",
        frameon=False,
    )
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def plot_norm_ratios(
    changed: GradientReport, reference: GradientReport, title: str | None = None
) -> Figure:
    """Each variable's gradient norm in ``changed`` over its norm in ``reference``, as bars on
    a linear axis with a line at 1: a change of 40 % shows as 0.6, where a log-scale bar plot
    would hide it. Both reports must hold the same variables, every gradient healthy."""
    _check_report(changed)
    _check_report(reference)
    if list(changed.names) != list(reference.names):
        raise ValueError("plot_norm_ratios expects reports over the same variables, same order.")
    unhealthy = [r.name for r in (*changed, *reference) if r.status != "ok" or not r.norm]
    if unhealthy:
        raise ValueError(
            f"plot_norm_ratios needs a healthy (nonzero, finite) gradient for every variable in "
            f"both reports; not so for {sorted(set(unhealthy))}."
        )
    ratios = [c.norm / r.norm for c, r in zip(changed, reference)]
    y = np.arange(len(ratios))[::-1]
    fig, ax = plt.subplots(figsize=(6.4, norms_figure_height(len(ratios))), layout="constrained")
    ax.barh(y, ratios, height=0.6, color=STATUS_HEX["ok"], gid=status_gid("ok"))
    ax.axvline(1.0, color="black", linewidth=1, linestyle="--")
    ax.set_xlim(0, max(1.2, 1.1 * max(ratios)))
    ax.set_yticks(y, list(changed.names))
    ax.set_xlabel("gradient norm ratio (linear scale; 1 = unchanged)")
    ax.set_title(title or "gradient norm, changed / reference")
    ax.grid(axis="x", alpha=0.3)
    return fig


def plot_norm_history(
    reports: Sequence[GradientReport],
    steps: Sequence[int] | None = None,
    title: str = "gradient norm per variable over training",
) -> Figure:
    """Heatmap of log10 gradient norm, one row per variable and one column per step.

    Cells whose gradient is None, zero or non-finite are drawn in their own flat colours
    (grey, white, red: ``HEATMAP_KEY``) on top of the colour scale, and a key under the plot
    always names all three. The x ticks are round step numbers; ``steps`` must increase.
    """
    if len(reports) == 0:
        raise ValueError("plot_norm_history needs at least one report (one per training step).")
    for report in reports:
        _check_report(report)
    names = reports[0].names
    if any(r.names != names for r in reports):
        raise ValueError("every report in the history must cover the same variables in order.")
    steps = list(range(len(reports))) if steps is None else list(steps)
    if len(steps) != len(reports):
        raise ValueError(f"got {len(steps)} step numbers for {len(reports)} reports.")
    status_code = {"ok": -1, "none": 0, "zero": 1, "nonfinite": 2}
    log_norm = np.full((len(names), len(reports)), np.nan)
    special = np.full((len(names), len(reports)), np.nan)
    for j, report in enumerate(reports):
        for i, row in enumerate(report):
            if row.status == "ok":
                log_norm[i, j] = math.log10(row.norm)
            else:
                special[i, j] = status_code[row.status]
    # The width of the course's other wide figures, so names and ticks print at their size.
    fig, ax = plt.subplots(figsize=(HEATMAP_WIDTH, 0.4 * len(names) + 2.0), layout="constrained")
    image = ax.imshow(
        np.ma.masked_invalid(log_norm),
        aspect="auto",
        cmap="viridis",
        interpolation="nearest",
        gid="grad-heatmap",
    )
    ax.imshow(
        np.ma.masked_invalid(special),
        aspect="auto",
        interpolation="nearest",
        cmap=ListedColormap([HEATMAP_KEY[s] for s in ("none", "zero", "nonfinite")]),
        vmin=-0.5,
        vmax=2.5,
        gid="grad-heatmap-status",
    )
    fig.colorbar(image, ax=ax, label="log10 gradient norm")
    ax.set_yticks(range(len(names)), names)
    ticks = _round_ticks(steps)
    ax.set_xticks(np.interp(ticks, steps, range(len(steps))), [str(t) for t in ticks])
    ax.set_xlabel("training step")
    ax.set_title(title)
    handles = [
        Patch(facecolor=HEATMAP_KEY[s], edgecolor=STYLE[s]["color"], label=STYLE[s]["label"])
        for s in ("none", "zero", "nonfinite")
    ]  # always: any step can turn None or NaN
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)
    return fig


def _round_ticks(steps: list[int]) -> list[int]:
    """Round step numbers (0, 20, 40, ... or 0, 5, 10, ...) that are columns of the plot;
    the first and last step when the columns hold too few round ones."""
    if any(b <= a for a, b in zip(steps, steps[1:])):
        raise ValueError(f"the step numbers must increase, got {steps}.")
    locator = MaxNLocator(nbins=7, integer=True, steps=[1, 2, 5, 10])
    ticks = [int(v) for v in locator.tick_values(steps[0], steps[-1]) if int(v) in steps]
    return ticks if len(ticks) >= min(2, len(steps)) else sorted({steps[0], steps[-1]})


def norm_limits(reports: Sequence[GradientReport]) -> tuple[float, float]:
    """A log-scale x range that holds every healthy norm with a decade of room on each side."""
    norms = [row.norm for r in reports for row in r if row.status == "ok"]
    if not norms:
        return 1e-6, 1.0
    lo = 10 ** math.floor(math.log10(min(norms)) - 1)
    hi = 10 ** math.ceil(math.log10(max(norms)) + 0.3)
    return lo, hi


def _legend_handles(
    reports: Sequence[GradientReport], statuses: Sequence[Status] | None = None
) -> list:
    shown = set(
        statuses
        if statuses is not None
        else [s for s in STATUSES if any(r.any(s) for r in reports)]
    )
    handles: list = []
    for status in ("ok", "zero", "nonfinite", "none"):
        if status not in shown:
            continue
        style = STYLE[status]
        if status == "ok":
            handles.append(Patch(color=style["color"], label=style["label"]))
        else:
            handles.append(
                Line2D(
                    [],
                    [],
                    linestyle="none",
                    marker=style["marker"],
                    color=style["color"],
                    fillstyle=style["fill"],
                    markeredgewidth=2,
                    markersize=9,
                    label=style["label"],
                )
            )
    return handles


def _figure_and_axes(ax: Axes | None, height: float) -> tuple[Figure, Axes]:
    if ax is not None:
        return ax.figure, ax
    return plt.subplots(figsize=(6.4, height), layout="constrained")


def _check_report(report: object) -> None:
    if not isinstance(report, GradientReport):
        raise TypeError(
            f"expected a GradientReport from helpers.diagnosis.gradient_report, "
            f"got {type(report).__name__}."
        )
    if len(report) == 0:
        raise ValueError("the report has no variables to plot.")


def plot_spectrogram(
    audio, sample_rate: int = 16_000, labels=None, title: str | None = None
) -> Figure:
    """Log-magnitude spectrogram of ``helpers.audio.stft``, drawn by ``librosa.display.specshow``,
    with a strip underneath colouring each frame silent / voiced / unvoiced when ``labels``
    (``helpers.audio.FrameLabels``) are given, and the labelled f0 drawn on voiced frames."""
    import librosa
    import librosa.display

    from helpers.audio import HOP_LENGTH, check_audio, stft_magnitude

    audio = np.asarray(audio.numpy() if hasattr(audio, "numpy") else audio, dtype=np.float32)
    check_audio(audio)
    if labels is not None:
        labels.check_fits(len(audio), sample_rate)
    magnitude = stft_magnitude(audio).numpy().T  # (bins, frames), as librosa.display expects
    db = librosa.amplitude_to_db(magnitude, ref=np.max, amin=1e-5, top_db=None)
    rows = 2 if labels is not None else 1
    fig, axes = plt.subplots(
        rows,
        1,
        figsize=(8, 3.6 if rows == 2 else 3.0),
        sharex=True,
        squeeze=False,
        layout="constrained",
        gridspec_kw={"height_ratios": [6, 1][:rows]},
    )
    ax = axes[0, 0]
    image = librosa.display.specshow(
        db,
        sr=sample_rate,
        hop_length=HOP_LENGTH,
        x_axis="time",
        y_axis="log",
        ax=ax,
        vmin=-80,
        vmax=0,
        cmap="magma",
    )
    fig.colorbar(image, ax=axes[:, 0].tolist(), format="%+.0f dB", label="re. loudest bin")
    ax.set_title(title or "spectrogram")
    ax.set_xlabel("")
    if labels is not None:
        times = labels.frame_times()
        f0 = np.where(labels.voiced, labels.f0, np.nan)
        ax.plot(times, f0, color="cyan", linewidth=1.5, label="labelled f0")
        ax.legend(loc="upper right", fontsize="small")
        strip = axes[1, 0]
        colours = ListedColormap([VOICING_COLOURS[k] for k in (0, 1, 2)])
        edges = np.append(
            times - 0.5 * HOP_LENGTH / sample_rate, times[-1] + 0.5 * HOP_LENGTH / sample_rate
        )
        strip.pcolormesh(edges, [0, 1], labels.voicing[None, :], cmap=colours, vmin=-0.5, vmax=2.5)
        strip.set_yticks([])
        strip.set_xlabel("time (s)")
        strip.legend(
            handles=[
                Patch(color=VOICING_COLOURS[k], label=n)
                for k, n in ((0, "silent"), (1, "voiced"), (2, "unvoiced"))
            ],
            loc="upper center",
            bbox_to_anchor=(0.5, -0.9),
            ncol=3,
            fontsize="small",
            frameon=False,
        )
    return fig


def plot_state_gradients(
    curves: Mapping[str, Sequence[float | None]],
    title: str = "how far back the loss reaches: |d loss / d state_t|",
) -> Figure:
    """One line per way of running the loop: the norm of d loss / d state_t at each step t.

    A step whose gradient is None is drawn as a grey cross on the bottom edge, not as a value.
    """
    if not curves:
        raise ValueError("plot_state_gradients needs at least one curve, e.g. {'full': norms}.")
    fig, ax = plt.subplots(figsize=(7.5, 3.4), layout="constrained")
    finite = [v for norms in curves.values() for v in norms if v]
    lo = 10 ** np.floor(np.log10(min(finite)) - 0.5) if finite else 1e-6
    for (label, norms), style in zip(curves.items(), ["-", "--", ":", "-."]):
        steps = np.arange(len(norms))
        values = np.array([np.nan if v is None else v for v in norms], float)
        ax.plot(steps, values, style, marker=".", label=label)
        missing = steps[np.isnan(values)]
        if len(missing):
            ax.plot(
                missing,
                np.full(len(missing), lo),
                "x",
                color=STATUS_HEX["none"],
                clip_on=False,
                label=f"{label}: None",
            )
    ax.set_yscale("log")
    ax.set_ylim(bottom=lo)
    ax.set_xlabel("step t (frame)")
    ax.set_ylabel("|d loss / d state_t|")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", frameon=False)
    return fig


PATH_COLOURS = {"reach": "#2166ac", "loss": "#1b7837", "break": "#d6301d", "apart": "#888888"}


def _check_path_data(
    marks: list[str],
    sources: list[str],
    reaches: Sequence[Sequence[bool]],
    loss_reaches: Sequence[bool],
    sources_reached: Sequence[bool],
    passes_no_gradient: list[bool],
) -> None:
    """Refuse path data whose lengths do not fit its marks and sources."""
    if not sources:
        raise ValueError("plot_gradient_path needs at least one source.")
    if len(reaches) != len(sources) or any(len(r) != len(marks) for r in reaches):
        raise ValueError(
            f"reaches must hold one row of {len(marks)} booleans (one per mark) "
            f"for each of the {len(sources)} sources."
        )
    if len(loss_reaches) != len(marks) or len(passes_no_gradient) != len(marks):
        raise ValueError(
            f"loss_reaches and passes_no_gradient need one boolean per mark ({len(marks)})."
        )
    if len(sources_reached) != len(sources):
        raise ValueError(f"sources_reached needs one boolean per source ({len(sources)}).")


def plot_gradient_path(
    marks: Sequence[str],
    sources: Sequence[str],
    reaches: Sequence[Sequence[bool]],
    loss_reaches: Sequence[bool],
    sources_reached: Sequence[bool],
    breaks: Sequence[tuple[str, str]],
    passes_no_gradient: Sequence[bool] | None = None,
    start: str = "(variables)",
    end: str = "(loss)",
    ax: Axes | None = None,
) -> Figure:
    """The locator's picture of a gradient path (``Location.plot()`` passes its data).

    Columns: the sources, then the marks in forward order, then the loss. One row per source:
    a dot on each mark it reaches (``reaches[source][mark]``), joined by a line; the top row
    shows which marks the loss reaches (filled) and which it does not (hollow); a green dot in
    the loss column: that source gets a gradient. Each break ``(start, end)`` is a red band
    between its two columns, just before ``end`` when it starts at the sources (``start`` and
    ``end`` name the two ends of the path; any other name that is not a mark gets a column
    before the loss).
    A source that reaches no mark never enters the path: it sits below a dashed line, in
    grey. ``sources_reached[i]``: does the loss reach source i (its gradient is not None)?
    A mark that passes no gradient (NumPy, Python, integer) has a grey, italic label.
    """
    marks, sources = list(marks), list(sources)
    passes_no_gradient = list(passes_no_gradient or [False] * len(marks))
    _check_path_data(marks, sources, reaches, loss_reaches, sources_reached, passes_no_gradient)
    extra = [n for pair in breaks for n in pair if n not in (start, end, *marks)]
    columns = [start, *marks, *dict.fromkeys(extra), end]
    x_of = {name: i for i, name in enumerate(columns)}
    inside = [i for i, row in enumerate(reaches) if any(row)]
    apart = [i for i, row in enumerate(reaches) if not any(row)]
    order = inside + apart  # rows top to bottom, below the loss row
    fig, ax = _figure_and_axes(ax, height=0.4 * (len(sources) + 1) + 1.8)
    ax.figure.set_figwidth(max(ax.figure.get_figwidth(), 1.1 * len(columns) + 3))
    for row, i in enumerate(order, start=1):
        y = -row
        xs = [x_of[m] for m, hit in zip(marks, reaches[i]) if hit]
        if i in apart:
            ax.plot([0], [y], "s", color=PATH_COLOURS["apart"], gid="path-apart")
            ax.annotate(
                "reaches no mark",
                (0, y),
                xytext=(10, 0),
                textcoords="offset points",
                va="center",
                color=PATH_COLOURS["apart"],
                fontsize="small",
            )
            continue
        ax.plot([0, *xs], [y] * (len(xs) + 1), "-", color=PATH_COLOURS["reach"], alpha=0.5)
        ax.plot(xs, [y] * len(xs), "o", color=PATH_COLOURS["reach"], gid="path-reach")
        ax.plot([0], [y], "s", color=PATH_COLOURS["reach"])
        if sources_reached[i]:
            ax.plot([x_of[end]], [y], "o", color=PATH_COLOURS["loss"], gid="path-source-ok")
    if apart and inside:
        ax.axhline(
            -len(inside) - 0.5,
            color=PATH_COLOURS["apart"],
            linestyle="--",
            linewidth=1,
            gid="path-separator",
        )
    for x, hit in zip(range(1, len(marks) + 1), loss_reaches):
        ax.plot(
            [x],
            [0],
            "o",
            color=PATH_COLOURS["loss"],
            fillstyle="full" if hit else "none",
            markeredgewidth=1.5,
            gid="path-loss" if hit else "path-no-loss",
        )
    for first, last in breaks:  # from the sources: just before the first point not reached
        left = x_of[last] - 0.85 if first == start else x_of[first] + 0.15
        ax.axvspan(
            left, x_of[last] - 0.15, color=PATH_COLOURS["break"], alpha=0.18, gid="path-break"
        )
        ax.annotate(
            "break",
            ((left + x_of[last] - 0.15) / 2, 0.45),
            ha="center",
            color=PATH_COLOURS["break"],
            fontsize="small",
            fontweight="bold",
        )
    labels = {start: "sources", end: "loss"}
    ax.set_xticks(range(len(columns)), [labels.get(c, c) for c in columns], rotation=30, ha="right")
    for tick, name in zip(ax.get_xticklabels()[1:], marks):
        if passes_no_gradient[marks.index(name)]:
            tick.set_color(PATH_COLOURS["apart"])
            tick.set_fontstyle("italic")
            tick.set_gid("path-no-gradient")
    ax.set_yticks(
        [0, *range(-1, -len(order) - 1, -1)], ["loss reaches it", *(sources[i] for i in order)]
    )
    ax.set_xlim(-0.5, len(columns) - 0.5)
    ax.set_ylim(-len(order) - 0.7, 0.9)
    ax.set_title("the gradient path: marks in forward order")
    ax.grid(axis="x", alpha=0.3)
    return fig
