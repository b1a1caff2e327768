"""No test finds its output, or decides what to remove, by listing a directory and taking what is
new: `make test` runs two phases at once, both writing into ./runs (the docs' commands run
verbatim), and a listing taken across minutes sees the other phase's directories too. CI once
failed so (tests/test_kubernetes_gluster.py: `(run,) = set(runs.glob("*")) - runs_before`, two
found) and a fixture of the same shape removed every new directory, another test's included.

A test takes its run directory from what dfslab printed for its own command
(`conftest.printed_run_dir`, `test_readme.sh(..., made=...)`), or runs with a `DFSLAB_RUNS` of its
own. This scan fails on the pattern: a set difference whose operand comes from a directory listing
(glob, rglob, iterdir, os.listdir, os.scandir), directly or through a name assigned from one."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
LISTINGS = {"glob", "rglob", "iterdir", "listdir", "scandir"}
# Files whose listings are meant to be machine-wide, with why.
EXEMPT = {
    "leftovers.py": "the machine's snapshot, taken before all of `make test`'s phases and compared after them all",
}


def _lists_a_directory(node: ast.AST, listed_names: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in LISTINGS:
                return True
        if isinstance(sub, ast.Name) and sub.id in listed_names:
            return True
    return False


def _listed_names(scope: ast.AST) -> set[str]:
    """Names assigned (anywhere in the scope) from an expression that lists a directory."""
    names: set[str] = set()
    for sub in ast.walk(scope):
        if isinstance(sub, ast.Assign) and _lists_a_directory(sub.value, set()):
            names |= {t.id for t in sub.targets if isinstance(t, ast.Name)}
    return names


def listing_differences(source: str) -> list[int]:
    """The lines of `source` where a set difference takes a directory listing as an operand."""
    tree = ast.parse(source)
    found = []
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
        names = _listed_names(scope)
        for sub in ast.walk(scope):
            if (isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub)
                    and (_lists_a_directory(sub.left, names) or _lists_a_directory(sub.right, names))):
                found.append(sub.lineno)
    return sorted(set(found))


def test_no_test_takes_what_is_new_in_a_listed_directory():
    found = {f"{path.name}:{line}" for path in sorted(TESTS.glob("*.py")) if path.name not in EXEMPT
             for line in listing_differences(path.read_text())}
    assert sorted(found) == [], ("take the run directory from what dfslab printed (conftest.printed_run_dir), or give "
                                 "the command a DFSLAB_RUNS of its own")


# The shapes this scan exists for, as they stood before it (test_readme's fixture, test_resume's
# wait, conftest.run_against), and what replaced them.
OLD_FIXTURE = '''
def new_runs():
    before = set(Path(REPO, "runs").glob("*"))
    yield lambda: sorted(set(Path(REPO, "runs").glob("*")) - before)
    for path in set(Path(REPO, "runs").glob("*")) - before:
        shutil.rmtree(path)
'''
OLD_WAIT = '''
def interrupted_run(runs):
    before = set(runs.glob(f"*-{NAME}")) if runs.exists() else set()
    while True:
        new = set(runs.glob(f"*-{NAME}")) - before if runs.exists() else set()
'''
OLD_RUN_AGAINST = '''
def run_against(experiment, cluster_name):
    runs = Path(os.environ["DFSLAB_RUNS"])
    before = set(runs.iterdir()) if runs.is_dir() else set()
    out = dfslab("run", str(experiment), "--cluster", cluster_name).stdout
    after = {p for p in runs.iterdir() if p.is_dir()}
    return next(iter(after - before)), out
'''
NEW_SHAPE = '''
def run_against(experiment, cluster_name):
    out = dfslab("run", str(experiment), "--cluster", cluster_name).stdout
    return printed_run_dir(out), out

def steps(made):
    wanted = {"a", "b"} - set(made)
    return sorted(p.name for p in tmp_path.iterdir())
'''


def test_the_scan_finds_the_old_shapes_and_passes_the_new():
    assert listing_differences(OLD_FIXTURE) == [4, 5]
    assert listing_differences(OLD_WAIT) == [5]
    assert listing_differences(OLD_RUN_AGAINST) == [7]
    assert listing_differences(NEW_SHAPE) == []
