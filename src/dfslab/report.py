"""A self-contained HTML report from a run directory: tables and inline SVG plots, no
network needed to open it."""

from __future__ import annotations

import io
import re
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import jinja2
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .results import RunDir  # noqa: E402

TEMPLATE = jinja2.Template("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>dfslab run {{ run_id }}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}.ok{color:#080}.bad{color:#b00}
figure{margin:1em 0}figcaption{font-size:.9em;color:#555}code{background:#f6f6f6;padding:0 .2em}
</style></head><body>
<h1>dfslab run <code>{{ run_id }}</code></h1>
<p>Cluster <b>{{ cluster }}</b> ({{ filesystem }}, runtime {{ runtime }}) ·
health at the end of the workloads: <b class="{{ 'ok' if health == 'HEALTH_OK' else 'bad' }}">{{ health }}</b> ·
{{ started }} · {{ duration }} · dfslab {{ prov.dfslab_version }} ({{ prov.git_revision }}) · {{ prov.ceph_version }}</p>
<h2>Summary</h2>
<table><tr><th>workload</th><th>parameters</th><th>metric</th><th>mean</th><th>min</th><th>max</th><th>n</th><th>unit</th></tr>
{% for r in summary %}<tr><td>{{ r.workload }}</td><td>{{ r.params }}</td><td>{{ r.metric }}</td><td>{{ '%.4g' % r.mean }}</td>
<td>{{ '%.4g' % r.min }}</td><td>{{ '%.4g' % r.max }}</td><td>{{ r.n }}</td><td>{{ r.unit }}</td></tr>{% endfor %}
</table>
{% for fig in figures %}<figure>{{ fig.svg }}<figcaption>{{ fig.caption }}</figcaption></figure>{% endfor %}
<h2>Cluster at the end</h2>
<table><tr><th>daemon</th><th>node</th><th>address</th><th>pid</th><th>RSS MiB</th></tr>
{% for d in daemons %}<tr><td>{{ d.name }}</td><td>{{ d.node }}</td><td>{{ d.address }}</td><td>{{ d.pid }}</td>
<td>{{ '%.0f' % (d.rss_bytes / 1048576) if d.rss_bytes else '-' }}</td></tr>{% endfor %}
</table>
<p>Raw tool output: <code>raw/</code> · all measurements: <code>results.csv</code> · provenance: <code>provenance.json</code></p>
</body></html>
""", autoescape=True)


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    text = re.sub(r"<metadata>.*?</metadata>", "", text[text.index("<svg"):], flags=re.S)  # RDF boilerplate
    return jinja2.utils.markupsafe.Markup(text)


def _label(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(params.items()))


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple, list[float]] = defaultdict(list)
    units = {}
    for r in rows:
        if r["t"] is not None:
            continue
        key = (r["workload"], _label(r["params"]), r["metric"])
        groups[key].append(r["value"])
        units[key] = r["unit"]
    return [{"workload": w, "params": p, "metric": m, "mean": statistics.fmean(v), "min": min(v), "max": max(v),
             "n": len(v), "unit": units[(w, p, m)]} for (w, p, m), v in groups.items()]


def _series_figures(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    series: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    units = {}
    for r in rows:
        if r["t"] is not None:
            key = (r["workload"], r["metric"])
            series[key + (_label(r["params"]) + f" rep {r['repetition']}",)].append((r["t"], r["value"]))
            units[key] = r["unit"]
    figures = []
    for workload, metric in sorted({k[:2] for k in series}):
        fig, ax = plt.subplots(figsize=(8, 3.2))
        for (w, m, label), points in sorted(series.items()):
            if (w, m) == (workload, metric):
                points.sort()
                ax.plot([p[0] for p in points], [p[1] for p in points], marker=".", label=label)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(f"{metric} ({units[(workload, metric)]})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        figures.append({"svg": _svg(fig), "caption": f"{workload}: {metric} per second"})
    return figures


def build(run_path: Path) -> Path:
    run = RunDir(run_path)
    rows = run.rows()
    prov = run.read_json("provenance.json")
    status = run.read_json("status.json")
    start, end = prov.get("start"), prov.get("end")
    html = TEMPLATE.render(
        run_id=run.path.name, cluster=status.get("name", "?"), filesystem=status.get("filesystem", "?"),
        runtime=status.get("runtime", "?"), health=status.get("health", "unknown"), prov=prov,
        started=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start)) if start else "?",
        duration=f"{end - start:.0f} s" if start and end else "unfinished",
        summary=summarize(rows), figures=_series_figures(rows), daemons=status.get("daemons", []),
    )
    out = run.path / "report.html"
    out.write_text(html)
    return out
