"""``runs/<id>/report.html``: one self-contained page (plotly.js inline, no network needed to open it) of a run.

The loss and every other metric the ranks reported per epoch, samples/s of each reporting rank over the job's time
(restarts marked), where the time went (the phases, restarts), the per-node settings and tuning, the restarts,
stragglers and failure reasons. plotly is an optional extra (``pip install multinode-training[report]``): without
it :func:`write_report` raises ReportUnavailable, whose message is the one-line hint.

The figures are plotly.js figure specifications written as JSON and drawn by the page, from the plotly.js file the
package ships: its Python API is not imported, whose import alone took longer than the rest of a run's summary.
"""

from __future__ import annotations

import html
import importlib.util
import json
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from multinode_training.api import PROGRESS_FILE, SUMMARY_FILE, private_file, run_dir_at

REPORT_FILE = "report.html"
# plotly.js in the plotly package.
PLOTLY_JS = "package_data/plotly.min.js"
PHASE_ORDER = ("provision", "launch", "train", "collect")
# Keys of an epoch record that are not metrics.
EPOCH_FIELDS = ("kind", "epoch", "rank", "node", "time", "text", "samples_per_s")
# The figures' element ids (a test reads the plotted series back from them).
FIGURES = ("metrics", "throughput", "phases")


class ReportUnavailable(RuntimeError):
    """The report cannot be drawn here: plotly is not installed."""


def write_report(run: str | Path) -> Path:
    """Write ``report.html`` into the run directory ``run`` (it must hold a summary); its path. plotly.js (4.6 MB) is
    copied into the page as bytes: decoded, put in the page and encoded again it cost every job 0.13 s."""
    plotly_js = plotly_script()
    run_dir = run_dir_at(run)
    summary = json.loads((run_dir / SUMMARY_FILE).read_text())
    records = progress_records(run_dir / PROGRESS_FILE)
    figures = {
        "metrics": metrics_figure(epoch_series(records, summary)),
        "throughput": throughput_figure(throughput_series(records, summary), restart_spans(summary)),
        "phases": phases_figure(phase_spans(summary)),
    }
    plots = "\n".join(
        f"<h2>{html.escape(title)}</h2>\n" + plot_html(name, figures[name])
        for name, title in (
            ("metrics", "Loss and metrics per epoch"),
            ("throughput", "Samples/s of each reporting rank over the job's time"),
            ("phases", "Where the time went"),
        )
    )
    fields = {
        "title": html.escape(f"{summary['job_id']}: {summary['status']}"),
        "facts": facts_table(summary),
        "plots": plots,
        "nodes": nodes_table(summary.get("settings") or {}),
        "events": events_list(summary),
    }
    before, after = (part.format(**fields) for part in PAGE.split("{plotly}"))
    path = run_dir / REPORT_FILE
    temporary = run_dir / f".{REPORT_FILE}.tmp"
    with private_file(temporary).open("wb") as report:
        report.write(before.encode("utf-8"))
        with plotly_js.open("rb") as script:
            shutil.copyfileobj(script, report)
        report.write(after.encode("utf-8"))
    temporary.replace(path)
    return path


def plotly_script() -> Path:
    """plotly.js as the plotly package ships it (UTF-8), found without importing the package."""
    spec = importlib.util.find_spec("plotly")
    script = Path(spec.origin).parent / PLOTLY_JS if spec is not None and spec.origin else None
    if script is None or not script.is_file():
        raise ReportUnavailable(
            f"no report.html: plotly is not installed (no {PLOTLY_JS} found); pip install 'multinode-training[report]'"
        )
    return script


def plot_html(div_id: str, figure: Mapping[str, Any]) -> str:
    """The figure's element and the script that draws it there (plotly.js's ``Plotly.newPlot``)."""
    arguments = ", ".join(script_json(part) for part in (div_id, figure["data"], figure["layout"], {"responsive": True}))
    return f'<div id="{html.escape(div_id)}" style="width:100%"></div>\n<script>Plotly.newPlot({arguments});</script>'


def script_json(value: Any) -> str:
    """``value`` as JSON that cannot end the script element it is written into (a metric named ``</script>``)."""
    return json.dumps(value).replace("</", "<\\/")


def progress_records(path: Path) -> list[dict[str, Any]]:
    """progress.jsonl's records (a line that is not a JSON object is skipped)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def epoch_series(
    records: Iterable[Mapping[str, Any]], summary: Mapping[str, Any]
) -> dict[str, list[tuple[int, float]]]:
    """metric -> [(epoch, value)] of the epochs reported, every attempt's (the summary's history when the progress
    file has none)."""
    epochs = [record for record in records if record.get("kind") == "epoch"] or list(summary.get("epochs") or [])
    series: dict[str, list[tuple[int, float]]] = {}
    for record in epochs:
        for name, value in record.items():
            if name not in EPOCH_FIELDS and isinstance(value, (int, float)) and not isinstance(value, bool):
                series.setdefault(name, []).append((int(record["epoch"]), float(value)))
    return series


def throughput_series(
    records: Iterable[Mapping[str, Any]], summary: Mapping[str, Any]
) -> dict[str, list[tuple[float, float]]]:
    """ "rank N (node)" -> [(seconds since the job started, samples/s)] of each rank that reported it."""
    started = float(summary.get("started_at") or 0)
    series: dict[str, list[tuple[float, float]]] = {}
    for record in rate_records(records):
        name = f"rank {record.get('rank')} ({record.get('node')})"
        series.setdefault(name, []).append((round(float(record["time"]) - started, 3), float(record["samples_per_s"])))
    return series


def rate_records(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The epoch records that carry a rank's samples/s."""
    return [
        record
        for record in records
        if record.get("kind") == "epoch" and isinstance(record.get("samples_per_s"), (int, float))
    ]


def restart_spans(summary: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    """(label, from, to) in seconds since the job started: each restart, from its detection to the resume."""
    started = float(summary.get("started_at") or 0)
    spans = []
    for restart in summary.get("restarts") or []:
        detected = float(restart.get("detected_at") or started)
        resumed = float(restart.get("resumed_at") or detected)
        spans.append(
            (f"restart {restart.get('attempt')}: {restart.get('cause')}", detected - started, resumed - started)
        )
    return spans


def phase_spans(summary: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    """(phase, start, seconds) one after the other, in the order they ran."""
    phases = summary.get("phases") or {}
    spans, start = [], 0.0
    for name in [*PHASE_ORDER, *sorted(set(phases) - set(PHASE_ORDER))]:
        seconds = phases.get(name)
        if seconds is not None:
            spans.append((name, start, float(seconds)))
            start += float(seconds)
    return spans


def metrics_figure(series: Mapping[str, list[tuple[int, float]]]) -> dict[str, Any]:
    return {
        "data": [line_trace(name, [epoch for epoch, _ in points], [value for _, value in points]) for name, points in series.items()],
        "layout": {"xaxis": {"title": {"text": "epoch"}}, "height": 380, "margin": {"t": 20}, "showlegend": True},
    }


def throughput_figure(
    series: Mapping[str, list[tuple[float, float]]], restarts: list[tuple[str, float, float]]
) -> dict[str, Any]:
    """samples/s per rank over time, each restart a red band (from its detection to the resume) named at its top."""
    bands = [(label, begin, max(end, begin + 0.5)) for label, begin, end in restarts]
    return {
        "data": [line_trace(name, [at for at, _ in points], [value for _, value in points]) for name, points in series.items()],
        "layout": {
            "xaxis": {"title": {"text": "seconds since the job started"}},
            "yaxis": {"title": {"text": "samples/s"}},
            "height": 380,
            "margin": {"t": 20},
            "showlegend": True,
            "shapes": [
                {"type": "rect", "xref": "x", "yref": "y domain", "x0": begin, "x1": end, "y0": 0, "y1": 1,
                 "fillcolor": "red", "opacity": 0.15, "line": {"width": 0}}
                for _, begin, end in bands
            ],
            "annotations": [
                {"text": label, "xref": "x", "yref": "y domain", "x": begin, "y": 1, "xanchor": "left",
                 "yanchor": "top", "showarrow": False}
                for label, begin, _ in bands
            ],
        },
    }


def phases_figure(spans: list[tuple[str, float, float]]) -> dict[str, Any]:
    return {
        "data": [
            {"type": "bar", "x": [seconds], "y": ["run"], "base": [start], "orientation": "h", "name": f"{name} ({seconds:.1f} s)"}
            for name, start, seconds in spans
        ],
        "layout": {"barmode": "overlay", "xaxis": {"title": {"text": "seconds"}}, "height": 220, "margin": {"t": 20}},
    }


def line_trace(name: str, x: list[Any], y: list[float]) -> dict[str, Any]:
    return {"type": "scatter", "x": x, "y": y, "name": name, "mode": "lines+markers"}


def facts_table(summary: Mapping[str, Any]) -> str:
    rows = [
        ("status", summary.get("status")),
        ("launcher", summary.get("launcher")),
        ("nodes", ", ".join(summary.get("node_names") or summary.get("nodes") or [])),
        ("world size", summary.get("world_size")),
        ("test accuracy", summary.get("test_accuracy")),
        ("resumed from", summary.get("resumed_from") or "nothing (a fresh start)"),
        ("attempt", summary.get("attempt")),
        ("outputs", ", ".join(summary.get("outputs") or []) or "none"),
    ]
    return table((), rows)


def nodes_table(settings: Mapping[str, Any]) -> str:
    """Per node: interface, ranks, OpenMP threads and where they came from, and its topology."""
    tuning = settings.get("tuning") or {}
    if not tuning:
        return "<p>No per-node settings in this summary.</p>"
    rows = []
    for node, values in tuning.items():
        topology = (settings.get("topology") or {}).get(node) or {}
        rows.append(
            (
                node,
                (settings.get("interfaces") or {}).get(node, ""),
                values.get("slots"),
                f"{values.get('omp_num_threads')} ({(values.get('source') or {}).get('omp_num_threads', '')})",
                f"{topology.get('sockets', '?')} socket(s), {topology.get('numa_nodes', '?')} NUMA node(s),"
                f" {topology.get('physical_cores', '?')} physical cores",
                " ".join(f"{name}={value}" for name, value in (values.get("env") or {}).items()),
            )
        )
    caption = (
        f"<p>runtime {html.escape(str(settings.get('runtime', '')))}, {html.escape(str(settings.get('hostfile_dialect', '')))}"
        f" hostfile, backend {html.escape(str(settings.get('backend', '')))}</p>"
    )
    return caption + table(("node", "interface", "ranks", "OpenMP threads", "topology", "tuning"), rows)


def events_list(summary: Mapping[str, Any]) -> str:
    """The restarts, stragglers and failure reasons, root cause first."""
    items = [f"restart {restart.get('attempt')}: {restart.get('cause')}" for restart in summary.get("restarts") or []]
    items += [str(straggler.get("text", straggler)) for straggler in summary.get("stragglers") or []]
    items += [f"failure: {reason}" for reason in summary.get("failure_reasons") or []]
    if summary.get("root_cause_error"):
        items.append(f"the first failure's error: {summary['root_cause_error']}")
    if not items:
        return "<p>No restarts, stragglers or failures.</p>"
    return "<ul>" + "".join(f"<li>{html.escape(item)}</li>" for item in items) + "</ul>"


def table(header: tuple[str, ...], rows: Iterable[tuple[Any, ...]]) -> str:
    head = f"<tr>{''.join(f'<th>{html.escape(name)}</th>' for name in header)}</tr>" if header else ""
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table>{head}{body}</table>"


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;margin:1.5em;max-width:70em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:.2em .5em;text-align:left}}</style>
<script>{plotly}</script></head>
<body><h1>{title}</h1>
{facts}
{plots}
<h2>Nodes</h2>
{nodes}
<h2>Restarts, stragglers, failures</h2>
{events}
</body></html>
"""
