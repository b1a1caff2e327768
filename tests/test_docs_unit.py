"""The documentation site builds strictly (a broken link or anchor fails it), its reference pages
hold every field of the models that validate files, and the README's links land on real pages."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return out


def test_the_reference_pages_hold_every_field_of_the_models(site):
    from dfslab.experiment import ExperimentFile
    from dfslab.spec import ClusterSpec
    from dfslab.workloads import WORKLOADS, workload
    spec = (site / "spec" / "index.html").read_text()
    experiments = (site / "experiments" / "index.html").read_text()
    assert all(f"<code>{name}</code>" in spec for name in ClusterSpec.model_fields)
    assert all(f"<code>{name}</code>" in experiments for name in ExperimentFile.model_fields)
    for kind in WORKLOADS:
        assert f"type: {kind}" in experiments
        assert all(f"<code>{name}</code>" in experiments for name in workload(kind).Params.model_fields), kind


def test_the_readmes_links_land_on_pages_and_anchors_of_the_site(site):
    readme = (Path(REPO) / "README.md").read_text()
    links = re.findall(r"\]\(((?:docs/)[^)#\s]*)(#[^)\s]*)?\)", readme)
    assert links
    for path, anchor in links:
        assert (Path(REPO) / path).exists(), path
        if path.endswith(".md") and anchor:
            page = site / Path(path).relative_to("docs").with_suffix("") / "index.html"
            assert f'id="{anchor[1:]}"' in page.read_text(), (path, anchor)


def _doc_commands() -> list[tuple[str, str]]:
    """(page, command line) of every `dfslab ...` line in the docs' command blocks."""
    out = []
    for page in sorted((Path(REPO) / "docs").glob("*.md")):
        for line in page.read_text().splitlines():
            m = re.match(r"^\s{4,}(?:\$ )?(dfslab [a-z].*?)(?:\s{2,}#.*)?$", line)
            if m:
                out.append((page.name, m.group(1).strip()))
    return out


def test_every_command_in_the_docs_names_a_real_subcommand_options_and_files():
    """The docs' command lines (many with placeholders: NAME, runs/<id>/) cannot all run here (Rook,
    docker, a site's Ceph); each is checked against the CLI itself: its subcommand exists, every
    --option is one that subcommand's --help lists, every examples/ file it names exists."""
    import shlex

    from typer.testing import CliRunner

    from dfslab.cli import app
    commands = _doc_commands()
    assert len(commands) > 40
    helps: dict[str, str] = {}
    problems = []
    for page, line in commands:
        words = shlex.split(line.rstrip("\\").replace("[", " ").replace("]", " ").replace("|", " "))
        sub = words[1:3] if words[1] in ("data", "images") else words[1:2]
        key = " ".join(sub)
        if key not in helps:
            res = CliRunner().invoke(app, [*sub, "--help"], env={"COLUMNS": "200"})  # in-process: 20 helps in 1 s
            helps[key] = res.output if res.exit_code == 0 else ""
        if not helps[key]:
            problems.append(f"{page}: {line}: no subcommand {key!r}")
            continue
        options = {w.split("=")[0] for w in words if w.startswith("--") and w != "--"}
        problems += [f"{page}: {line}: {key} has no {o}" for o in options if o not in helps[key]]
        problems += [f"{page}: {line}: no file {w}" for w in words if w.startswith("examples/") and not (Path(REPO) / w).exists()]
    assert problems == []


def test_every_command_is_named_in_the_docs():
    """Each `dfslab ...` command (subcommands too) appears in README.md or docs/ by its full name:
    quickstart, version and images list were in no page."""
    import typer

    from dfslab.cli import app
    text = "\n".join(p.read_text() for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])

    def names(command, path):
        subs = getattr(command, "commands", None)
        if subs is None:
            return [" ".join(path)]
        return [n for name, sub in subs.items() for n in names(sub, [*path, name])]
    missing = [n for n in names(typer.main.get_command(app), []) if f"dfslab {n}" not in text]
    assert missing == [], missing


def test_the_command_reference_is_the_commands():
    """docs/cli.md is rendered from the commands (every option of every command, with its help):
    20 options (run --keep, tune --reps, render --context, ...) were in no page before it."""
    from dfslab.cli import app
    from dfslab.cli.reference import markdown
    assert (REPO / "docs" / "cli.md").read_text() == markdown(app), \
        "docs/cli.md differs from the commands: .venv/bin/python -m dfslab.cli.reference > docs/cli.md"
