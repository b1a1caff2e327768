"""The package's shape, checked on the source: a filesystem is one package, and data flows
one way. Adding a backend must not need edits elsewhere, so nothing outside it may reach
into it."""

from __future__ import annotations

import ast
from pathlib import Path

from dfslab.backends.registry import FILESYSTEMS

SRC = Path(__file__).resolve().parent.parent / "src"
PKG = SRC / "dfslab"
# The first word of an administrative command of each filesystem (its CLI, not a benchmark tool).
ADMIN_TOOLS = {"ceph": {"ceph", "rbd", "ceph-osd", "ceph-mon", "monmaptool", "ceph-authtool"},
               "gluster": {"gluster", "glusterd", "glusterfs"}}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if _is_package(module) else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(module: str, top_level_only: bool) -> set[str]:
    """dfslab modules `module` imports (at load time only, when top_level_only)."""
    tree = ast.parse(MODULES[module].read_text())
    nodes: list[ast.AST] = []
    if top_level_only:
        stack = list(tree.body)
        while stack:
            n = stack.pop()
            if _type_checking(n) or isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            nodes.append(n)
            stack.extend(ast.iter_child_nodes(n))
    else:
        nodes = list(ast.walk(tree))
    found = set()
    for n in nodes:
        if isinstance(n, ast.Import):
            found |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom):
            target = _resolve(module, n)
            for a in n.names:
                sub = f"{target}.{a.name}"
                found.add(sub if sub in MODULES else target)
    return {m for m in found if m.startswith("dfslab")}


def test_nothing_outside_a_backend_imports_its_internals():
    offenders = []
    for fs in FILESYSTEMS:
        package = f"dfslab.backends.{fs}"
        for module in MODULES:
            if module == package or module.startswith(package + "."):
                continue
            for imported in _imports(module, top_level_only=False):
                if imported.startswith(package + "."):
                    offenders.append(f"{module} imports {imported}")
    assert offenders == [], "outside a backend, use its package's public names only:\n" + "\n".join(offenders)


def test_no_module_outside_a_backend_builds_its_admin_commands():
    offenders = []
    for fs, tools in ADMIN_TOOLS.items():
        package = f"dfslab.backends.{fs}"
        for module, path in MODULES.items():
            if module == package or module.startswith(package + "."):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.List) and node.elts and isinstance(node.elts[0], ast.Constant) \
                        and node.elts[0].value in tools:
                    offenders.append(f"{module}:{node.lineno} {ast.unparse(node)[:60]}")
    assert offenders == [], "these belong in the filesystem's backend package:\n" + "\n".join(offenders)


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    cycles, state = [], {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = "open"
        for dep in sorted(graph[m]):
            if state.get(dep) == "open":
                cycles.append(" -> ".join(path[path.index(dep):] + [dep]) if dep in path else f"{m} -> {dep}")
            elif dep not in state:
                visit(dep, path + [dep])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return cycles


def test_no_import_cycles():
    # Imports inside functions count: a deferred import only hides a circle from Python's loader,
    # the two modules still cannot be understood (or moved) one without the other. A registry
    # that names its plugins as strings (RUNTIMES, WORKLOADS) imports them by name and is no edge.
    graph = {m: _imports(m, top_level_only=False) & set(MODULES) for m in MODULES}
    cycles = _cycles(graph)
    assert cycles == [], "import cycles:\n" + "\n".join(cycles)


def test_every_registered_filesystem_is_a_complete_package():
    from dfslab.backends import Backend
    from dfslab.backends.registry import backend_class_of, section_class

    for fs in FILESYSTEMS:
        backend = backend_class_of(fs)
        assert issubclass(backend, Backend) and backend.name == fs
        assert not getattr(backend, "__abstractmethods__", None), f"{fs}: {backend.__abstractmethods__}"
        assert callable(section_class(fs)().check)
        assert set(backend.offers) <= set(__import__("dfslab.backends", fromlist=["TARGETS"]).TARGETS)


def test_the_checks_can_fail():
    # The scanners above would pass on anything if they found nothing: they must see known cases.
    assert "dfslab.backends.ceph.tools" in _imports("dfslab.backends.ceph.backend", top_level_only=True)
    assert "dfslab.backends.ceph.helper" in _imports("dfslab.backends.ceph", top_level_only=False)
    assert "dfslab.backends.ceph.helper" not in _imports("dfslab.backends.ceph", top_level_only=True)
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a -> b -> c -> a"]
    assert _cycles({"a": {"b"}, "b": set()}) == []
