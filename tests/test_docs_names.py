"""docs/architecture.md and docs/layout.md name modules, classes, functions and attributes in
backticks: each one must exist, so that a rename or a move that leaves the docs behind fails here.
What is checked: a path of dfslab's (`backends/ceph/rook.py`, `runtime/kubernetes/`, `faultrun.py`)
or of the repository (`scripts/install-deps.sh`); a dotted name whose head is one of dfslab's
modules or classes (`registry.runtime_of`, `Backend.refusal`, `Facts.admin_tools`); a bare class
name of dfslab's (`KubernetesFault`). Anything else in backticks (commands, YAML, values) is text."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "src" / "dfslab"
DOCS = [REPO / "docs" / "architecture.md", REPO / "docs" / "layout.md"]


def _classes() -> dict[str, str]:
    """Every top-level class of dfslab's, and every name a module's `__getattr__` answers for
    (spec.ClusterSpec): name -> its module."""
    found: dict[str, str] = {}
    for path in PKG.rglob("*.py"):
        module = ".".join(path.relative_to(PKG.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, module)
            elif isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
                for c in ast.walk(node):
                    if isinstance(c, ast.Compare) and isinstance(c.comparators[0], ast.Constant):
                        found.setdefault(c.comparators[0].value, module)
    return found


CLASSES = _classes()


def _module(dotted: str) -> object | None:
    for candidate in (f"dfslab.{dotted}", dotted):
        try:
            return importlib.import_module(candidate)
        except ImportError:
            continue
    return None


def _has(obj: object, attribute: str) -> bool:
    if hasattr(obj, attribute):
        return True
    fields = getattr(obj, "model_fields", None) or getattr(obj, "__dataclass_fields__", None) or {}
    annotations = getattr(obj, "__annotations__", {})
    return attribute in fields or attribute in annotations


def problem(token: str) -> str | None:
    """What is wrong with one backticked name (None: it exists, or it is not a name of ours)."""
    token = token.strip().rstrip("()").split("(")[0]
    if re.fullmatch(r"[\w./-]+\.(py|sh|md|txt|yaml|cc|patch)|[\w./-]+/", token):
        if token.startswith(("/", "~", "$")) or "*" in token or "<" in token:
            return None
        for base in (PKG, REPO, REPO / "src"):
            if (base / token).exists():
                return None
        if any(str(p).endswith("/" + token.rstrip("/")) for p in PKG.rglob("*")):
            return None  # named from where the text is (conf.py in the Ceph section)
        head = token.split("/")[0]
        if head in {"src", "docs", "tests", "scripts", "native", "bench", "examples"} or (PKG / head).exists() \
                or token.endswith(".py"):
            return f"{token}: no such file or directory"
        return None
    if not re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*", token):
        return None
    parts = token.split(".")
    # the longest head that is one of dfslab's modules, or a class of dfslab's
    for cut in range(len(parts), 0, -1):
        head = ".".join(parts[:cut])
        obj = _module(head) if head.split(".")[0] in {p.stem for p in PKG.iterdir()} else None
        if obj is None and cut == 1 and head in CLASSES:
            obj = getattr(importlib.import_module(CLASSES[head]), head)
        if obj is not None:
            for attribute in parts[cut:]:
                if not _has(obj, attribute):
                    return f"{token}: {'.'.join(parts[:parts.index(attribute)])} has no {attribute}"
                obj = getattr(obj, attribute, None)
            return None
    if len(parts) == 1 and re.fullmatch(r"[A-Z][a-z]+[A-Z]\w*", token):  # CamelCase: a class we would have
        return f"{token}: no class of that name in dfslab"
    return None


def _tokens(path: Path) -> list[tuple[int, str]]:
    out = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        out += [(number, t) for t in re.findall(r"`([^`\n]+)`", line)]
    return out


def test_every_name_the_architecture_and_layout_docs_cite_exists():
    problems = [f"{path.name}:{n}: {p}" for path in DOCS for n, token in _tokens(path) if (p := problem(token))]
    # layout.md is a tree without backticks: its file names, read off each line
    layout = (REPO / "docs" / "layout.md").read_text()
    for n, line in enumerate(layout.splitlines(), 1):
        for name in re.findall(r"\b([a-z_]+\.py)\b", line):
            if not list(PKG.rglob(name)) and not list((REPO / "bench").glob(name)) and not list(REPO.glob(f"*/{name}")):
                problems.append(f"layout.md:{n}: {name}: no such module")
    assert problems == [], "\n".join(problems)


def test_the_name_check_can_fail():
    assert problem("registry.runtime_of") is None and problem("Backend.refusal") is None
    assert problem("runtime/local.py") is None and problem("fault.py") is None
    assert problem("registry.no_such_thing") and problem("Backend.target_refusal")
    assert problem("runtime/engine.py") and problem("NoSuchRuntime")
    assert problem("ceph -s") is None and problem("HEALTH_OK") is None
