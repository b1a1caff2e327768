"""The `dfslab` command: thin, it parses arguments and shows progress; the work is elsewhere. One
module per command group (clusters, running, tuning, runs, faults, data, tools), each registering
its commands on the one app of `common`."""

from __future__ import annotations

import inspect
import os
import sys
import time
from pathlib import Path

import typer
from typer.core import TyperOption

from ..terminal import LiveProgress, console  # noqa: F401 (LiveProgress: the CLI's progress, for tests)
# Each registers its commands, in the order `dfslab --help` lists them.
from . import clusters, running, tuning, runs, faults, data, tools  # noqa: F401,I001
from .common import app
from .data import data_app
from .common import COMPARE_FIT, RESULTS_FIT  # noqa: F401
from .tools import images_app

__all__ = ["app", "data_app", "images_app", "main", "whole_paragraphs", "COMPARE_FIT", "RESULTS_FIT", "LiveProgress"]


def _log_unexpected(exc: BaseException) -> Path:
    """The traceback goes to a file; the user gets one line with its path."""
    from ..state import dfslab_home
    import tempfile
    import traceback
    for folder in (dfslab_home() / "logs", Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"dfslab-error-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
            path.write_text(f"dfslab {' '.join(sys.argv[1:])}\n\n" + "".join(traceback.format_exception(exc)))
            return path
        except OSError:
            continue
    return Path("/dev/null")


def whole_paragraphs(doc: str) -> str:
    """A docstring's paragraphs each on one line: the help renderer keeps a docstring's line breaks
    and wraps again at the terminal's width, which cut sentences mid-line (`raw tool output,⏎results.csv`)."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def _whole_help(*groups: typer.Typer) -> None:
    for group in groups:
        for info in group.registered_commands:
            if info.callback is not None and info.callback.__doc__:
                info.callback.__doc__ = whole_paragraphs(info.callback.__doc__)


_whole_help(app, data_app, images_app)


def _help_value(option: TyperOption, ctx: typer.Context) -> str | None:
    """What an option's help shows after it: nothing for a flag (typer shows `<bool>`), the option's
    own name for free text (`--cluster CLUSTER`, where typer shows `<str>`), typer's own otherwise."""
    if option.is_flag:
        return None
    shown = _typer_help_value(option, ctx)
    return option.name.upper() if shown == "<str>" and option.name else shown


_typer_help_value = TyperOption.display_type_rich
TyperOption.display_type_rich = _help_value  # type: ignore[method-assign]


def main() -> None:
    """Exit codes: 0 done; 1 a run, a check or a teardown found a problem (a failed workload, lost
    data, an unknown cluster, something left behind), or dfslab itself failed unexpectedly;
    2 bad input (spec, name, option), refused before anything changed; 130 interrupted."""
    try:
        app(prog_name="dfslab")
    except SystemExit:
        raise
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the one place that turns any failure into one line
        log = _log_unexpected(exc)
        console.print(f"[bold red]error:[/] unexpected {type(exc).__name__}: {exc} (traceback in {log}; please report it)",
                      highlight=False, soft_wrap=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
