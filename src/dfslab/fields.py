"""Typed values every spec section uses (sizes, rates, durations with units; strict models).
Backends build their own spec sections from these, so this module imports nothing of dfslab's
but `units` and the registry (whose data names a filesystem's releases)."""

from __future__ import annotations

from typing import Annotated, Any, Optional

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, WithJsonSchema

from .units import UnitError, parse_bandwidth, parse_duration, parse_size


def _unit_validator(parse):
    def check(value: Any) -> Any:
        if value is None:
            return None
        try:
            return parse(value)
        except UnitError as exc:
            raise ValueError(str(exc)) from None
    return BeforeValidator(check)


def _with_unit(unit: str) -> PlainSerializer:
    # Dumped specs (state.json, run directories) must load again: keep the unit on.
    return PlainSerializer(lambda v: None if v is None else f"{v}{unit}", when_used="json")


class Unit(str):
    """The unit a field's value is in, kept on the field so a run can record it."""


def _written(*examples: str) -> WithJsonSchema:
    # What a file holds (a number with its unit), for the JSON Schema editors check files against.
    return WithJsonSchema({"type": "string", "examples": list(examples)})


Bytes = Annotated[int, _unit_validator(parse_size), _with_unit("B"), Unit("B"), _written("4GiB", "1MiB", "64KiB")]
BitsPerSecond = Annotated[int, _unit_validator(parse_bandwidth), _with_unit("bit"), Unit("bit/s"),
                          _written("1gbit", "100mbit")]
Seconds = Annotated[float, _unit_validator(parse_duration), _with_unit("s"), Unit("s"), _written("10s", "5min", "0.5ms")]


def _release_of(filesystem: str, optional: bool = False) -> tuple[list[Any], BeforeValidator]:
    """What a release field of `filesystem` takes: its releases' names (a number written without
    quotes too: `release: 4` is 4), and the validator that refuses an unknown one listing them
    (None passes where the field is `optional`: unset)."""
    from .registry import release_problem, releases_of
    known = releases_of(filesystem)

    def named(value: Any) -> str | None:
        if value is None and optional:
            return None
        if problem := release_problem(filesystem, value):
            raise ValueError(problem)
        return str(value)
    return [r.name for r in known] + [int(r.name) for r in known if r.name.isdigit()], BeforeValidator(named)


def ReleaseName(filesystem: str, product: str) -> Any:  # noqa: N802 (a type, as Bytes is)
    """A filesystem section's `release:`: one of its package's RELEASES by name, the first by
    default; an unknown one is refused listing them."""
    from .registry import releases_of
    known = releases_of(filesystem)
    names, named = _release_of(filesystem)
    return Annotated[str, named, WithJsonSchema({"enum": names}), Field(known[0].name, description=(
        f"the {product} release its daemons and clients run: " + ", ".join(f"{r.name} ({r.version})" for r in known)
        + "; a release other than this machine's own runs from a root of Debian's packages that dfslab builds "
        "once and caches (dfslab releases)"))]


def ClientReleaseName(filesystem: str, product: str) -> Any:  # noqa: N802 (a type, as Bytes is)
    """A filesystem section's `client_release:`: the release its clients (the tools on the client
    nodes and the mounts there) run, when it is not the servers' (`release:`); unset: the servers'."""
    names, named = _release_of(filesystem, optional=True)
    return Annotated[Optional[str], named, WithJsonSchema({"enum": [*names, None]}), Field(None, description=(
        f"the {product} release of its clients (the tools on the client nodes, its mounts there), when it is not "
        "the servers': mixed versions, as a site upgrading its servers first has them; unset: the servers' release"))]


def field_units(model: type[BaseModel]) -> dict[str, str]:
    """{field: unit} of a model's fields typed with a unit (Bytes, Seconds, ...)."""
    return {name: str(m) for name, f in model.model_fields.items() for m in f.metadata if isinstance(m, Unit)}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, validate_default=True)


