"""Commands without a cluster: images, plan, schema, capabilities, version."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Optional

import typer

from .. import __version__, cluster
from ..terminal import LiveProgress, console
from ..spec import SpecError, load_spec
from .common import USER_ERRORS, app, fail


images_app = typer.Typer(help="Container images for `runtime: docker`, built here from Debian's mirror (no registry).",
                         no_args_is_help=True)
app.add_typer(images_app, name="images")


@images_app.command("build")
def images_build(rebuild: bool = typer.Option(False, help="build even if an image for the current package versions exists")) -> None:
    """Build the storage image: debootstrap Debian 12 with Ceph and GlusterFS from Debian's packages,
    import it into dfslab's own dockerd. Skipped while apt offers the same versions (~1.5 min when it runs)."""
    from .. import deps
    from ..runtime import engine, images
    try:
        with LiveProgress() as progress:
            deps.ensure_runtime("docker", progress)
            image = images.ensure(progress, rebuild=rebuild)
            elapsed = time.monotonic() - progress.start
    except USER_ERRORS as exc:
        fail(exc)
    finally:
        engine.stop_if_unused()  # the engine runs while docker clusters do, not after a build
    print(f"{image} ({elapsed:.1f}s)")


@images_app.command("list")
def images_list() -> None:
    """The images dfslab's engine holds, and which one the current package versions select."""
    from .. import deps
    from ..runtime import engine, images
    try:
        deps.ensure_runtime("docker", lambda step, detail: print(f"{step} {detail}", file=sys.stderr))
        engine.start()
        print(engine.docker("images", images.REPO).stdout, end="")
        print(f"current: {images.built_for(images.candidate_versions()) or 'none (dfslab images build)'}")
    except USER_ERRORS as exc:
        fail(exc)
    finally:
        engine.stop_if_unused()


@app.command()
def plan(
    layout: Path = typer.Argument(..., help="a layout file: racks, hosts (OSDs, sizes, NIC, disk speed), pools, failures"),
    compare_with: Optional[Path] = typer.Option(None, "--compare", help="a second layout, shown side by side"),
) -> None:
    """Placement, balance, failures and growth of a Ceph cluster too big for this box.

    Ceph's own tools do the work: crushtool compiles the CRUSH map, a scratch ceph-mon makes the
    OSDs and pools, osdmaptool maps every PG, runs the upmap balancer and takes OSDs out. Writes
    runs/plan-<name>-<time>/ with plan.json and report.html (see examples/plan-1000.yaml).
    """
    from ..plan.analysis import plan as make_plan
    from ..plan.layout import Layout
    from ..plan.report import save, summary_lines, write
    from ..results import runs_root
    from ..spec import _problems, read_yaml
    from pydantic import ValidationError
    layouts = []
    for path in [layout] + ([compare_with] if compare_with else []):
        try:
            layouts.append(Layout.model_validate(read_yaml(path)))
        except ValidationError as exc:
            fail(SpecError(_problems(exc), str(path)))
        except SpecError as exc:
            fail(exc)
    out = runs_root() / f"plan-{'-vs-'.join(l.name for l in layouts)}-{time.strftime('%Y%m%d-%H%M%S')}"
    plans = []
    with LiveProgress() as progress:
        for lay in layouts:
            try:
                plans.append(make_plan(lay, out / lay.name, progress))
            except ValueError as exc:  # a failure naming a host or OSD the layout does not have
                fail(SpecError([("", str(exc))], lay.name))
            save(plans[-1], out / lay.name)
    for line in (line for p in plans for line in summary_lines(p)):
        console.print(line)
    print(f"report: {write(plans, out).resolve()}")


@app.command()
def schema(
    kind: str = typer.Argument(..., metavar="spec|experiment", help="which file's schema"),
) -> None:
    """Print the JSON Schema of a cluster spec or an experiment (from the models that validate them).

    Save it and point your editor at it, and files are completed and checked while you type: with the YAML language server (VS Code's YAML extension, Neovim, Emacs), dfslab schema experiment > .dfslab-experiment.json, then a first line # yaml-language-server: $schema=.dfslab-experiment.json in the file."""
    from ..schema import SCHEMAS
    if kind not in SCHEMAS:
        fail(ValueError(f"no schema {kind!r}; give one of: {', '.join(SCHEMAS)}"))
    print(json.dumps(SCHEMAS[kind](), indent=2))


@app.command()
def capabilities(
    spec_file: Optional[Path] = typer.Argument(None, metavar="[SPEC]", help="a cluster spec: judge that cluster "
                                                                            "(default: every kind of cluster)"),
    as_json: bool = typer.Option(False, "--json", help="one object per cell: cluster, filesystem, capability, ok, reason"),
) -> None:
    """What each kind of cluster can do: every workload and target, fault kind, the checksummed
    integrity check, the byte ledger and the step watch, yes or the reason it is refused.

    Computed from the declarations that refuse a run before it starts (a backend's targets, a
    runtime's clients, each fault's check), so a run is refused exactly where this says no. The
    kinds: local, docker, kubernetes (the local one), kubernetes-yours (kubernetes.kubeconfig),
    external-ceph, external-posix, external-s3, each judged on a spec with every optional daemon
    on; give SPEC to judge yours, e.g. dfslab capabilities examples/rook-yours.yaml."""
    from .. import capabilities as caps
    try:
        specs = [(spec.name, spec) for spec in [load_spec(spec_file)]] if spec_file else None
        found = caps.matrix(specs)
    except USER_ERRORS as exc:
        fail(exc)
    if as_json:
        print(json.dumps([c.as_json() for c in found], indent=1))
        return
    for line in caps.text(found):
        console.print(line, highlight=False, soft_wrap=True)


@app.command()
def version() -> None:
    """Print dfslab's version."""
    print(__version__)
