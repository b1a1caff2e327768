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
    from ..runtime import dockerd, images
    try:
        with LiveProgress() as progress:
            deps.ensure_runtime("docker", progress)
            image = images.ensure(progress, rebuild=rebuild)
            elapsed = time.monotonic() - progress.start
    except USER_ERRORS as exc:
        fail(exc)
    finally:
        dockerd.stop_if_unused()  # the engine runs while docker clusters do, not after a build
    print(f"{image} ({elapsed:.1f}s)")


@images_app.command("list")
def images_list() -> None:
    """The images dfslab's engine holds, and which one the current package versions select."""
    from .. import deps
    from ..runtime import dockerd, images
    try:
        deps.ensure_runtime("docker", lambda step, detail: print(f"{step} {detail}", file=sys.stderr))
        dockerd.start()
        print(dockerd.docker("images", images.REPO).stdout, end="")
        print(f"current: {images.built_for(images.candidate_versions()) or 'none (dfslab images build)'}")
    except USER_ERRORS as exc:
        fail(exc)
    finally:
        dockerd.stop_if_unused()


releases_app = typer.Typer(help="The filesystems' releases dfslab deploys, and their roots (built once per machine "
                                "from Debian's archive, shared by every cluster of the release).",
                           invoke_without_command=True)
app.add_typer(releases_app, name="releases")


def _release_arg(filesystem: str, name: str):
    from ..registry import FILESYSTEMS, release_named, releases_of
    if filesystem not in FILESYSTEMS:
        fail(ValueError(f"unknown filesystem {filesystem!r}; one of: {', '.join(FILESYSTEMS)}"))
    release = release_named(filesystem, name)
    if release is None:
        known = ", ".join(r.name for r in releases_of(filesystem)) or "none of dfslab's own"
        fail(ValueError(f"{filesystem} has no release {name!r}; its releases: {known}"))
    if not release.suite:
        fail(ValueError(f"{filesystem} {name} is this machine's own software ({release.says}): it has no root to build "
                        "or remove"))
    return release


@releases_app.callback()
def releases(ctx: typer.Context) -> None:
    """Every release a spec's `<filesystem>: {release: NAME}` may name, the default first, with what
    its Debian suite gave when measured, the engine build that runs it on Kubernetes (Ceph's: the
    Rook that supports it) and whether its root is built here (and how big, how old).

    A release other than this machine's own runs from a root of its own: `dfslab up` builds it on
    first use (mmdebstrap of the suite, about a minute here), or `dfslab releases build FS NAME` ahead."""
    if ctx.invoked_subcommand is not None:
        return
    from ..registry import FILESYSTEMS, releases_of
    from ..runtime import roots
    rows = []
    for fs in FILESYSTEMS:
        for i, release in enumerate(releases_of(fs)):
            if not release.suite:
                built = "this machine's packages"
            else:
                manifest = roots.read_manifest(release)
                why = roots.problem(release, manifest)
                built = (f"built {time.strftime('%Y-%m-%d', time.localtime(manifest['built']))}, "
                         f"{manifest['bytes'] / 1e6:.0f} MB, {roots.root_home(release)}" if why is None else why)
            rows.append((fs, release.name + (" (default)" if i == 0 else ""), release.version,
                         release.suite or "-", release.engine or "-", built))
    rows.insert(0, ("filesystem", "release", "version", "suite", "on Kubernetes", "root"))
    widths = [max(len(r[c]) for r in rows) for c in range(5)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[5])


def _owner_of_release(name: str) -> str | None:
    """The filesystem that has a root-built release called `name` (None: none has)."""
    from ..registry import FILESYSTEMS, release_named
    return next((fs for fs in FILESYSTEMS if (r := release_named(fs, name)) is not None and r.suite), None)


@releases_app.command("build")
def releases_build(
    filesystem: Optional[str] = typer.Argument(None, help="a filesystem (dfslab releases lists each one's releases)"),
    name: Optional[str] = typer.Argument(None, help="one of its releases"),
    every: bool = typer.Option(False, "--all", help="every release that has a root (instead of FILESYSTEM NAME)"),
    rebuild: bool = typer.Option(False, help="build again even if a root for the same packages is there"),
) -> None:
    """Build a release's root now (what `dfslab up` would do on first use): mmdebstrap of its Debian
    suite with its packages, into the machine-wide cache ($DFSLAB_RELEASES, default
    /var/cache/dfslab/releases). Kept until `dfslab releases remove`; rebuilt when its packages
    changed, or the suite in Debian's archive did. `--all`: every release's, one after another."""
    from ..registry import rooted_releases
    from ..runtime import roots
    if every == (filesystem is not None):
        fail(ValueError("name a release (FILESYSTEM NAME, as `dfslab releases` lists them), or give --all to build every one"
                        + (", not both" if every else "")))
    if not every and name is None:
        owner = _owner_of_release(filesystem)
        fail(ValueError(f"{filesystem} is a release: `dfslab releases build {owner} {filesystem}`" if owner
                        else f"name one of {filesystem}'s releases too (dfslab releases lists them)"))
    chosen = rooted_releases() if every else [_release_arg(filesystem, name)]
    for release in chosen:
        try:
            with LiveProgress() as progress:
                root = roots.ensure(release, progress, rebuild=rebuild)
                elapsed = time.monotonic() - progress.start
        except roots.RootError as exc:
            fail(exc, 1)
        manifest = roots.read_manifest(release) or {}
        versions = ", ".join(f"{k} {v}" for k, v in sorted(manifest.get("versions", {}).items()))
        print(f"{release.says}: {root.path} ({elapsed:.1f}s; {versions})")


@releases_app.command("remove")
def releases_remove(
    filesystem: str = typer.Argument(..., help="a filesystem (dfslab releases lists each one's releases)"),
    name: str = typer.Argument(..., help="one of its releases"),
) -> None:
    """Remove a release's root from this machine (refused while a process runs from it)."""
    from ..runtime import roots
    release = _release_arg(filesystem, name)
    users = roots.users(release)
    if users:
        fail(ValueError(f"{release.says}'s root is in use by process(es) {', '.join(map(str, users[:8]))}: "
                        "`dfslab down` the clusters of that release first"), 1)
    if roots.remove(release):
        print(f"removed {roots.root_home(release)}")
    else:
        print(f"{release.says}: no root built here")


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
