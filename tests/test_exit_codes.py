"""README's exit codes, checked on every subcommand as a user meets them (the installed CLI in a
subprocess, from the repository root): 2 for bad input refused before anything changed, 1 for an
unknown cluster, each with dfslab's own sentence naming the thing and the fix, never a traceback.
No cluster is needed: nothing here may start one."""

from __future__ import annotations

import pytest

from conftest import dfslab

# (argv, exit code, what the message must say): one line per subcommand at least; a new
# subcommand without a line fails test_every_subcommand_has_a_case.
CASES = [
    (["up", "nosuch.yaml"], 2, "nosuch.yaml: no such file"),
    (["up", "examples/ceph-small.yaml", "--name", "../x"], 2, "cluster names are lower-case letters"),
    (["status", "nosuch"], 1, "no cluster named 'nosuch'"),
    (["scale", "nosuch", "--add-bricks", "1"], 1, "no cluster named 'nosuch'"),
    (["down", "nosuch"], 1, "no cluster named 'nosuch'"),
    (["list", "--bogus"], 2, "No such option: --bogus"),
    (["exec", "nosuch", "--", "true"], 1, "no cluster named 'nosuch'"),
    (["run", "nosuch.yaml"], 2, "nosuch.yaml: no such file"),
    (["run", "examples/quickstart.yaml", "--cluster", "nosuch"], 1, "no cluster named 'nosuch'"),
    (["quickstart", "nosuch.yaml"], 2, "nosuch.yaml: no such file"),
    (["tune", "examples/tuning.yaml"], 2, "give one objective: --maximize"),
    (["runs", "--bogus"], 2, "No such option: --bogus"),
    (["compare", "nosuch-a", "nosuch-b"], 2, "nosuch-a is not a run directory"),
    (["compare", "nosuch-a", "nosuch-b", "--margin", "ten"], 2, "--margin / --fail-if-worse: a percentage like"),
    (["report", "nosuch-run"], 2, "nosuch-run is not a run directory"),
    (["fault", "nosuch", "kill", "osd.0"], 1, "no cluster named 'nosuch'"),
    (["fault", "nosuch", "bogus"], 2, "unknown fault 'bogus'; kinds: "),
    (["fault", "nosuch", "kill"], 2, "fault kill needs a target, e.g. dfslab fault nosuch kill osd.1"),
    (["verify", "nosuch", "manifest.json"], 1, "no cluster named 'nosuch'"),
    (["render", "nosuch.yaml", "-o", "out"], 2, "nosuch.yaml: no such file"),
    (["query", "nosuch", "SELECT count(*) FROM t"], 1, "no cluster named 'nosuch'"),
    (["plan", "nosuch.yaml"], 2, "nosuch.yaml: no such file"),
    (["version", "--bogus"], 2, "No such option: --bogus"),
    (["schema", "cluster"], 2, "no schema 'cluster'; give one of: spec, experiment"),
    (["capabilities", "nosuch.yaml"], 2, "nosuch.yaml: no such file"),
    (["data", "load", "nosuch"], 1, "no cluster named 'nosuch'"),
    (["images", "build", "--bogus"], 2, "No such option: --bogus"),
    (["images", "list", "--bogus"], 2, "No such option: --bogus"),
    (["releases", "build", "ceph", "squid"], 2, "ceph has no release 'squid'; its releases: pacific, reef"),
    (["releases", "build", "ceph", "pacific"], 2, "this machine's own software"),
    (["releases", "build"], 2, "or give --all to build every one"),
    (["releases", "build", "ceph", "reef", "--all"], 2, "not both"),
    (["releases", "remove", "cephx", "reef"], 2, "unknown filesystem 'cephx'; one of: ceph"),
]


def _commands() -> set[str]:
    from dfslab.cli import app

    def names(group):
        return {info.name or info.callback.__name__.replace("_", "-") for info in group.registered_commands}
    return names(app) | {f"{g.name} {sub}" for g in app.registered_groups for sub in names(g.typer_instance)}


def test_every_subcommand_has_a_case():
    covered = {" ".join(argv[:2]) if argv[0] in ("data", "images", "releases") else argv[0] for argv, _, _ in CASES}
    assert _commands() - covered == set()


@pytest.mark.parametrize("argv,code,says", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_exit_code_and_message(argv, code, says):
    res = dfslab(*argv, check=False, timeout=60)
    out = " ".join((res.stdout + res.stderr).split())  # the usage box wraps; its words do not change
    assert res.returncode == code, (res.returncode, out)
    assert says in out, out
    assert "Traceback" not in out and "unexpected" not in out, out
