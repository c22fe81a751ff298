"""What a benchmark invocation leaves: a summary table on the console, `<stamp>.json` and PNG plots
(throughput over time, latency CDF); `markdown_table` is the docs' benchmarks table (docs/hooks/site.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from rich.console import Console, JustifyMethod
from rich.table import Table

from .figures import FIGURES, Figure


def rows(report: dict) -> list[tuple[Figure, dict]]:
    """(figure, its median/min/max) for every known figure the report has."""
    out = []
    for figure in FIGURES:
        summary = report["scenarios"].get(figure.scenario)
        if summary is not None and figure.key in summary["figures"]:
            out.append((figure, summary["figures"][figure.key]))
    return out


def _met(figure: Figure, values: dict) -> str:
    if figure.goal is None:
        return ""
    met = figure.goal.met(values["median"])
    return "?" if met is None else ("yes" if met else "**no**")


def _range(figure: Figure, values: dict) -> str:
    if values["min"] is None:
        return "—"
    return f"{figure.format(values['min'])} – {figure.format(values['max'])}"


def print_summary(report: dict, console: Console) -> None:
    table = Table(
        title=f"plylog bench ({report['mode']}, {report['params']['runs']} run(s) each; {report['host']['cpus']} CPUs)",
        title_justify="left",
    )
    justify: JustifyMethod
    for column, justify in (
        ("figure", "left"),
        ("median", "right"),
        ("min – max", "right"),
        ("unit", "left"),
        ("goal", "right"),
        ("met", "center"),
    ):
        table.add_column(column, justify=justify)
    for figure, values in rows(report):
        met = _met(figure, values).replace("**", "")
        style = {"yes": "green", "no": "red"}.get(met, "")
        table.add_row(
            figure.title(report["params"]),
            figure.format(values["median"]),
            _range(figure, values),
            figure.unit,
            str(figure.goal or ""),
            f"[{style}]{met}[/{style}]" if style else met,
        )
    console.print(table)
    for name, summary in report["scenarios"].items():
        for note in summary["notes"]:
            console.print(f"[yellow]{name}: {note}[/yellow]")
        for error in summary["errors"]:
            console.print(f"[red]{name}: failed run: {error}[/red]")


def markdown_table(report: dict, json_name: str) -> str:
    lines = [
        f"Measured {report['started_at'][:16].replace('T', ' ')} ({report['mode']} mode, median of "
        f"{report['params']['runs']} run(s), min – max beside it; {report['host']['cpus']} CPUs, Python "
        f"{report['host']['python']}; full report `bench/results/{json_name}`).",
        "",
        "| figure | median | min – max | goal | met |",
        "|---|---:|---:|---:|:---:|",
    ]
    for figure, values in rows(report):
        unit = f" {figure.unit}" if figure.unit else ""
        lines.append(
            f"| {figure.title(report['params'])} | {figure.format(values['median'])}{unit} | "
            f"{_range(figure, values)} | {figure.goal or ''} | {_met(figure, values)} |"
        )
    return "\n".join(lines)


def write(report: dict, out_dir: Path, stamp: str) -> list[Path]:
    """The JSON report and its plots; returns the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [
        _plot_throughput(report, out_dir / f"{stamp}-throughput.png"),
        _plot_latency(report, out_dir / f"{stamp}-latency.png"),
    ]
    report["plots"] = [p.name for p in written if p is not None]
    path = out_dir / f"{stamp}.json"
    path.write_text(json.dumps(_without_nan(report), indent=1, allow_nan=False))
    return [path, *[p for p in written if p is not None]]


def _without_nan(value):
    """NaN (a figure a run could not measure) as null: JSON has no NaN."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _without_nan(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_nan(v) for v in value]
    return value


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plot_throughput(report: dict, path: Path) -> Path | None:
    from .measure import Series

    curves = [
        (f"{name}: {label}", Series([tuple(p) for p in points]))
        for name, summary in report["scenarios"].items()
        for label, points in summary.get("series", {}).items()
    ]
    if not curves:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 5.5))
    for label, series in curves:
        smoothed = series.throughput(window_s=0.5)
        if smoothed:
            ax.plot([t for t, _ in smoothed], [r for _, r in smoothed], label=label, linewidth=1.2)
    ax.set_xlabel("seconds since the burst started")
    ax.set_ylabel("records / s (0.5 s window)")
    ax.set_title(f"Throughput over time (median run of each; {report['params']['moves']:,} moves)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_latency(report: dict, path: Path) -> Path | None:
    curves = [
        (f"{name}: {label}", points)
        for name, summary in report["scenarios"].items()
        for label, points in summary.get("latency_quantiles_ms", {}).items()
    ]
    if not curves:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for label, points in curves:
        ax.plot([ms for _, ms in points], [q / 100 for q, _ in points], label=label, linewidth=1.4)
    ax.set_xscale("log")
    ax.set_xlabel("latency (ms, log scale)")
    ax.set_ylabel("fraction of moves")
    ax.set_title(
        f"Latency CDFs, median run: bots at {report['params']['latency_rate']:,.0f} moves/s offered; "
        f"{report['params']['http_bots']} HTTP bots",
        fontsize=10,
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
