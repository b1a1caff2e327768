"""plan.json and a self-contained HTML page: balance before and after the upmap balancer,
per-OSD fill histograms, failures and growth; `--compare` puts two plans side by side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..report import _svg  # noqa: E402
from ..units import human_bytes  # noqa: E402

TEMPLATE = jinja2.Template("""<!doctype html><html><head><meta charset="utf-8"><title>plan {{ names|join(' vs ') }}</title>
<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
.warn{color:#a40}</style></head><body>
<h1>Plan: {{ names|join(' vs ') }}</h1>
<p>Computed with Ceph's own tools: crushtool (the CRUSH map), a scratch ceph-mon (OSDs, pools and erasure-code
profiles made by its own commands), osdmaptool (every PG mapped, the upmap balancer, OSDs taken out). A pool
too large for osdmaptool's balancer in a plan's time (more than 2&times;10<sup>7</sup> PGs &times; OSDs) is balanced by
dfslab's own with the same rule ("balanced by" says which); on plan-1000 both end at the same spread (bench/plan.py).
Recovery times assume every receiving disk and every NIC runs at the layout's figures with nothing else in the way
(no recovery throttles): a lower bound.</p>
<table><tr><th></th>{% for p in plans %}<th>{{ p.layout.name }}</th>{% endfor %}</tr>
{% for label, fn in rows %}<tr><td>{{ label }}</td>{% for p in plans %}<td>{{ fn(p) }}</td>{% endfor %}</tr>{% endfor %}
</table>
{% for p in plans %}
<h2>{{ p.layout.name }}</h2>
{% if p.undersized_pgs %}<p class="warn">PGs that cannot get all their members: {{ p.undersized_pgs }}</p>{% endif %}
<table><tr><th>pool</th><th>pg_num</th><th>OSDs per PG</th></tr>
{% for name, pool in p.pools.items() %}<tr><td>{{ name }}</td><td>{{ pool.pg_num }}</td><td>{{ pool.width }}</td></tr>{% endfor %}</table>
{{ figures[loop.index0] }}
{% if p.failures %}<table><tr><th>failure</th><th>OSDs out</th><th>PGs degraded</th><th>PGs moving</th><th>bytes to re-replicate</th>
<th>recovery (lower bound)</th><th>limit</th><th>PGs left short</th></tr>
{% for f in p.failures %}<tr><td>{{ f.failure }}</td><td>{{ f.osds|length }}</td><td>{{ f.pgs_degraded }}</td><td>{{ f.pgs_moving }}</td>
<td>{{ hb(f.bytes_moved) }}</td><td>{{ dur(f.recovery_seconds) }}</td><td>{{ f.limit }}</td><td>{{ f.undersized_pgs or '-' }}</td></tr>{% endfor %}
</table>{% endif %}
{% if p.add_hosts %}<p>Adding {{ p.add_hosts.hosts }} host(s): {{ p.add_hosts.pgs_moving }} PGs move, {{ hb(p.add_hosts.bytes_moved) }}
of data, at least {{ dur(p.add_hosts.recovery_seconds) }} ({{ p.add_hosts.limit }}).</p>{% endif %}
{% endfor %}
</body></html>""")


def _dur(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


ROWS = [
    ("OSDs / hosts", lambda p: f"{p['osds']} / {p['hosts']}"),
    ("raw capacity", lambda p: human_bytes(p["before_balancer"]["raw_bytes"])),
    ("PGs per OSD min / max / stddev", lambda p: "{min:.0f} / {max:.0f} / {stddev:.1f}".format(**p["before_balancer"]["pgs_per_osd"])),
    ("  after the upmap balancer", lambda p: "{min:.0f} / {max:.0f} / {stddev:.1f}".format(**p["after_balancer"]["pgs_per_osd"])),
    ("OSD fill min / max", lambda p: f"{_pct(p['before_balancer']['fill']['min'])} / {_pct(p['before_balancer']['fill']['max'])}"),
    ("  after the upmap balancer", lambda p: f"{_pct(p['after_balancer']['fill']['min'])} / {_pct(p['after_balancer']['fill']['max'])}"),
    ("fills first (balanced)", lambda p: "osd.{osd} on {host}".format(**p["after_balancer"]["fills_first"])),
    ("cluster fill when it hits the full ratio", lambda p: _pct(p["after_balancer"]["fills_first"]["cluster_fill_when_full"])),
    ("upmap entries", lambda p: p["after_balancer"]["upmap_entries"]),
    ("balanced by", lambda p: _balanced_by(p["after_balancer"].get("balancer", {}))),
    ("time to plan", lambda p: f"{p['seconds']:.1f} s"),
]


def _histogram(plan: dict[str, Any]) -> Any:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3))
    for ax, key, title in ((axes[0], "per_osd", "before the balancer"), (axes[1], "per_osd_balanced", "after the upmap balancer")):
        fills = [100 * u["fill"] for u in plan[key].values()]
        ax.hist(fills, bins=min(40, max(5, len(fills) // 5)))
        ax.set_xlabel("OSD fill (%)")
        ax.set_ylabel("OSDs")
        ax.set_title(title)
    return _svg(fig)


def write(plans: list[dict[str, Any]], out: Path) -> Path:
    html = TEMPLATE.render(names=[p["layout"]["name"] for p in plans], plans=plans, rows=ROWS, hb=human_bytes,
                           dur=_dur, figures=[_histogram(p) for p in plans])
    path = out / "report.html"
    path.write_text(html)
    return path


def save(plan: dict[str, Any], out: Path) -> Path:
    path = out / "plan.json"
    path.write_text(json.dumps(plan, indent=1))
    return path

def _balanced_by(balancers: dict[str, str]) -> str:
    """Each balancer with its pools ("ceph (osdmaptool): rbd, archive; dfslab: cephfs-data")."""
    by: dict[str, list[str]] = {}
    for pool, balancer in balancers.items():
        by.setdefault(balancer, []).append(pool)
    return "; ".join(f"{b}: {', '.join(pools)}" for b, pools in by.items()) or "ceph (osdmaptool)"


def summary_lines(plan: dict[str, Any]) -> list[str]:
    """The plan in a few lines for the terminal (rich markup): PGs per OSD before and after the
    balancer, the OSD that fills first, and each failure's degraded PGs and re-replication."""
    b, a = plan["before_balancer"], plan["after_balancer"]
    lines = [f"[bold]{plan['layout']['name']}[/]: {plan['osds']} OSDs, PGs per OSD {b['pgs_per_osd']['min']:.0f}-"
             f"{b['pgs_per_osd']['max']:.0f} (balanced {a['pgs_per_osd']['min']:.0f}-{a['pgs_per_osd']['max']:.0f}); "
             f"osd.{a['fills_first']['osd']} fills first; {plan['seconds']:.1f} s"]
    lines += [f"  {f['failure']}: {f['pgs_degraded']} PGs degraded, {human_bytes(f['bytes_moved'])} to "
              f"re-replicate, >= {f['recovery_seconds'] / 60:.1f} min ({f['limit']})" for f in plan["failures"]]
    return lines
