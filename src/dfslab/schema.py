"""The JSON Schema of a cluster spec and of an experiment, from the same pydantic models that
validate them (`dfslab schema spec|experiment`), and the reference tables the docs are built
from (docs/hooks.py): neither can drift from what dfslab accepts.

An editor that reads `# yaml-language-server: $schema=...` completes and checks a file while
it is typed. What the models take in a shorter form is widened here to match: `nodes: 3`, and
in an experiment every workload parameter given as one value or as a list (a sweep axis)."""

from __future__ import annotations

import sys
from typing import Any

from pydantic import BaseModel

from .experiment import ExperimentFile
from .spec import cluster_spec_model
from .workloads import WORKLOADS, workload

SCHEMA_URI = "https://json-schema.org/draft/2020-12/schema"


def spec_schema() -> dict[str, Any]:
    schema = cluster_spec_model().model_json_schema()
    nodes = schema["properties"]["nodes"]
    schema["properties"]["nodes"] = {"description": nodes.get("description", ""),
                                     "anyOf": [{"type": "integer", "minimum": 1, "maximum": 16},
                                               {k: v for k, v in nodes.items() if k != "description"}]}
    return {**schema, "$schema": SCHEMA_URI, "title": "dfslab cluster spec"}


def _swept(prop: dict[str, Any]) -> dict[str, Any]:
    """A parameter as an experiment takes it: its value, or a list of values to sweep."""
    value = {k: v for k, v in prop.items() if k not in ("description", "default", "title")}
    shown = {k: prop[k] for k in ("description", "default") if k in prop}
    return {**shown, "anyOf": [value, {"type": "array", "items": value, "minItems": 1}]}


def workload_schema(name: str) -> dict[str, Any]:
    """One workload entry: `type: NAME` and its parameters, each one value or a sweep list."""
    params = workload(name).Params.model_json_schema()
    props = {k: _swept(v) for k, v in params.get("properties", {}).items()}
    return {"title": name, "type": "object", "additionalProperties": False, "required": ["type"],
            "properties": {"type": {"const": name}, **props}, "$defs": params.get("$defs", {})}


def experiment_schema() -> dict[str, Any]:
    schema = ExperimentFile.model_json_schema()
    defs = schema.setdefault("$defs", {})
    entries = []
    for name in sorted(WORKLOADS):
        entry = workload_schema(name)
        defs.update(entry.pop("$defs"))  # one namespace of definitions (pydantic names them by model)
        entries.append(entry)
    schema["properties"]["workloads"] = {**schema["properties"]["workloads"], "items": {"anyOf": entries}}
    schema["properties"]["cluster"] = {"description": "a path to a cluster spec relative to this file, or an inline "
                                                      "spec (a list at any path of it is a sweep axis)",
                                       "anyOf": [{"type": "string"}, {"type": "object"}, {"type": "null"}]}
    return {**schema, "$schema": SCHEMA_URI, "title": "dfslab experiment"}


SCHEMAS = {"spec": spec_schema, "experiment": experiment_schema}


# -- reference tables (docs) -------------------------------------------------------------------
def _type_text(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return " | ".join(str(v) for v in prop["enum"])
    if "const" in prop:
        return str(prop["const"])
    if "anyOf" in prop:
        return " | ".join(dict.fromkeys(_type_text(p) for p in prop["anyOf"]))
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    if prop.get("type") == "array":
        return f"list of {_type_text(prop.get('items', {}))}"
    if prop.get("type") == "string" and prop.get("examples"):
        return f"string like {prop['examples'][0]}"
    return str(prop.get("type", "any"))


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def model_table(model: type[BaseModel]) -> str:
    """A markdown table of a model's fields: name, type, default, what it is."""
    schema = model.model_json_schema()
    lines = ["| field | type | default | what it is |", "|---|---|---|---|"]
    required = set(schema.get("required", []))
    for name, prop in schema.get("properties", {}).items():
        default = "required" if name in required else f"`{prop['default']}`" if prop.get("default") not in (None, []) else ""
        lines.append(f"| `{name}` | {_cell(_type_text(prop))} | {_cell(default)} | {_cell(prop.get('description', ''))} |")
    return "\n".join(lines)


def spec_reference() -> str:
    """Every section of a cluster spec, one table each, from the models."""
    from .registry import FILESYSTEMS, section_class
    from .spec import KubernetesSection, LocalKubernetes, Network, Node
    parts = [("Top level", cluster_spec_model()), ("network", Network), ("nodes (each)", Node), ("kubernetes", KubernetesSection),
             ("kubernetes.local", LocalKubernetes)]
    parts += [(fs, section_class(fs)) for fs in FILESYSTEMS]
    return "\n\n".join(f"### {title}\n\n{model_table(model)}" for title, model in parts)


def experiment_reference() -> str:
    """The experiment's fields, then each workload's parameters, from the models."""
    parts = [f"### Experiment\n\n{model_table(ExperimentFile)}"]
    for name in sorted(WORKLOADS):
        wl = workload(name)
        doc = (type(wl).__doc__ or sys.modules[type(wl).__module__].__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        parts.append(f"### `type: {name}`\n\n{doc}\n\n{model_table(wl.Params)}")
    return "\n\n".join(parts)
