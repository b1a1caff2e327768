"""The package's shape, checked on the source: a filesystem is one package, and data flows
one way. Adding a backend must not need edits elsewhere, so nothing outside it may reach
into it."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from dfslab.registry import FILESYSTEMS, words_of

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


# The layers, bottom first: a module may import from its own layer and the ones below, never
# from above (TYPE_CHECKING imports and imports inside functions count: both are dependencies).
# Every module is in one layer, so a new module says where it sits.
LAYERS = [
    ("base", ["registry", "safety", "units", "labels", "polling", "procs", "state", "rates", "analysis", "ratios",
              "terminal", "blockdev", "s3api", "s3_worker", "native", "fields", "__init__"]),
    ("spec", ["spec"]),
    ("runtime", ["runtime"]),
    ("contracts below the backends", ["fault", "deps"]),
    ("backends", ["backends"]),
    ("workloads, faults, sampling", ["workloads", "chaos", "monitor", "ledger", "watch", "pushdown"]),
    ("experiments", ["experiment", "schema"]),
    ("results", ["results", "compare", "sequential"]),
    ("reports", ["report", "render", "plan"]),
    ("orchestration and CLI", ["cluster", "dryrun", "capabilities", "run", "campaign", "tune", "phases", "faultrun", "cli"]),
]


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else "__init__"
    found = [i for i, (_, names) in enumerate(LAYERS) if top in names]
    assert found, f"{module}: in no layer of LAYERS (tests/test_layering.py): say where it sits"
    return found[0]


def _upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return [f"{m} ({LAYERS[_layer(m)][0]}) imports {i} ({LAYERS[_layer(i)][0]})"
            for m in sorted(graph) for i in sorted(graph[m]) if _layer(i) > _layer(m)]


def _packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph between dfslab's top-level packages and modules (dfslab.chaos, dfslab.run)."""
    def top(m: str) -> str:
        return ".".join(m.split(".")[:2])
    out: dict[str, set[str]] = {}
    for m, deps in graph.items():
        out.setdefault(top(m), set()).update(top(d) for d in deps if top(d) != top(m))
    return out


def test_no_import_runs_up_the_layers():
    graph = {m: _imports(m, top_level_only=False) & set(MODULES) for m in MODULES}
    up = _upward_imports(graph)
    assert up == [], "imports running up the layers (move the shared part down, or pass it in):\n" + "\n".join(up)


def test_no_two_packages_import_each_other():
    # backends/ceph/faults.py importing chaos while chaos/pod.py imports backends is a circle of
    # packages even with no circle of modules: neither package can be read without the other.
    graph = {m: _imports(m, top_level_only=False) & set(MODULES) for m in MODULES}
    cycles = _cycles(_packages(graph))
    assert cycles == [], "packages importing each other:\n" + "\n".join(cycles)


def test_the_layer_checks_can_fail():
    assert _upward_imports({"dfslab.chaos.pod": {"dfslab.cluster"}, "dfslab.cluster": {"dfslab.chaos"}}) == [
        "dfslab.chaos.pod (workloads, faults, sampling) imports dfslab.cluster (orchestration and CLI)"]
    assert _cycles(_packages({"dfslab.backends.ceph.faults": {"dfslab.chaos"}, "dfslab.chaos.pod": {"dfslab.backends"},
                              "dfslab.chaos": set(), "dfslab.backends": set()})) == ["dfslab.backends -> dfslab.chaos -> dfslab.backends"]


def test_every_registered_filesystem_is_a_complete_package():
    from dfslab.backends import Backend
    from dfslab.registry import backend_class_of, section_class

    for fs in FILESYSTEMS:
        backend = backend_class_of(fs)
        assert issubclass(backend, Backend) and backend.name == fs
        assert not getattr(backend, "__abstractmethods__", None), f"{fs}: {backend.__abstractmethods__}"
        assert callable(section_class(fs)().check)
        assert set(backend.facts.offers) <= set(__import__("dfslab.backends", fromlist=["TARGETS"]).TARGETS)


def test_the_checks_can_fail():
    # The scanners above would pass on anything if they found nothing: they must see known cases.
    assert "dfslab.backends.ceph.tools" in _imports("dfslab.backends.ceph.backend", top_level_only=True)
    assert "dfslab.backends.ceph.helper" in _imports("dfslab.backends.ceph", top_level_only=False)
    assert "dfslab.backends.ceph.helper" not in _imports("dfslab.backends.ceph", top_level_only=True)
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a -> b -> c -> a"]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# Filesystem words outside backends/: the layers above the filesystems speak of targets, daemons,
# pools of "the cluster" and faults; a filesystem's own things (its daemons' names, labels, tools,
# options) belong in its package, where adding a filesystem or a target puts them. Counted on code
# only (names and strings): comments and docstrings explain and may name anything.
FS_WORDS = re.compile(r"(?<![a-z])(" + "|".join(w for fs in FILESYSTEMS for w in words_of(fs)) + r")(?![a-z])", re.I)
# Modules whose subject is one filesystem's tool: the word is what they are about.
SUBJECT = {
    "dfslab.plan": "Ceph's capacity planner (crushtool, osdmaptool, PGs per OSD); another filesystem's would sit beside it",
    "dfslab.pushdown": "SkyhookDM-style queries inside Ceph's OSDs (the object class cls_dfslab, librados)",
    "dfslab.workloads.pushdown": "the pushdown worker as a workload (requires target rados)",
    "dfslab.workloads.radosbench": "rados bench, Ceph's own benchmark (requires target rados)",
    "dfslab.native": "builds the object class into Ceph's rados-classes directory",
}
# The other modules' lines that still say a filesystem's words, per module, and why. A count may
# only go down (#36 moves them into the filesystems' packages): the test fails above it, and
# below it until the count here is lowered.
LINES_LEFT = {
    "dfslab.registry": (5, "registration: the table of filesystems and targets names each one"),
    "dfslab.workloads.fio": (7, "fio's engine table: its own engine names (rados, rbd, gfapi) for each kind of target, "
                                "as fio's engines/ and IOR's aiori table"),
    "dfslab.cli.common": (2, "the app's help example (`exec small -- ceph -s`)"),
    "dfslab.cli.clusters": (4, "help examples, scale's bricks"),
    "dfslab.cli.data": (6, "the pushdown commands' help (cluster name (Ceph), inside the OSDs)"),
    "dfslab.cli.faults": (2, "help examples (`fault kill osd.1`)"),
    "dfslab.cli.tools": (1, "the capabilities help's example file (rook-yours)"),
    "dfslab.spec": (10, "the kubernetes section's Rook fields (namespace rook-ceph, devices per OSD, "
                        "dataDirHostPath), help text naming the engines"),
    "dfslab.runtime.kubernetes.images": (15, "the local Kubernetes' image is Rook's binary on dfslab's Ceph image"),
    "dfslab.workloads.servers": (4, "placement groups per server (the size of a confined pool), help naming rados bench"),
    "dfslab.runtime.kubernetes.job": (2, "a shipped Ceph helper, the image's name"),
    "dfslab.runtime.kubernetes": (5, "Rook's data directory on each node, Rook's build beside Kubernetes'"),
    "dfslab.runtime.kubernetes.node": (5, "Rook's data directory bound into each node"),
    "dfslab.runtime.kubernetes.existing": (2, "the Rook image pushed to a site's registry; Ceph in an error message"),
    "dfslab.experiment": (3, "help text: OSDs' disks, BlueStore's cache"),
    "dfslab.report": (4, "rados bench's latency chart caption, the pushdown figure, OSDs' room"),
    "dfslab.workloads": (3, "the `cephfs` alias of target fs, help naming CephFS/GlusterFS"),
    "dfslab.run": (1, "progress naming OSDs"),
    "dfslab.chaos.daemon": (1, "help example: osd.N, mon.X"),
    "dfslab.chaos.entry": (1, "help example: osd.1, mon.b"),
    "dfslab.chaos.pod": (1, "help example: osd.0, glusterd.node2"),
    "dfslab.dryrun": (1, "the fix names ceph.osd_size"),
    "dfslab.runtime.kubernetes.binaries": (2, "the build's error names Rook; the engine build an image carries where "
                                              "the release names none (rook-v1.12.11)"),
    "dfslab.tune": (1, "help example: ceph: {conf: ...}"),
}


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines |= set(range(first.lineno, first.end_lineno + 1))
    return lines


def _fs_word_lines(source: str) -> dict[int, str]:
    """Lines whose code (names and strings, not comments or docstrings) says a filesystem's word."""
    docs = _docstring_lines(ast.parse(source))
    text = source.splitlines()
    return {tok.start[0]: text[tok.start[0] - 1].strip()
            for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type in (tokenize.NAME, tokenize.STRING) and tok.start[0] not in docs and FS_WORDS.search(tok.string)}


def test_outside_the_filesystems_no_module_speaks_of_one_unless_listed():
    problems = []
    for module, path in sorted(MODULES.items()):
        if module.startswith("dfslab.backends") or any(module == s or module.startswith(s + ".") for s in SUBJECT):
            continue
        found = _fs_word_lines(path.read_text())
        allowed = LINES_LEFT.get(module, (0, ""))[0]
        if len(found) > allowed:
            problems.append(f"{module}: {len(found)} lines say a filesystem's words (listed: {allowed}); move them into "
                            "the filesystem's package:\n" + "\n".join(f"    {n}: {line[:100]}" for n, line in found.items()))
        elif len(found) < allowed:
            problems.append(f"{module}: {len(found)} lines left, LINES_LEFT says {allowed}: lower it")
    assert problems == [], "\n".join(problems)


def test_the_word_check_sees_code_not_comments():
    source = '"""A docstring may say Ceph."""\n# so may a comment: osd.0\nx = "fs"  # rados\ny = "osd.1"\npg_count = 2\n'
    assert set(_fs_word_lines(source)) == {4, 5}
    assert not FS_WORDS.search("monitor common crushed_ice master") and FS_WORDS.search("glusterd")
    assert FS_WORDS.search("mfsmount") and FS_WORDS.search("chunkserver")  # every registered filesystem's words


# A runtime is told apart by what it declares (Runtime's class attributes: client_kinds,
# daemons_in_pods, deploy_seconds, ...), never by its name: adding a runtime must not mean
# finding every `runtime == "kubernetes"`. Outside runtime/ and the registry that names them,
# no comparison with a runtime's name, no table keyed or made of runtime names.
RUNTIME_NAMES = set(__import__("dfslab.registry", fromlist=["RUNTIMES"]).RUNTIMES)


def _runtime_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in RUNTIME_NAMES


def _runtime_name_uses(source: str) -> list[str]:
    tree = ast.parse(source)
    literal_args = {id(n) for sub in ast.walk(tree) if isinstance(sub, ast.Subscript)
                    and ast.unparse(sub.value).endswith("Literal") for n in ast.walk(sub.slice)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = any(_runtime_name(s) or (isinstance(s, (ast.Tuple, ast.List, ast.Set)) and any(map(_runtime_name, s.elts)))
                        for s in sides)
            if named and "runtime" in ast.unparse(node):
                found.append(f"{node.lineno}: {ast.unparse(node)[:90]}")
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) and id(node) not in literal_args:
            items = node.keys if isinstance(node, ast.Dict) else node.elts
            if sum(map(_runtime_name, items)) >= 2:
                found.append(f"{node.lineno}: {ast.unparse(node)[:90]}")
    return found


def test_no_module_outside_runtime_tells_runtimes_apart_by_name():
    offenders = [f"{module}:{use}" for module, path in sorted(MODULES.items())
                 if not module.startswith("dfslab.runtime") and module != "dfslab.registry"
                 for use in _runtime_name_uses(path.read_text())]
    assert offenders == [], "declare it on the Runtime (runtime/base.py) and read the declaration:\n" + "\n".join(offenders)


def test_the_runtime_name_check_can_fail():
    assert _runtime_name_uses('if spec.runtime == "kubernetes":\n    pass\n') == ['1: spec.runtime == \'kubernetes\'']
    assert len(_runtime_name_uses('S = {"local": 10.0, "docker": 30.0}\n')) == 1
    assert len(_runtime_name_uses('x = runtime.kind in ("local", "docker")\n')) == 2  # the compare and its tuple
    assert _runtime_name_uses('runtime: Literal["local", "docker"] = "local"\nif target == "local": pass\n') == []


def test_the_cli_is_one_small_module_per_command_group():
    # The CLI parses and shows; its work is elsewhere. A module past 300 lines is doing work.
    sizes = {p.name: len(p.read_text().splitlines()) for p in (PKG / "cli").glob("*.py")}
    assert len(sizes) >= 5 and max(sizes.values()) <= 300, sizes


def test_the_modules_dfslabs_image_runs_import_only_what_the_image_has():
    """On a Kubernetes you run, the integrity checker and the S3 load run in dfslab's image with
    Debian's Python packages (rados, boto3, tenacity, numpy; no pydantic, typer, yaml, jinja2,
    rich, kubernetes, scipy or pandas): importing one of them with those blocked must work."""
    import subprocess
    import sys

    from dfslab.runtime.kubernetes.images import IMAGE_MODULES
    blocked = ["pydantic", "typer", "yaml", "jinja2", "rich", "kubernetes", "scipy", "pandas"]
    for module in sorted(IMAGE_MODULES):
        code = f"import sys\nfor name in {blocked!r}:\n    sys.modules[name] = None\nimport {module}\n"
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert res.returncode == 0, (module, res.stderr[-600:])


# A filesystem's lifecycle is small; what only some filesystems do is an ability they choose
# (backends/abilities.py), and a fact is a field of its `Facts` record, not a class attribute.
def _backend_interface() -> list[str]:
    from dfslab.backends import Backend
    return [n for n, v in vars(Backend).items() if not n.startswith("_") and (callable(v) or isinstance(v, classmethod))]


def test_the_backend_base_class_is_a_small_lifecycle_named_for_no_tool_or_filesystem():
    methods = _backend_interface()
    assert len(methods) <= 12, methods
    named = [m for m in methods if FS_WORDS.search(m.replace("_", " ")) or re.search(r"pool|bucket|pod|rados|s3|fio", m)]
    assert named == [], named
    from dfslab.backends import Backend
    attributes = [n for n, v in vars(Backend).items() if not n.startswith("_") and n not in methods]
    assert attributes == ["name", "facts"], attributes


def test_every_method_of_the_base_class_is_the_lifecycle_of_more_than_one_filesystem():
    """A method only one filesystem implements belongs in an ability (or its own package)."""
    from dfslab.backends import Backend
    from dfslab.registry import backend_class_of, engines_of
    concrete = {m for m in _backend_interface() if not getattr(getattr(Backend, m), "__isabstractmethod__", False)}
    classes = {fs: {backend_class_of(fs), *(backend_class_of(fs, r) for r in engines_of(fs))} for fs in FILESYSTEMS}
    overridden = {m: sorted(fs for fs, kinds in classes.items()
                            if any(m in vars(k) for kind in kinds for k in kind.__mro__ if k is not Backend
                                   and k.__module__.startswith(f"dfslab.backends.{fs}")))
                  for m in concrete}
    lonely = {m: who for m, who in overridden.items() if len(who) == 1}
    assert lonely == {}, f"implemented by one filesystem only: move into an ability: {lonely}"
