"""perf.html: the run's figures with their trend and regression flags, and plots as PNG
embedded in the page (no server, nothing fetched)."""

from __future__ import annotations

import base64
import html
import io
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: render to PNG in memory
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from reports import page_style  # noqa: E402
from reports.perf.figures import FIGURES  # noqa: E402
from reports.perf.history import Comparison  # noqa: E402
from reports.perf.prepare_split import PHASES  # noqa: E402

# After page_style's rules.
STYLE = """body{max-width:80em}td,th{padding:.3em .6em}.regressed{background:#fdd}.missing{color:#888}
img{max-width:100%;border:1px solid #eee;margin:.5em 0}"""


def _png(fig: plt.Figure, tight: bool = True) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight" if tight else None)
    plt.close(fig)
    return f"<img alt='plot' src='data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}'>"


def _startup_plot(measured: dict[str, Any]) -> str | None:
    startup = measured.get("pod_startup") or {}
    modes = [m for m in ("metadata on", "metadata off") if m in startup]
    if not modes:
        return None
    split: dict[str, Any] = {m: (startup[m].get("prepare_split") or {}).get("driver_phases") for m in modes}
    split = {m: phases for m, phases in split.items() if phases}
    fig, axes = plt.subplots(1, 3 if split else 2, figsize=(16 if split else 11, 3.8))
    ecdf, prepare = axes[0], axes[1]
    for mode in modes:
        samples = sorted(startup[mode]["create_to_running_s"]["samples"])
        ecdf.step(samples, [(i + 1) / len(samples) for i in range(len(samples))], where="post", label=mode)
    ecdf.set(title="PF-02 pod create to Running (ECDF)", xlabel="seconds", ylabel="fraction of pods")
    ecdf.legend()
    stats = ("mean", "p50", "p99")
    for offset, mode in enumerate(modes):
        values = [startup[mode]["node_prepare_resources_s"][s] or 0 for s in stats]
        prepare.bar([i + offset * 0.4 for i in range(len(stats))], [v * 1000 for v in values], width=0.4, label=mode)
    prepare.set_xticks([i + 0.2 for i in range(len(stats))], stats)
    prepare.set(title="PF-03 kubelet PrepareResources", ylabel="ms")
    prepare.legend()
    if split:
        _split_bars(axes[2], split)
    return _png(fig)


def _split_bars(ax: plt.Axes, split: dict[str, dict[str, Any]]) -> None:
    """PF-06: the driver's mean NodePrepareResources per mode, stacked by phase."""
    bottoms = [0.0] * len(split)
    for phase in PHASES:
        means = [(phases.get(phase) or {}).get("mean") or 0.0 for phases in split.values()]
        ax.bar(list(split), [m * 1000 for m in means], bottom=bottoms, label=phase)
        bottoms = [b + m * 1000 for b, m in zip(bottoms, means)]
    ax.set(title="PF-06 NodePrepareResources in the driver, mean by phase", ylabel="ms")
    ax.legend(fontsize=7)


def _scheduler_plot(measured: dict[str, Any]) -> str | None:
    per_mode = ((measured.get("da_scale") or {}).get("summary") or {}).get("per_mode")
    if not per_mode:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    for ax, (key, title, scale) in zip(
        axes,
        (
            ("throughput_pods_per_s", "throughput (pods/s)", 1),
            ("scheduler_filter_mean_s", "Filter mean (ms)", 1000),
            ("scheduler_sli_p99_s", "creation to bound p99 (s)", 1),
        ),
    ):
        modes = [m for m in ("literal", "derived") if key in per_mode.get(m, {})]
        ax.bar(modes, [per_mode[m][key]["median"] * scale for m in modes], color=["#4c72b0", "#dd8452"][: len(modes)])
        ax.set_title(f"PF-04 {title}")
    return _png(fig)


def _trend_plot(history: list[dict[str, Any]], comparisons: list[Comparison]) -> str | None:
    if len(history) < 2:
        return None
    flagged = {c.key for c in comparisons if c.regressed}
    shown = [f for f in FIGURES if sum(r["figures"].get(f.key) is not None for r in history) >= 2]
    if not shown:
        return None
    columns = 4
    rows = (len(shown) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(14, 2.4 * rows), squeeze=False)
    for ax, figure in zip(axes.flat, shown):
        points = [(i + 1, r["figures"][figure.key]) for i, r in enumerate(history) if r["figures"].get(figure.key) is not None]
        ax.plot(*zip(*points), marker="o", color="#c44e52" if figure.key in flagged else "#4c72b0")
        ax.set_title(f"{figure.requirement} {figure.key}", fontsize=7)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # runs are counted, not measured
        ax.yaxis.set_major_locator(MaxNLocator(nbins=4))
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(shown) :]:
        ax.axis("off")
    # Fixed margins: fitting fifty small axes tightly costs seconds of text measuring per render.
    fig.subplots_adjust(left=0.04, right=0.99, top=1 - 0.35 / rows, bottom=0.25 / rows, hspace=0.55, wspace=0.25)
    return _png(fig, tight=False)


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "s" and value < 1:
        return f"{value * 1000:.1f} ms"
    return f"{value:.3g} {unit}" if unit != "ratio" else f"{value:.3f}"


def _this_run(entry: dict[str, Any]) -> str:
    """The value, with its 95% interval and sample count where it has them."""
    shown, unit, ci = _fmt(entry["value"], entry["unit"]), entry["unit"], entry["ci95"]
    return shown if ci is None else f"{shown} (95% CI {_fmt(ci[0], unit)} to {_fmt(ci[1], unit)}, n={entry['repetitions']})"


def _baseline(c: Comparison, unit: str) -> str:
    """The median of the earlier runs and their range: a change within it is the figure's usual swing."""
    if c.baseline_range is None:
        return f"{_fmt(c.baseline, unit)} ({c.runs} runs)"
    low, high = c.baseline_range
    return f"{_fmt(c.baseline, unit)} (range {_fmt(low, unit)} to {_fmt(high, unit)}, {c.runs} runs)"


def render(
    run: dict[str, Any], measured: dict[str, Any], comparisons: list[Comparison], history: list[dict[str, Any]], threshold: float
) -> str:
    by_key = {c.key: c for c in comparisons}
    rows = []
    for f in FIGURES:
        c = by_key[f.key]
        css = "regressed" if c.regressed else "missing" if c.value is None else ""
        change = "" if c.change is None else f"{c.change:+.1%} {'worse' if c.change > 0 else 'better' if c.change < 0 else ''}"
        rows.append(
            f"<tr class='{css}'><td>{f.requirement}</td><td>{html.escape(f.label)}</td>"
            f"<td>{_this_run(f.entry(measured))}</td><td>{_baseline(c, f.unit)}</td>"
            f"<td>{change}</td><td>{'REGRESSED' if c.regressed else ''}</td></tr>"
        )
    regressed = [c.key for c in comparisons if c.regressed]
    plots = [p for p in (_startup_plot(measured), _scheduler_plot(measured), _trend_plot(history, comparisons)) if p]
    problems = "".join(f"<li>{html.escape(k)}: {html.escape(v)}</li>" for k, v in run.get("errors", {}).items())
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in run.get("notes", []))
    named = ": " + html.escape(", ".join(regressed)) if regressed else ""
    return f"""{page_style.head(f"dralab performance {run['finished']}", STYLE)}
<h1>dralab performance report</h1>
<p>{html.escape(run["finished"])}, commit {html.escape(run.get("commit", "?"))}, {run["wall_seconds"]:.0f}s;
{len(regressed)} figure(s) regressed by more than {threshold:.0%} against the median of the previous runs{named}.</p>
{"<h2>Measurements that failed</h2><ul>" + problems + "</ul>" if problems else ""}
<table><tr><th>ID</th><th>figure</th><th>this run</th><th>baseline: median (range of those runs)</th><th>change</th><th></th></tr>
{"".join(rows)}</table>
{"<ul>" + notes + "</ul>" if notes else ""}
<h2>Plots</h2>{"".join(plots)}
<h2>Environment</h2><pre>{html.escape(str(run.get("environment", {})))}</pre>
</body></html>
"""
