"""docs/cli.md, the command reference: every command and subcommand with its help and each option,
rendered from the commands themselves so the page cannot drift from `--help` (tests/test_docs_unit.py
compares them). `python -m dfslab.cli.reference > docs/cli.md` writes it again."""

from __future__ import annotations

from typing import Any

import typer

HEAD = """# Command reference

Every command, its arguments and options, as `dfslab COMMAND --help` gives them (this page is
rendered from the commands: `.venv/bin/python -m dfslab.cli.reference > docs/cli.md`; a test fails
when it differs). Exit codes: README.md's "Exit codes, for scripts".
"""


def _cell(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


def _commands(command: Any, path: list[str]) -> list[tuple[str, Any]]:
    subs = getattr(command, "commands", None)
    if subs is None:
        return [(" ".join(path), command)]
    own = [(" ".join(path), command)] if path and command.help else []
    return own + [c for name, sub in subs.items() for c in _commands(sub, [*path, name])]


def _section(name: str, command: Any) -> list[str]:
    out = [f"## dfslab {name}", "", _cell(command.help).split(" · ")[0] if command.help else "", ""]
    rows = []
    for param in command.params:
        kind = getattr(param, "param_type_name", "")
        if kind == "argument":
            rows.append((f"`{param.name}`", _cell(getattr(param, "help", ""))))
        elif kind == "option" and "--help" not in param.opts:
            names = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
            rows.append((names, _cell(getattr(param, "help", ""))))
    if rows:
        out += ["| argument or option | what |", "|---|---|", *[f"| {a} | {b} |" for a, b in rows], ""]
    return out


def markdown(app: typer.Typer) -> str:
    lines = [HEAD]
    for name, command in _commands(typer.main.get_command(app), []):
        lines += _section(name, command)
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    from . import app as dfslab_app
    print(markdown(dfslab_app), end="")
