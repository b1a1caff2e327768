"""A self-contained HTML report from a run directory (no network needed to open it):
bottleneck lines, a summary with 95 % intervals, baselines, throughput per server over time,
the backend's health timeline, the file size x threads heatmap, latency distributions and scaling curves.
Every figure is matplotlib SVG inlined in the page."""

from __future__ import annotations

import csv
import io
import json
import re
import statistics
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import jinja2
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .labels import SUMMARY_METRICS, params_label, varying_keys  # noqa: E402
from .analysis import Limits, bottleneck, busiest_cpu, share_cells, cpu_during, mean_ci95, transfer_seconds  # noqa: E402
from .compare import compare_runs, headline, verdict  # noqa: E402
from .results import RunDir, with_units  # noqa: E402
from .units import human_bytes, quantity, si, to_display  # noqa: E402
from .ledger import FROM_STORAGE_FLOOR, shares as ledger_shares  # noqa: E402
from .registry import RUNTIMES, runtime_class  # noqa: E402
from .workloads import MIN_PHASE_SECONDS, direction  # noqa: E402

# Tables sit in div.wide: the results table with every metric column was 1431 px wide, wider
# than a 1280-px window, and the whole page scrolled sideways; now only the table scrolls.
TEMPLATE = jinja2.Template("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>dfslab {{ title }}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1150px;color:#222}
div.wide{overflow-x:auto}table{border-collapse:collapse;margin:.8em 0}td,th{border:1px solid #ccc;padding:.25em .55em;text-align:right;font-size:.92em}
th{background:#f3f3f3}td.l,th.l{text-align:left}td.p{white-space:nowrap}.ok{color:#080}.bad{color:#b00}.warn{color:#a60}
figure{margin:1.2em 0}figcaption{font-size:.9em;color:#555}code{background:#f6f6f6;padding:0 .2em}
ul.bn li{margin:.25em 0;font-family:ui-monospace,monospace;font-size:.92em}
p.verdict{font-size:1.1em}td.sat{font-weight:bold;color:#b00}p.note{font-size:.85em;color:#555;max-width:60em}
</style></head><body>
<h1>dfslab {{ title }}</h1>
<p>Cluster <b>{{ cluster }}</b> ({{ filesystem }}, runtime {{ runtime }}{% if prov.client == 'job' %}, each tool a Job that mounts anew{% elif prov.client == 'host' and client_choice %}, tools on the host's client{% endif %}) ·
{{ started }} · {{ duration }} · dfslab {{ prov.dfslab_version }} ({{ prov.git_revision }}) · {{ (prov.filesystem_versions or {'ceph': prov.ceph_version}).values()|join(' · ') }} ·
kernel {{ prov.kernel }} · {{ prov.cpus }} CPUs · {{ memory }}</p>
<h2 id="verdict">Verdict</h2>
<p class="verdict">Cluster after the workloads: <b class="{{ 'ok' if health == 'HEALTH_OK' else 'bad' }}">{{ health }}</b> ·
data: {% if integrity %}<b class="{{ 'ok' if not integrity.lost and not integrity.corrupt else 'bad' }}">{{ integrity.lost }} lost,
{{ integrity.corrupt }} corrupt</b> of {{ integrity.checked }} checksummed{% elif faults %}<b class="bad">not verified</b>{% else %}not
checked (no faults: an experiment's <code>faults:</code> checks every acknowledged write){% endif %} ·
{{ measured_steps }} step(s) measured{% if not_as_asked %}, <b class="bad">{{ not_as_asked|length }} not as asked</b>{% endif %}{% if failures %}, <b class="bad">{{ failures|length }} failed</b>{% endif %}{% if skipped %},
<span class="warn">{{ skipped|length }} skipped</span>{% endif %}</p>
{% if not_as_asked %}<p class="bad"><b>Not as asked</b> (measured, but not what the experiment asked for: these numbers answer another question):</p><ul>{% for s in not_as_asked %}<li class="bad">{{ s }}</li>{% endfor %}</ul>{% endif %}
{% set platform = bottlenecks|selectattr('platform')|list %}{% if bottlenecks %}<div class="wide"><table class="steps"><tr><th class="l">step</th><th>result</th><th>CPU</th>{% if platform %}<th title="of the machine's CPUs, in the same seconds">of it Kubernetes</th>{% endif %}<th>link</th><th>disk</th><th class="l">limited by</th></tr>
{% for b in bottlenecks %}<tr><td class="l">{{ b.step }}</td><td class="p">{{ b.result }}</td>{% for k in ('CPU', 'link', 'disk') %}<td class="p {{ 'sat' if b.bound == k else '' }}">{{ b.shares.get(k, '–') }}</td>{% if k == 'CPU' and platform %}<td class="p">{{ b.platform or '–' }}</td>{% endif %}{% endfor %}
<td class="l p {{ 'sat' if b.bound else '' }}">{{ b.limit }}</td></tr>{% endfor %}
</table></div>{% if platform %}<p class="note">"Of it Kubernetes": the CPU Kubernetes itself took in the same seconds (API server, etcd,
controller manager, scheduler, the kubelets and containerd, as dfslab started them), a share of the machine's CPUs: what
running the cluster under Kubernetes cost beside the storage and the workload.</p>{% endif %}
<p class="note">Each step's share of the limits measured before the workloads (client link by iperf3, disk by fio)
and of the machine's CPU in the seconds the step moved data (its links carried at least a quarter of its busiest
second; not making and removing a pool around it); a resource at 75 % or more is what limited the step (marked).
Link and disk are weighed by the bytes the byte ledger counted during the step (the clients' links; the servers'
block I/O, replicas and metadata included); where it counted nothing the share is assumed and says so. "None
saturated": the step was bound by latency or by how many I/Os it kept in flight.</p>{% endif %}
{% if failures %}<p class="bad"><b>Failures:</b></p><ul>{% for f in failures %}<li class="bad">{{ f }}</li>{% endfor %}</ul>{% endif %}
{% if skipped %}<p class="warn">Skipped: {{ skipped|join('; ') }}</p>{% endif %}
{% if server_cache %}<p>Server caches dropped before every step: {{ server_cache }}.</p>{% endif %}
{% if attempts|length > 1 %}<p>Resumed run: {% for a, n in attempts %}attempt {{ a }}: {{ n }} step(s){{ "; " if not loop.last }}{% endfor %}
(each step's attempt is in intervals.json).</p>{% endif %}
{% if faults %}<h2>Faults</h2>
<p>Integrity: {% if integrity %}<b class="{{ 'ok' if not integrity.lost and not integrity.corrupt else 'bad' }}">{{ integrity.lost }} lost,
{{ integrity.corrupt }} corrupt</b> of {{ integrity.checked }} checksummed objects and files (seeded before the faults, and every write the
client saw acknowledged during them){% if integrity.lost_names %}; lost: {{ integrity.lost_names|join(', ') }}{% endif %}
{% if integrity.corrupt_names %}; corrupt: {{ integrity.corrupt_names|join(', ') }}{% endif %}{% if integrity.left %}; left in
place to look into: {{ integrity.left|join(', ') }}{% elif integrity.removed %}; removed after the check ({{ integrity.removed }}
items){% endif %}{% else %}<b class="bad">not verified</b>{% endif %}.</p>
<div class="wide"><table><tr><th class="l">fault</th><th class="l">target</th><th>injected (s)</th><th>in effect after (s)</th><th>undone (s)</th><th>detected after (s)</th>
<th>recovered after undo began (s)</th><th>undo took (s)</th><th class="l">seen before the undo</th><th class="l">writes blocked</th><th>writes acked while in effect</th><th>client MB/s before</th><th>during</th><th>during / before</th><th title="the step's bandwidth in the repetition with the fault over its clean repetitions (95 % interval over them)">step with the fault / without</th><th>write latency ms before</th><th>during</th><th class="l">error</th></tr>
{% for f in faults %}<tr><td class="l">{{ f.kind }}</td><td class="l">{{ f.target }}</td><td>{{ f.t_inject }}</td><td>{{ f.in_effect }}</td><td>{{ f.t_undo }}</td>
<td>{{ f.detect }}</td><td>{{ f.recover }}</td><td>{{ f.undo_took }}</td><td class="l">{{ f.seen }}</td><td class="l {{ 'warn' if f.blocked_flag else '' }}">{{ f.blocked }}</td><td>{{ f.acked }}</td><td>{{ f.before }}</td><td>{{ f.during }}</td><td>{{ f.fraction }}</td><td class="l">{{ f.cost }}</td><td>{{ f.lat_before }}</td><td>{{ f.lat_during }}</td><td class="l bad">{{ f.error or '' }}</td></tr>{% endfor %}
</table></div>
{% for f in faults if f.steps %}<h3>{{ f.kind }} {{ f.target }}, step by step</h3>
<div class="wide"><table><tr><th class="l">step</th><th class="l">node</th><th>began (s)</th><th>took (s)</th><th>client MB/s</th><th class="l">writes blocked</th></tr>
{% for st in f.steps %}<tr><td class="l">{{ st.what }}</td><td class="l">{{ st.node }}</td><td>{{ st.began }}</td><td>{{ st.took }}</td><td>{{ st.throughput }}</td><td class="l {{ 'warn' if st.blocked_flag else '' }}">{{ st.blocked }}</td></tr>{% endfor %}
</table></div>{% endfor %}
<p>"during" is from when the fault was in effect (inject returned; filling an OSD takes a while; an upgrade is in effect
while it restarts the daemons) to its undo. Writes blocked:
the longest time in that window in which dfslab's checksummed writer (one write in flight at a time) got no acknowledgement;
"yes" from {{ blocked_threshold }} s.</p>{% endif %}
{% if tune %}{% set c = tune.confirmation %}<h2>Tuning: {{ 'maximize' if tune.objective.maximize else 'minimize' }} {{ tune.objective.text }}</h2>
<p>{{ c.metric }} of <code>{{ tune.objective.step }}</code>, over {{ tune.search.combinations }} combination(s) of the swept
settings ({{ tune.search.sampler }}; {{ tune.search.pruner }}); stopped: {{ tune.search.stopped }}, after
{{ '%.1f' % (tune.elapsed_seconds / 60) }} of {{ '%.1f' % (tune.budget_seconds / 60) }} min.
Best: <b>{% for k, v in tune.best.items() %}{{ k }}={{ v }}{{ ", " if not loop.last }}{% endfor %}</b>.
Measured afresh beside the default, in runs default, best, best, default ({% for k, v in tune.default.items() %}{{ k }}={{ v }}{{ ", " if not loop.last }}{% endfor %}),
best / default = <b>{{ '%.3f' % c.best_over_default }}</b>{% if c.low is not none %}, 95 % interval {{ '%.3f' % c.low }} – {{ '%.3f' % c.high }}:
<b class="{{ 'ok' if c.better else 'bad' if c.significant else 'warn' }}">{{ c.said or {'different': 'a real difference', 'same': 'the same as the default'}.get(c.verdict, "can't tell") }}</b>{% endif %} ({{ c.why }}).{% if c.not_from_storage %}
<b class="warn">Not from the storage</b>: the {{ c.not_from_storage|join(' and ') }} configuration's {{ c.metric }} came from a
cache (byte ledger: the clients' links carried under {{ floor }} of the bytes the tool counted); this ranks a cache, not the cluster.{% endif %}
To reproduce: <code>{{ tune.reproduce }}</code> in this run's directory.</p>
<div class="wide"><table><tr><th>setting</th><th class="l">values</th><th>repetitions</th><th>mean {{ c.metric }}</th><th class="l">state</th><th class="l">applied</th><th class="l">run</th></tr>
{% for t in tune.trials %}<tr><td>{{ t.number }}</td><td class="l p">{% for k, v in t.settings.items() %}{{ k }}={{ v }}{{ "<br>"|safe if not loop.last }}{% endfor %}</td>
<td>{{ t["values"]|length }}</td><td>{{ '%.4g' % t.mean if t.mean is not none else '' }}</td><td class="l">{{ t.state }}</td>
<td class="l">{{ t.applied }}</td><td class="l"><code>{{ t.run }}</code></td></tr>{% endfor %}
</table></div>{% endif %}
{% if ranking %}<h2>Settings ranked</h2>
<p>Each headline metric with every setting's mean and 95 % interval, best first. A winner is named only when the
interval of best / runner-up, over runs, excludes 1: with one run per setting none is (the interval within one run cannot
see run-to-run variation; <code>runs: 3</code> gives each setting runs). <code>settings.json</code> has it all.</p>
<div class="wide"><table><tr><th class="l">workload</th><th class="l">parameters</th><th class="l">metric</th><th class="l">ranking (mean ± 95 %)</th><th class="l">winner</th></tr>
{% for r in ranking %}<tr><td class="l">{{ r.workload }}</td><td class="l p">{{ r.params }}</td><td class="l">{{ r.metric }} ({{ r.unit }})</td>
<td class="l">{% for e in r.ranking %}{{ e.settings }}: {{ '%.4g' % e.mean }}{% if e.ci95 is not none %} ± {{ '%.2g' % e.ci95 }}{% endif %}{% if e.settings in r.not_from_storage %} <span class="warn">(not from the storage: {{ '%.2f' % e.from_storage }} of its bytes on the wire)</span>{% endif %}{{ "<br>"|safe if not loop.last }}{% endfor %}</td>
<td class="l">{% if r.winner %}<b>{{ r.winner }}</b> ({{ '%.3f' % r.best_over_runner_up }}× the runner-up){% else %}no winner: {{ r.why or 'none beat the noise' }}{% endif %}</td></tr>{% endfor %}
</table></div>{% for f in settings_figures %}<figure>{{ f.svg }}<figcaption>{{ f.caption }}</figcaption></figure>{% endfor %}{% endif %}
{% if comparison %}<h2>{% set what = comparison.what or "runtime" %}{{ what|capitalize }} {{ comparison.runtime }} against {{ what }} {{ comparison.baseline_runtime }}</h2>
<p>The same experiment on a fresh cluster of each {{ comparison.what or "runtime" }}; B = run(s) <code>{{ comparison.runs|join(', ') }}</code>
against A = run(s) <code>{{ comparison.baseline_runs|join(', ') }}</code>.
<b class="{{ 'warn' if comparison.significant else 'ok' }}">{{ comparison.verdict }}</b>.
The table shows the headline metrics; <code>comparison.json</code> has every one.{% if comparison.sequential %}
Runs were added until decided (<code>--until-decided</code>, {{ comparison.sequential.planned_rounds }} rounds planned): the metrics
not yet decided were tested at the {{ comparison.sequential.text or ('looks after rounds ' ~ (comparison.sequential.look_rounds or [])|join(' and ')) }}; the looks share the 5 % error, and a metric keeps
the verdict and interval of the look that decided it.{% endif %}</p>
<div class="wide"><table><tr><th class="l">workload</th><th class="l">parameters</th><th class="l">metric</th><th>A ({{ comparison.baseline_runtime }})</th>
<th>B ({{ comparison.runtime }})</th><th>B/A</th><th>{{ 'interval' if comparison.sequential else '95 % interval' }}</th><th class="l">verdict</th></tr>
{% for r in comparison.headline %}<tr><td class="l">{{ r.workload }}</td><td class="l p">{{ r.params }}</td><td class="l">{{ r.metric }} ({{ r.unit }})</td>
<td>{{ '%.4g' % r.mean_a }}</td><td>{{ '%.4g' % r.mean_b }}</td><td>{{ '%.3f' % r.ratio if r.ratio is not none else '-' }}</td>
<td>{% if r.low is not none %}{{ '%.3f' % r.low }} – {{ '%.3f' % r.high }}{% if r.over == 'one run' %} (within one run){% endif %}{% else %}none{% endif %}</td>
<td class="l {{ 'warn' if r.significant else '' }}">{{ r.verdict }}: {{ r.why }}{% if r.decided_at %} · decided after {{ r.decided_at }} runs per side{% elif comparison.sequential %} · not decided{% endif %}{% if r.not_from_storage %} <span class="warn">· not from the storage on {{ r.not_from_storage|join(' and ') }} (byte ledger: {{ '%.2f' % r.from_storage_a if r.from_storage_a is not none else '?' }} / {{ '%.2f' % r.from_storage_b if r.from_storage_b is not none else '?' }} of its bytes on the wire)</span>{% endif %}</td></tr>{% endfor %}
</table></div>{% if comparison.forest %}<figure>{{ comparison.forest }}<figcaption>B/A of each headline metric with its 95 % interval (log scale): the grey band is the margin of "same" (±{{ '%.0f' % (comparison.margin * 100) }} %); a bar wholly outside 1 is "different", wholly inside the band "same"; hollow: within one run, no verdict of difference</figcaption></figure>{% endif %}{% endif %}
<h2>Summary</h2>
<p>Mean ± 95 % interval over repetitions (n). Every metric of every tool is in <code>results.csv</code>.</p>
{% for title, lines, columns in tables %}{% if lines %}<h3>{{ title }}</h3>
<div class="wide"><table><tr><th class="l">workload</th><th class="l">parameters</th>{% for m, head in columns %}<th>{{ head }}</th>{% endfor %}<th>n</th></tr>
{% for r in lines %}<tr><td class="l">{{ r.workload }}</td><td class="l p">{{ r.params }}</td>
{% for m, head in columns %}<td>{{ r.cells.get(m, '') }}</td>{% endfor %}<td>{{ r.n }}</td></tr>{% endfor %}
</table></div>{% endif %}{% endfor %}
{% if uncached %}<p class="warn"><b>Not measuring the storage</b> (byte ledger: the clients' links carried under {{ floor }} of
the bytes the tool counted; <code>from_storage</code> rows in results.csv):</p><ul>{% for line in uncached %}<li class="warn">{{ line }}</li>{% endfor %}</ul>{% endif %}
{% if step_warnings %}<p class="warn"><b>Ran under a warning</b> (the cluster's, during the step; it blocked nothing, <code>warnings</code> in intervals.json):</p><ul>{% for line in step_warnings %}<li class="warn">{{ line }}</li>{% endfor %}</ul>{% endif %}
{% if short %}<p class="warn"><b>Too short to time</b> (<code>duration</code> rows in results.csv):</p><ul>{% for line in short %}<li class="warn">{{ line }}</li>{% endfor %}</ul>{% endif %}
{% if prov.metadata and prov.metadata.client_write_ack and write_rows %}<p class="warn"><b>Writes acknowledged by the client</b>: {{ prov.metadata.client_write_ack }}.</p>{% endif %}
{% if metadata_lines %}<p><b>Where the metadata work went</b>: {{ prov.metadata.path }}</p><ul>{% for line in metadata_lines %}<li>{{ line }}</li>{% endfor %}</ul>{% endif %}
{% if shallow %}<p class="warn"><b>Queue depth not reached:</b></p><ul>{% for line in shallow %}<li class="warn">{{ line }}</li>{% endfor %}</ul>{% endif %}
{% for fig in figures %}<figure>{{ fig.svg }}<figcaption>{{ fig.caption }}</figcaption></figure>{% endfor %}
<h2>Cluster at the end</h2>
<div class="wide"><table><tr><th class="l">daemon</th><th class="l">node</th><th class="l">address</th><th>pid</th><th>RSS MiB</th></tr>
{% for d in daemons %}<tr><td class="l">{{ d.name }}</td><td class="l">{{ d.node }}</td><td class="l">{{ d.address }}</td><td>{{ d.pid }}</td>
<td>{{ '%.0f' % (d.rss_bytes / 1048576) if d.rss_bytes else '-' }}</td></tr>{% endfor %}
</table></div>
{% for line in status_summary %}<p>{{ line }}</p>{% endfor %}
{% for tab in status_tables %}<h3>{{ tab.title }}</h3><div class="wide"><table><tr>{% for c in tab.columns %}<th class="l">{{ c }}</th>{% endfor %}</tr>
{% for row in tab.rows %}<tr>{% for c in row %}<td class="l">{{ c }}</td>{% endfor %}</tr>{% endfor %}</table></div>{% endfor %}
<p>Raw tool output: <code>raw/</code> · measurements: <code>results.csv</code> · time series: <code>timeseries.csv</code> ·
provenance: <code>provenance.json</code></p>
</body></html>
""", autoescape=True)


def _svg(fig) -> Any:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    text = re.sub(r"<metadata>.*?</metadata>", "", text[text.index("<svg"):], flags=re.S)  # RDF boilerplate
    return jinja2.utils.markupsafe.Markup(text)


BASELINE_METRICS = ["network_bandwidth", "disk_write_bandwidth", "disk_read_bandwidth", "disk_randread_iops"]


def summarize(rows: list[dict[str, Any]], columns: list[str]) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """One line per workload and varying parameters; the headline metrics as columns
    (mean ± 95 % interval over repetitions). Every metric is in results.csv.
    Values are converted on the way in (times to ms), so a column holds one unit; a metric
    reported in units that do not convert gets one column per unit.
    Returns the lines and the (column key, header with unit) pairs that have any value."""
    varying = varying_keys(rows)
    groups: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    heads: dict[str, tuple[str, str]] = {}
    metric_of: dict[str, str] = {}
    for r in rows:
        if r["t"] is None and r["metric"] in columns:
            value, unit = to_display(r["value"], r["unit"])
            key = f"{r['metric']} ({unit})"
            heads[key] = (r["metric"], unit)
            metric_of[key] = r["metric"]
            groups[(r["workload"], params_label(r["params"], varying[r["workload"]]))][key].append(value)
    out = []
    for (workload, params), metrics in groups.items():
        cells, numbers = {}, {}
        for key, values in metrics.items():
            mean, ci = numbers[key] = mean_ci95(values)
            cells[key] = cell(mean, ci, metric_of[key])
        if cells:
            out.append({"workload": workload, "params": params, "cells": cells, "numbers": numbers,
                        "n": max(len(v) for v in metrics.values())})
    used = sorted(heads, key=lambda k: (columns.index(heads[k][0]), heads[k][1]))
    return out, [(k, k.replace("_", " ")) for k in used]


def cell(mean: float, ci: float | None, metric: str) -> str:
    """A table cell: shares with 3 decimals, else 3 significant figures with an SI suffix
    (17.4 k op/s, not 1.739e+04); the interval to 2."""
    if metric == "from_storage":
        text, ci_text = f"{mean:.3f}", f"{ci:.3f}" if ci is not None else ""
    else:
        text, ci_text = si(mean), si(ci, 2) if ci is not None else ""
    return text + (f" ± {ci_text}" if ci_text else "")


def metadata_lines(metadata: dict[str, Any] | None, intervals: list[dict], series: dict[str, list]) -> list[str]:
    """For each metadata step: the CPU the filesystem's metadata servers used while it ran (their
    sampled `cpu.<daemon>`, % of one CPU), so a comparison of filesystems says where that work went."""
    if not metadata:
        return []
    pattern = re.compile(rf"cpu\.({metadata['servers']})") if metadata.get("servers") else None
    out = []
    for iv in intervals:
        if iv["workload"] != "metadata" or iv.get("error"):
            continue
        used = {name[4:]: cpu_during(pts, iv["start"], iv["end"]) for name, pts in series.items()
                if pattern and pattern.fullmatch(name)}
        said = ", ".join(f"{d} {c:.0f} % of one CPU" for d, c in sorted(used.items()) if c is not None)
        out.append(f"{iv['label']} rep {iv.get('repetition', 0) + 1}: "
                   + (said or "no metadata server's CPU was sampled during it"))
    return out


def shallow_depths(rows: list[dict[str, Any]]) -> list[str]:
    """The fio rows whose storage saw fewer than half the I/Os in flight their parameters ask
    for (`depth`, see workloads.fiotool.effective_depth): their latency and IOPS are those of a
    shallower queue, so the report says so beside the table."""
    varying = varying_keys(rows)
    out = []
    for r in rows:
        p = r["params"]
        asked = int(p.get("iodepth") or 1) * int(p.get("numjobs") or 1) * int(p.get("clients") or 1)
        if r["metric"] == "depth" and r["t"] is None and r["value"] < asked / 2:
            out.append(f"{r['workload']} {params_label(p, varying[r['workload']])} {p.get('op', '')}: "
                       f"{r['value']:.1f} I/Os in flight of {asked} asked; each I/O completed inside its submit call "
                       f"(this client does not queue them): for concurrency use numjobs (one thread each) with iodepth: 1")
    return out


def not_from_storage_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Each row whose bytes mostly did not cross the clients' links (dfslab.ledger): a read served
    from the client's cache, or a write acknowledged before it reached the cluster."""
    varying = varying_keys(rows)
    out = []
    for r in rows:
        if r["metric"] == "from_storage" and r["t"] is None and r["value"] < FROM_STORAGE_FLOOR:
            write = direction(r["params"]) == "write"
            out.append(f"{r['workload']} {params_label(r['params'], varying[r['workload']])} "
                       f"{'write' if write else 'read'}, repetition {r['repetition']}: {r['value']:.2f} of its bytes "
                       + ("left the client while it was timed: acknowledged by a client cache, not the cluster"
                          if write else "reached the client over its link: served from the client's cache"))
    return out


def short_phases(rows: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """(workload, its parameters as the tables label them) -> the shortest timed phase of that
    line, for every line with a phase under MIN_PHASE_SECONDS (its `duration` rows)."""
    varying = varying_keys(rows)
    out: dict[tuple[str, str], float] = {}
    for r in rows:
        if r["metric"] == "duration" and r["t"] is None and r["value"] < MIN_PHASE_SECONDS:
            key = (r["workload"], params_label(r["params"], varying[r["workload"]]))
            out[key] = min(r["value"], out.get(key, r["value"]))
    return out


def mark_untimed(lines: list[dict], short: dict[tuple[str, str], float]) -> int:
    """Lines of the results table whose phase was too short to time (`short`: report.short_phases)
    get "–" for their rates and latencies, which a burst does not have, and a note; how many."""
    marked = 0
    for line in lines:
        seconds = short.get((line["workload"], line["params"]))
        if seconds is None:
            continue
        line["cells"] = {k: v if k == "from_storage (ratio)" else "–" for k, v in line["cells"].items()}
        line["note"] = "; ".join(n for n in (line.get("note", ""), f"too short to time ({seconds:.2g} s)") if n)
        marked += 1
    return marked


def short_phase_lines(rows: list[dict[str, Any]]) -> list[str]:
    varying = varying_keys(rows)
    capped = [f"{r['workload']} {params_label(r['params'], varying[r['workload']])}, repetition {r['repetition']}: "
              f"stopped at dfslab's cap of {r['value']:.0f} objects (40 % of the pool's free space, so a write cannot "
              f"fill the cluster) before its {r['params'].get('seconds', '?')} s; give the OSDs more room to time it all"
              for r in rows if r["metric"] == "cap_reached"]
    return capped + [f"{workload} {params}: timed over {seconds:.2g} s (under {MIN_PHASE_SECONDS:g} s: a burst of a few "
                     f"I/Os, its p99 near its maximum, shorter than one sample of the sampler; size it to run longer)"
                     for (workload, params), seconds in short_phases(rows).items()]


def read_timeseries(path: Path) -> dict[str, list[tuple[float, float]]]:
    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    if path.exists():
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh):
                series[row["series"]].append((float(row["t"]), float(row["value"])))
    return series


LIMIT_TEXT = {"CPU": "CPU", "link": "network", "disk": "disk", None: "none saturated"}


# At or under this transfer size a step's number is its operations per second: storage people read
# 4 KiB random I/O in IOPS, and its MB/s looks negligible beside a 1 MiB step's.
SMALL_BLOCK = 64 * 1024
BLOCK_PARAMS = ("bs", "object_size", "block_size", "file_size")


def _small_block_iops(rows) -> dict[tuple[str, str], float]:
    """{(step, params as JSON): IOPS} of every small-block measurement, to show beside its headline."""
    out = {}
    for r in rows:
        size = next((r["params"][k] for k in BLOCK_PARAMS if isinstance(r["params"].get(k), int)), None)
        if r["metric"] == "iops" and r["t"] is None and size is not None and size <= SMALL_BLOCK:
            out[(r.get("step", ""), json.dumps(r["params"], sort_keys=True))] = r["value"]
    return out


def _short_timed(rows: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """{(step, params as JSON): seconds} of every phase timed under MIN_PHASE_SECONDS."""
    return {(r.get("step", ""), json.dumps(r["params"], sort_keys=True)): r["value"] for r in rows
            if r["metric"] == "duration" and r["t"] is None and r["value"] < MIN_PHASE_SECONDS}


def bottleneck_rows(rows, intervals, series, replicas, units=None) -> list[dict[str, Any]]:
    """One row per headline (mean over repetitions): the step, its number, the share of CPU, link
    and disk it used and what limited it; `units` (units.json) shows byte parameters as the tables
    do (bs=4KiB, not 4096)."""
    varying = varying_keys(rows)
    limits = Limits.from_rows(rows, replicas)
    cpu = busiest_cpu(series)
    platform = series.get("cpu.platform", [])
    grouped: dict[tuple, list[tuple[float, float | None, dict, float | None]]] = defaultdict(list)
    ops, bursts = _small_block_iops(rows), _short_timed(rows)
    small: dict[tuple, list[float]] = defaultdict(list)
    short: dict[tuple, float] = {}  # steps with a repetition too short to time: its shortest
    for iv in intervals:
        if iv.get("error"):
            continue
        for h in iv["headlines"]:
            step = (f"{iv.get('label')} rep {iv.get('repetition', 0)}", json.dumps(h["params"], sort_keys=True))
            counted, burst = ops.get(step), bursts.get(step)
            h = {**h, "params": with_units(h["params"], (units or {}).get(iv["workload"], {}))}
            op = direction(h["params"])
            sub = h["params"].get("phase") or h["params"].get("op") or h["params"].get("mode") or ""
            keys = varying.get(iv["workload"], set()) - {"op", "mode", "phase"}
            label = " ".join(filter(None, (iv["workload"], params_label(h["params"], keys))))
            moving = transfer_seconds(series, iv["start"], iv["end"])
            grouped[(label, sub, op, h["unit"])].append((h["value"], cpu_during(cpu, iv["start"], iv["end"], moving),
                                                         ledger_shares(iv.get("ledger"), op),
                                                         cpu_during(platform, iv["start"], iv["end"], moving)))
            if counted is not None:
                small[(label, sub, op, h["unit"])].append(counted)
            if burst is not None:
                short[(label, sub, op, h["unit"])] = min(burst, short.get((label, sub, op, h["unit"]), burst))
    lines = []
    for (label, sub, op, unit), values in grouped.items():
        value = sum(v for v, _, _, _ in values) / len(values)
        iops = small.get((label, sub, op, unit))
        cpus = [c for _, c, _, _ in values if c is not None]
        taken = [p for _, _, _, p in values if p is not None]
        measured = {k: statistics.fmean(m[k] for _, _, m, _ in values) for k in ("link", "disk")
                    if all(k in m for _, _, m, _ in values)}
        result = bottleneck(value, unit, op, sum(cpus) / len(cpus) if cpus else None, limits, measured)
        shown = quantity(value, unit)
        if iops and len(iops) == len(values):  # a small-block step is read by its IOPS, its MB/s beside
            shown = f"{quantity(statistics.fmean(iops), 'op/s')} ({shown})"
        lines.append({"step": f"{label}{f' {sub}' if sub else ''}", "result": shown,
                      "shares": share_cells(result),
                      "platform": f"{statistics.fmean(taken):.0f} %" if taken else None,
                      "bound": result["bound"], "verdict": result["verdict"], "limit": LIMIT_TEXT[result["bound"]]
                      + (f"; above the {' and '.join(result['exceeded'])} baseline: a cache" if result["exceeded"] else "")})
        if (label, sub, op, unit) in short:  # a burst has no rate, and no share of a limit (as the results table)
            lines[-1].update(result="–", shares={}, bound=None,
                             limit=f"too short to time ({short[(label, sub, op, unit)]:.2g} s)")
    return lines


def _shade(ax, intervals, t0, faults=()):
    for iv in intervals:
        if iv["workload"] != "baseline":
            ax.axvspan(iv["start"] - t0, iv["end"] - t0, color="#999", alpha=0.08)
    for f in faults:
        if f.get("inject"):
            ax.axvline(f["inject"] - t0, color="#c00", linestyle="--", linewidth=1)
        if f.get("undo"):
            ax.axvline(f["undo"] - t0, color="#080", linestyle="--", linewidth=1)


def _timeline(series, intervals, prefix_fn, ylabel, caption, t0, faults=(), log=False) -> dict | None:
    chosen = {name: pts for name, pts in series.items() if prefix_fn(name)}
    if not chosen:
        return None
    fig, ax = plt.subplots(figsize=(9, 3.2))
    for name, pts in sorted(chosen.items()):
        ax.plot([t - t0 for t, _ in pts], [v for _, v in pts], label=name, linewidth=1.2)
    _shade(ax, intervals, t0, faults)
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=4)
    return {"svg": _svg(fig), "caption": caption}


def _filegrid_heatmaps(rows) -> list[dict]:
    figs = []
    cells = [r for r in rows if r["workload"] == "filegrid" and r["metric"] == "bandwidth"]
    for op in ("write", "read"):
        grid: dict[tuple[int, int], list[float]] = defaultdict(list)
        for r in cells:
            if r["params"]["op"] == op:
                grid[(r["params"]["file_size"], r["params"]["threads"])].append(r["value"])
        if not grid:
            continue
        sizes = sorted({k[0] for k in grid})
        threads = sorted({k[1] for k in grid})
        data = [[sum(grid[(s, t)]) / len(grid[(s, t)]) if grid.get((s, t)) else float("nan") for t in threads] for s in sizes]
        fig, ax = plt.subplots(figsize=(5, 3.2))
        im = ax.imshow(data, cmap="viridis", aspect="auto", origin="lower")
        ax.set_xticks(range(len(threads)), [str(t) for t in threads])
        ax.set_yticks(range(len(sizes)), [human_bytes(s) for s in sizes])
        ax.set_xlabel("threads")
        ax.set_ylabel("file size per thread")
        for i, row in enumerate(data):
            for j, v in enumerate(row):
                ax.text(j, i, f"{v:.0f}", ha="center", va="center", color="w", fontsize=8)
        fig.colorbar(im, ax=ax, label="MB/s")
        figs.append({"svg": _svg(fig), "caption": f"filegrid (iozone-style file size x threads), sequential {op} (MB/s, mean over repetitions)"})
    return figs


def _latency_figures(rows, varying) -> list[dict]:
    figs = []
    pct = [r for r in rows if r["workload"] == "fio" and r["metric"].startswith("latency_p")]
    if pct:
        curves: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
        for r in pct:
            curves[params_label(r["params"], varying["fio"])][float(r["metric"][9:])].append(r["value"])
        fig, ax = plt.subplots(figsize=(9, 3.4))
        for label, points in sorted(curves.items()):
            xs = sorted(points)
            ax.plot([str(x) for x in xs], [sum(points[x]) / len(points[x]) for x in xs], marker="o", label=label)
        ax.set_yscale("log")
        ax.set_xlabel("percentile")
        ax.set_ylabel("latency, submission + completion (ms)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        figs.append({"svg": _svg(fig), "caption": "fio latency percentiles (total: submission + completion)"})
    samples = [r for r in rows if r["metric"] == "latency_last"]
    if samples:
        groups: dict[str, list[float]] = defaultdict(list)
        for r in samples:
            groups[params_label(r["params"], varying[r["workload"]])].append(r["value"])
        fig, ax = plt.subplots(figsize=(9, 3.2))
        labels = sorted(groups)
        ax.boxplot([groups[k] for k in labels], vert=False)
        ax.set_yticks(range(1, len(labels) + 1), labels, fontsize=7)
        ax.set_xlabel("latency of the last op each second (ms)")
        figs.append({"svg": _svg(fig), "caption": "rados bench: the latency of the last operation to complete in each second (one operation per second, not a per-second mean)"})
    return figs


NUMERIC_AXES = ("threads", "numjobs", "iodepth", "procs", "servers", "clients", "concurrency")


def _runtime_facts(kind: str) -> Any:
    """What the runtime a run's status names declares (None: a kind this dfslab does not know)."""
    return runtime_class(kind) if kind in RUNTIMES else None


ONE_HOST_NOTE = (" · every server runs on this one machine (its CPUs, disk and memory): more servers add no "
                 "hardware, so this sweep cannot show how the filesystem scales with servers")


def _scaling_figures(rows, varying, one_host: bool = False) -> list[dict]:
    figs = []
    heads = [r for r in rows if r["t"] is None and r["metric"] in ("bandwidth", "iops", "ops", "qps") and r["workload"] != "baseline"]
    for workload in sorted({r["workload"] for r in heads}):
        for axis in NUMERIC_AXES:
            if axis not in varying.get(workload, ()):
                continue
            for metric in sorted({r["metric"] for r in heads if r["workload"] == workload}):
                figs.append(_scaling_figure([r for r in heads if r["workload"] == workload and r["metric"] == metric],
                                            axis, varying[workload] - {axis}, f"{workload}: {metric} scaling with {axis}"
                                            + (ONE_HOST_NOTE if one_host and axis == "servers" else "")))
    return figs


def _scaling_figure(rows, axis: str, other_keys: set, caption: str) -> dict:
    lines: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if axis in r["params"]:
            lines[params_label(r["params"], other_keys)][r["params"][axis]].append(r["value"])
    fig, ax = plt.subplots(figsize=(8, 3.2))
    for label, pts in sorted(lines.items()):
        xs = sorted(pts)
        ax.plot(xs, [sum(pts[x]) / len(pts[x]) for x in xs], marker="o", label=label)
    ax.set_xlabel(axis)
    ax.set_ylabel(rows[0]["unit"] if rows else "")
    ax.grid(alpha=0.3)
    if any(lines):  # one unlabelled line needs no legend
        ax.legend(fontsize=7)
    return {"svg": _svg(fig), "caption": caption}


def _pushdown_figures(rows) -> list[dict]:
    """Time, bytes over the client link and the client's CPU vs selectivity, storage vs client
    (SkyhookDM's fig. 4, and the CPU its argument rests on)."""
    figs = []
    panels = [("time", "s"), ("bytes_moved", "MB"), ("client_cpu", "s")]
    cells = [r for r in rows if r["workload"] == "pushdown" and r["metric"] in dict(panels)]
    panels = [(m, u) for m, u in panels if any(r["metric"] == m for r in cells)]  # runs before client_cpu: two
    for query in sorted({r["params"]["query"] for r in cells}):
        fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.2))
        for ax, (metric, unit) in zip(axes, panels):
            for where in ("storage", "client"):
                pts: dict[float, list[float]] = defaultdict(list)
                for r in cells:
                    if r["params"]["query"] == query and r["params"]["where"] == where and r["metric"] == metric:
                        pts[r["params"]["selectivity"]].append(r["value"])
                if pts:
                    xs = sorted(pts)
                    ax.plot(xs, [sum(pts[x]) / len(pts[x]) for x in xs], marker="o", label=where)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("selectivity (%)")
            ax.set_ylabel(f"{metric.replace('_', ' ')} ({unit})")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        figs.append({"svg": _svg(fig), "caption": f"pushdown {query}: query time, bytes over the client's link and the "
                                                  "client's CPU seconds vs selectivity, inside the OSDs (storage) vs on "
                                                  "the client"})
    return figs


def _settings_figures(swept: dict[str, Any]) -> list[dict]:
    """One figure per swept cluster parameter: each headline metric's mean at each of its values
    (pooled over the other parameters), relative to that metric's mean over all settings."""
    settings, ranking = swept.get("settings") or {}, swept.get("ranking") or []
    params = sorted({k for s in settings.values() for k in (s or {})})
    figs = []
    for param in params:
        values = list(dict.fromkeys(str(s[param]) for s in settings.values() if s and param in s))
        fig, ax = plt.subplots(figsize=(7, 3.2))
        for row in ranking[:8]:
            by_value: dict[str, list[float]] = defaultdict(list)
            for entry in row["ranking"]:
                chosen = settings.get(entry["settings"]) or {}
                if param in chosen:
                    by_value[str(chosen[param])].append(entry["mean"])
            overall = sum(e["mean"] for e in row["ranking"]) / len(row["ranking"])
            if overall and all(v in by_value for v in values):
                ax.plot(values, [sum(by_value[v]) / len(by_value[v]) / overall for v in values], marker="o",
                        label=f"{row['workload']} {row['params']} {row['metric']}"[:60])
        ax.axhline(1.0, color="#999", lw=0.8)
        ax.set_xlabel(param)
        ax.set_ylabel("relative to the mean")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        figs.append({"svg": _svg(fig), "caption": f"{param}: each headline metric's mean at each value (over the other "
                                                  "settings), relative to its mean over all settings; the table above "
                                                  "has the intervals"})
    return figs


def _sql_figure(rows) -> list[dict]:
    """mysqlslap seconds per run vs concurrency, min/avg/max, one line per target (DockerCEPH fig. 12)."""
    sql = [r for r in rows if r["workload"] == "sql" and r["metric"] in ("time_avg", "time_min", "time_max")]
    if not sql:
        return []
    data: dict[str, dict[int, dict[str, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in sql:
        data[r["params"]["target"]][r["params"]["concurrency"]][r["metric"]].append(r["value"])
    fig, ax = plt.subplots(figsize=(8, 3.4))
    for target, by_c in sorted(data.items()):
        xs = sorted(by_c)
        avg = [sum(by_c[x]["time_avg"]) / len(by_c[x]["time_avg"]) for x in xs]
        low = [a - min(by_c[x]["time_min"] or [a]) for a, x in zip(avg, xs)]
        high = [max(by_c[x]["time_max"] or [a]) - a for a, x in zip(avg, xs)]
        ax.errorbar(xs, avg, yerr=[low, high], marker="o", capsize=3, label=f"datadir on {target}")
    ax.set_xlabel("concurrent sessions")
    ax.set_ylabel("seconds per run")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return [{"svg": _svg(fig), "caption": "mysqlslap: time per run vs concurrency (bars: min and max)"}]


def _per_second(rows, varying) -> list[dict]:
    series: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        if r["t"] is not None and r["metric"] == "bandwidth_sample":
            series[(r["workload"], params_label(r["params"], varying[r["workload"]]) + f" rep {r['repetition']}")].append((r["t"], r["value"]))
    figs = []
    for workload in sorted({k[0] for k in series}):
        fig, ax = plt.subplots(figsize=(9, 3.2))
        for (w, label), pts in sorted(series.items()):
            if w == workload:
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=label)
        ax.set_xlabel("second of the run")
        ax.set_ylabel("MB/s")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
        figs.append({"svg": _svg(fig), "caption": f"{workload}: client throughput per second, as the tool reported it"})
    return figs


def fault_costs(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    """{fault label ("kill rgw.node1"): what it cost each headline of its step}: the faulted
    repetition's bandwidth over the same step's clean repetitions (`with / without`), with a 95 %
    interval over repetitions where there are two or more clean ones (dfslab.ratios, each
    repetition a value), for every workload kind, S3 included."""
    from .ratios import ratio_test
    faulted: dict[tuple, list[float]] = defaultdict(list)
    clean: dict[tuple, list[float]] = defaultdict(list)
    labels: dict[tuple, str] = {}
    for r in rows:
        if r["t"] is not None or r["metric"] != "bandwidth" or r["workload"] == "baseline":
            continue
        params = dict(r["params"])
        fault = params.pop("fault", None)
        key = (r["workload"], json.dumps(params, sort_keys=True, default=str))
        (faulted if fault else clean)[key].append(r["value"])
        if fault:
            labels[key] = fault
    out: dict[str, list[str]] = defaultdict(list)
    for key, values in faulted.items():
        if not clean.get(key):
            out[labels[key]].append(f"{direction(json.loads(key[1]))}: no clean repetition to compare with")
            continue
        test = ratio_test([[v] for v in clean[key]], [[v] for v in values])
        if test.ratio is None:
            continue
        interval = f" ({test.low:.2f}-{test.high:.2f})" if test.low is not None else " (one repetition each: no interval)"
        out[labels[key]].append(f"{direction(json.loads(key[1]))} {test.ratio:.2f}{interval}")
    return out


def _number(value: float | None, spec: str = "{:.1f}") -> str:
    """A cell of the faults' tables: "–" where nothing was measured."""
    return "–" if value is None else spec.format(value)


def _fault_row(f: dict[str, Any], t0: float, costs: dict[str, list[str]] | None = None) -> dict[str, Any]:
    label = f"{f['kind']} {f['target']}"
    cost = [c for fault, said in (costs or {}).items() if label in fault.split(" + ") for c in said]
    return {"kind": f["kind"], "target": f["target"], "error": f.get("error"), "cost": "; ".join(cost) or "–",
            "t_inject": _number(f["inject"] - t0 if f.get("inject") else None),
            "t_undo": _number(f["undo"] - t0 if f.get("undo") else None),
            "detect": _number(f.get("detect_s")), "recover": _number(f.get("recover_s")), "undo_took": _number(f.get("undo_s")),
            "seen": f.get("seen") or "",
            "before": _number(f.get("throughput_before")), "during": _number(f.get("throughput_during")),
            "fraction": _number(f.get("throughput_fraction"), "{:.0%}"),
            "lat_before": _number(f.get("latency_before_ms")), "lat_during": _number(f.get("latency_during_ms")),
            "in_effect": _number(f.get("inject_s")), "acked": "–" if f.get("acked_during") is None else str(f["acked_during"]),
            **_blocked(f.get("blocked_s")), "steps": [_step_row(step, t0) for step in f.get("steps") or []]}


def _step_row(step: dict[str, Any], t0: float) -> dict[str, Any]:
    """One step of a fault that acts step by step (an upgrade's restart of a daemon or a host's OSDs)."""
    return {"what": step["what"], "node": step.get("node", ""), "began": _number(step["start"] - t0),
            "took": _number(step["end"] - step["start"]), "throughput": _number(step.get("throughput")),
            **_blocked(step.get("blocked_s"))}


BLOCKED_THRESHOLD_S = 1.0  # a write that waits this long has hit the fault, not the disk


def _blocked(stall: float | None) -> dict[str, Any]:
    if stall is None:
        return {"blocked": "–", "blocked_flag": False}
    if stall >= BLOCKED_THRESHOLD_S:
        return {"blocked": f"yes, {stall:.1f} s", "blocked_flag": True}
    return {"blocked": f"no (longest wait {stall:.2f} s)", "blocked_flag": False}


def _write_latency_series(faults) -> dict[str, list[tuple[float, float]]]:
    """The checksummed writer's per-second latency, as timeline series (one writer may
    serve several faults of one workload: its seconds are taken once)."""
    seen: dict[float, tuple[float, float]] = {}
    for f in faults:
        for t, mean, peak, _ in f.get("write_latency") or []:
            seen[t] = (mean, peak)
    points = sorted(seen.items())
    if not points:
        return {}
    return {"write latency mean (ms)": [(t, v[0]) for t, v in points],
            "write latency max (ms)": [(t, v[1]) for t, v in points]}


def _comparison(run: RunDir) -> dict[str, Any] | None:
    """comparison.json (a run of `runtimes:` against the first runtime's), with its verdict."""
    comp = run.read_json("comparison.json")
    if not comp:
        return None
    rows = comp["rows"]
    if rows and "verdict" not in rows[0]:  # made before verdicts: compare its runs again
        rows = compare_runs([run.path.parent / n for n in comp["baseline_runs"]], [run.path.parent / n for n in comp["runs"]])
    shown = headline(rows)
    return {**comp, "significant": [r for r in rows if r["significant"]], "headline": shown,
            "verdict": verdict(rows), "margin": COMPARE_MARGIN, "forest": forest(shown, COMPARE_MARGIN)}


COMPARE_MARGIN = 0.10  # compare_runs' default, which comparison.json's rows were made with


def forest(rows: list[dict[str, Any]], margin: float) -> Any:
    """The comparison drawn: each metric's B/A and its interval against 1 and the margin's band."""
    drawn = [r for r in rows if r.get("ratio") and r.get("low") and r.get("high")]
    if not drawn:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.28 * len(drawn) + 1.0))
    ax.axvspan(1 - margin, 1 + margin, color="#e6e6e6", zorder=0)
    ax.axvline(1.0, color="#888", lw=0.8)
    for y, r in enumerate(drawn):
        one_run = r.get("over") == "one run"
        color = "#b00" if r.get("significant") else "#2a7" if str(r.get("verdict", "")).startswith("same") else "#555"
        ax.errorbar(r["ratio"], y, xerr=[[r["ratio"] - r["low"]], [r["high"] - r["ratio"]]], fmt="o", color=color,
                    mfc="white" if one_run else color, capsize=2, ms=4)
    ax.set_yticks(range(len(drawn)), [f"{r['workload']} {r['params']} {r['metric']}"[:70] for r in drawn], fontsize=7)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("B/A")
    return _svg(fig)


def build(run_path: Path) -> Path:
    run = RunDir(run_path)
    rows = run.rows()
    prov = run.read_json("provenance.json")
    status = run.read_json("status.json")
    intervals = run.read_json("intervals.json") or []
    series = read_timeseries(run.path / "timeseries.csv")
    # Bytes stored per byte written, as the backend said (a run that aborted before status: 1).
    replicas = status.get("write_amplification") or 1
    varying = varying_keys(rows)
    workloads_rows = [r for r in rows if r["workload"] != "baseline"]
    workload_lines, workload_columns = summarize(workloads_rows, SUMMARY_METRICS + ["depth", "from_storage"])
    mark_untimed(workload_lines, short_phases(workloads_rows))  # "–", as the terminal shows them
    tables = [("Workloads", workload_lines, workload_columns),
              ("Baselines", *summarize([r for r in rows if r["workload"] == "baseline"], BASELINE_METRICS))]
    faults = run.read_json("faults.json") or []
    costs = fault_costs(workloads_rows) if faults else {}
    integrity = run.read_json("integrity.json") or None
    start, end = prov.get("start"), prov.get("end")
    t0 = start or (min(t for pts in series.values() for t, _ in pts) if series else 0)
    figures = [f for f in (
        _timeline(series, intervals, lambda n: n.startswith("net.") and n.endswith(".tx"), "MB/s",
                  "network throughput sent per server over time (shaded: workloads)", t0),
        _timeline(series, intervals, lambda n: re.fullmatch(r"disk\.[^.]+\.write", n) is not None, "MB/s",
                  "disk writes per server (its daemons' block I/O) over time", t0),
        _timeline(series, intervals, lambda n: n == "cpu.total", "%", "machine CPU over time", t0),
        _timeline(series, intervals, lambda n: n.startswith("nodecpu."), "%",
                  "CPU of each Kubernetes node, as its kubelet measures it (share of the node's CPUs)", t0),
        *(_timeline(series, intervals, lambda n, c=chart: re.fullmatch(c["match"], n) is not None, chart["unit"],
                    chart["title"] + ("; red: fault injected, green: undone" if faults else ""), t0, faults)
          for chart in prov.get("charts", []) if faults or not chart["faults_only"]),
        _timeline(_write_latency_series(faults), intervals, lambda n: True, "ms",
                  "client write latency per second (dfslab's checksummed writer, 4 KiB-1 MiB objects, log scale)"
                  "; red: fault injected, green: undone", t0, faults, log=True)
        if faults else None,
    ) if f]
    facts = _runtime_facts(status.get("runtime", "?"))
    one_host = bool(facts and facts.one_host and facts.starts_nodes)
    figures += _filegrid_heatmaps(rows) + _latency_figures(rows, varying) + _scaling_figures(rows, varying, one_host) + _sql_figure(rows) + _pushdown_figures(rows) + _per_second(rows, varying)
    swept = run.read_json("settings.json") or {}
    html = TEMPLATE.render(
        title=f"run {run.path.name}", cluster=status.get("name", prov.get("cluster", "?")),
        filesystem=status.get("filesystem", "?"), runtime=status.get("runtime", "?"),
        client_choice=bool(facts and len(facts.client_kinds) > 1),
        health=status.get("health", "unknown"), prov=prov, memory=human_bytes(prov.get("memory_bytes", 0)),
        started=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start)) if start else "?",
        duration=f"{end - start:.0f} s" if start and end else "unfinished",
        failures=prov.get("failures", []), skipped=prov.get("skipped", []), not_as_asked=prov.get("not_as_asked", []),
        attempts=sorted(Counter(iv.get("attempt", 1) for iv in intervals).items()),
        server_cache=next((iv["server_cache_dropped"] for iv in intervals if iv.get("server_cache_dropped")), None),
        ranking=swept.get("ranking", []), settings_figures=_settings_figures(swept), tune=run.read_json("tune.json") or None,
        faults=[_fault_row(f, t0, costs) for f in faults], integrity=integrity, blocked_threshold=f"{BLOCKED_THRESHOLD_S:g}",
        measured_steps=sum(1 for iv in intervals if iv["workload"] != "baseline" and not iv.get("error")),
        bottlenecks=bottleneck_rows(rows, intervals, series, replicas, run.read_json("units.json")), shallow=shallow_depths(workloads_rows),
        uncached=not_from_storage_lines(workloads_rows), floor=f"{FROM_STORAGE_FLOOR:g}",
        metadata_lines=metadata_lines(prov.get("metadata"), intervals, series),
        write_rows=any(direction(r["params"]) == "write" for r in rows if r["metric"] == "bandwidth"),
        short=short_phase_lines(workloads_rows),
        step_warnings=[f"{iv['label']} rep {iv.get('repetition', 0) + 1}: {w}" for iv in intervals for w in iv.get("warnings", [])],
        tables=tables, figures=figures, daemons=status.get("daemons", []), comparison=_comparison(run),
        status_summary=status.get("summary", []), status_tables=status.get("tables", []),
    )
    out = run.path / "report.html"
    out.write_text(html)
    return out
