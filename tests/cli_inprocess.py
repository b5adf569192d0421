"""The command line run inside the test process, as a fresh ``normxlogit`` process runs it.

A CLI test that starts ``normxlogit`` (or ``python -m normxlogit``) in a subprocess pays
seconds of importing torch and transformers, and of loading the model, before its first
line of work; in the pytest worker both are done already. :func:`run_cli` runs the same
command in this process and answers what ``subprocess.run(..., capture_output=True,
text=True)`` would: ``returncode``, ``stdout`` and ``stderr`` (str).

It is no looser than the subprocess:

* an exception the command lets out (a stack trace a user would see) is put, formatted,
  at the end of ``stderr``, with return code 1, as Python prints it at exit;
* the CLI's consoles are made afresh for each run, reading the run's environment
  (``COLUMNS=200``, as the subprocess helpers set) and its streams, as a new process makes
  them at import; the consoles made at import in the worker are put back after;
* warnings start from a new interpreter's filters (pytest's capture would swallow the
  ones the CLI does not show itself), and once-only warnings (Python's and transformers')
  are forgotten, so each run says what a first run would;
* the method and metric registries hold the package's own entries alone (a test's
  registration left behind is not seen);
* log records reach standard error as in a new process (transformers' handler writes to
  the run's stderr; pytest's handlers on the root logger are set aside for the run).

And it leaves nothing behind: the working folder, the environment, torch's thread count and
random state, Python's and NumPy's random state, the warning filters, the logging set-up
and the registries are each restored after the run.

Tests of the process itself (signals, two processes at once, the installed entry point,
``--help`` not importing torch, a running server) keep a real subprocess; ``serve`` runs
here only to be refused (starting its server fails the run instead of blocking).
"""

from __future__ import annotations

import logging
import os
import random
import sys
import traceback
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # the click typer runs on: its own copy in newer typer (as typer.testing uses), else click
    from typer._click import formatting
except ImportError:  # pragma: no cover - typer releases that use click itself
    from click import formatting
from typer.testing import CliRunner

#: the width the subprocess helpers gave the command's terminal
COLUMNS = "200"
#: a new interpreter's warning filters (release build, no -W or PYTHONWARNINGS)
_FRESH_FILTERS = [
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, ""),
    ("ignore", PendingDeprecationWarning, ""),
    ("ignore", ImportWarning, ""),
    ("ignore", ResourceWarning, ""),
]


@dataclass
class Ran:
    """What a finished command left: as ``subprocess.CompletedProcess`` (text mode)."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    #: the exception the command let out (a traceback in a real process), or None
    exception: BaseException | None = field(default=None, repr=False)


def run_cli(
    *args: str,
    stdin: str | bytes | None = None,
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    prog_name: str = "normxlogit",
    columns: str | None = COLUMNS,
) -> Ran:
    """``normxlogit ARGS`` run in this process from ``cwd`` with ``stdin`` piped in and
    ``env`` added to the environment (``COLUMNS`` set to ``columns``)."""
    from normxlogit.cli import app

    arguments = [str(arg) for arg in args]
    extra = dict(env or {})
    if columns is not None:
        extra["COLUMNS"] = columns
    with (
        _restored_state(),
        _fresh_warnings(),
        _stderr_logging(),
        _package_registries(),
        _no_server(arguments),
    ):
        if cwd is not None:
            os.chdir(cwd)
        os.environ.update(extra)
        with _Runner().isolation(input=stdin) as (stdout_bytes, stderr_bytes, _):
            returncode, exception, shown = _main(_command(app), arguments, prog_name)
            stdout, stderr = stdout_bytes.getvalue(), stderr_bytes.getvalue()
    stderr_text = _decoded(stderr, errors="backslashreplace") + shown
    return Ran(["normxlogit", *arguments], returncode, _decoded(stdout), stderr_text, exception)


def _main(command: Any, arguments: list[str], prog_name: str):
    """The return code, the exception let out (or None) and what Python would print of it
    on stderr at exit, of the click ``command`` run as a process's main."""
    returncode, exception, shown = 0, None, ""
    try:
        command.main(args=arguments, prog_name=prog_name)
    except SystemExit as stop:
        code = stop.code
        if code is None:
            returncode = 0
        elif isinstance(code, int):
            returncode = code
        else:  # Python prints any other exit value on stderr and exits with 1
            returncode, shown = 1, f"{code}\n"
        exception = stop if returncode else None
    except Exception as error:  # a traceback a user would see, and exit status 1
        returncode, exception = 1, error
        shown = "".join(traceback.format_exception(error))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return returncode, exception, shown


#: the app's click command, built once (typer builds it anew at each invoke otherwise)
_COMMANDS: dict[int, Any] = {}


def _command(app: Any) -> Any:
    import typer.main

    if id(app) not in _COMMANDS:
        _COMMANDS[id(app)] = (app, typer.main.get_command(app))
    return _COMMANDS[id(app)][1]


@contextmanager
def _package_registries():
    """The method and metric registries holding the package's own entries alone, as in a
    new process: what a test registered (and left) is not there for the run."""
    from normxlogit.evaluation.registry import _METRICS
    from normxlogit.methods.base import _METHODS

    saved = [(registry, dict(registry)) for registry in (_METHODS, _METRICS)]
    for registry, entries in saved:
        registry.clear()
        registry.update(
            (name, entry)
            for name, entry in entries.items()
            if getattr(entry, "__module__", "").startswith("normxlogit.")
        )
    try:
        yield
    finally:
        for registry, entries in saved:
            added = {name: entry for name, entry in registry.items() if name not in entries}
            registry.clear()
            registry.update(entries)
            registry.update(added)  # one the package registered on first use stays


@contextmanager
def _no_server(arguments: list[str]):
    """``serve`` runs here only to be refused: were it to start its server (or a browser),
    the run fails with a traceback instead of blocking the test worker forever."""
    if "serve" not in arguments:
        yield
        return
    import importlib.util
    import webbrowser
    from unittest import mock

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("an in-process `serve` must not start a server: use a subprocess")

    with mock.patch.object(webbrowser, "open", refuse):
        if importlib.util.find_spec("uvicorn") is None:
            yield
            return
        import uvicorn

        with mock.patch.object(uvicorn, "run", refuse):
            yield


def _decoded(data: bytes, errors: str = "strict") -> str:
    """Bytes read as ``subprocess.run(text=True)`` reads them (universal newlines)."""
    return data.decode("utf-8", errors).replace("\r\n", "\n").replace("\r", "\n")


class _Runner(CliRunner):
    """typer's test runner's isolation (the run's stdin, stdout and stderr), the CLI's
    consoles made afresh in those streams, and click's help width left to the terminal as
    in a real process (the runner fixes 80)."""

    @contextmanager
    def isolation(self, *args: Any, **kwargs: Any):
        with super().isolation(*args, **kwargs) as streams:
            forced = formatting.FORCED_WIDTH
            formatting.FORCED_WIDTH = None
            try:
                with _fresh_consoles():
                    yield streams
            finally:
                formatting.FORCED_WIDTH = forced


@contextmanager
def _fresh_consoles():
    """Every console the CLI's modules made at import (stdout or stderr, the streams read
    when printing), replaced for the run by one made now, as a new process makes it: its
    width and colours read from this run's environment and streams."""
    from rich.console import Console

    from normxlogit.common.console import GuardedStdout, plain_console

    fresh: dict[int, Console] = {}
    replaced: list[tuple[Any, str, Console]] = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("normxlogit") or module is None:
            continue
        for attribute, value in list(vars(module).items()):
            if not isinstance(value, Console):
                continue
            if not (value._file is None or isinstance(value._file, GuardedStdout)):
                continue
            if id(value) not in fresh:
                fresh[id(value)] = plain_console(stderr=value.stderr)
            replaced.append((module, attribute, value))
            setattr(module, attribute, fresh[id(value)])
    try:
        yield
    finally:
        for module, attribute, value in replaced:
            setattr(module, attribute, value)


@contextmanager
def _restored_state():
    """The working folder, environment and random and thread state, as they were."""
    import numpy as np
    import torch

    folder = os.getcwd()
    environment = dict(os.environ)
    threads = torch.get_num_threads()
    torch_rng = torch.get_rng_state()
    python_rng = random.getstate()
    numpy_rng = np.random.get_state()
    try:
        yield
    finally:
        os.chdir(folder)
        if dict(os.environ) != environment:
            os.environ.clear()
            os.environ.update(environment)
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        torch.set_rng_state(torch_rng)
        random.setstate(python_rng)
        np.random.set_state(numpy_rng)


@contextmanager
def _fresh_warnings():
    """A new interpreter's warning filters and printing; once-only warnings forgotten."""
    once = dict(warnings.onceregistry)
    with warnings.catch_warnings():  # restores filters and showwarning; resets registries
        warnings.resetwarnings()
        for action, category, module in reversed(_FRESH_FILTERS):
            warnings.filterwarnings(action, category=category, module=module)
        warnings._processoptions(sys.warnoptions)  # type: ignore[attr-defined]
        warnings.showwarning = warnings._showwarning_orig  # type: ignore[attr-defined]
        warnings._showwarnmsg_impl = _SHOWWARNMSG  # type: ignore[attr-defined]
        warnings.onceregistry.clear()
        try:
            yield
        finally:
            warnings.onceregistry.clear()
            warnings.onceregistry.update(once)


_SHOWWARNMSG = warnings._showwarnmsg_impl  # type: ignore[attr-defined]


@contextmanager
def _stderr_logging():
    """Log records go where a new process sends them: transformers' handler to this run's
    standard error, anything else to Python's last resort (stderr) as no root handler is
    set; transformers' once-only warnings are said again."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    hub = sys.modules.get(_HUB)
    handler = getattr(hub, "_default_handler", None)
    stream = getattr(handler, "stream", None)
    _forget_once(hub)
    root.handlers = []
    root.setLevel(logging.WARNING)
    try:
        _point(handler, _CurrentStderr())
        yield
    finally:
        root.handlers = handlers
        root.setLevel(level)
        if handler is not None:
            _point(handler, stream)
        elif (imported := getattr(sys.modules.get(_HUB), "_default_handler", None)) is not None:
            # transformers first imported in the run: its handler holds the run's stream
            _point(imported, sys.stderr)
        _forget_once(sys.modules.get(_HUB))


_HUB = "transformers.utils.logging"


def _forget_once(hub: Any) -> None:
    if hub is not None:
        hub.warning_once.cache_clear()
        hub.info_once.cache_clear()


def _point(handler: logging.StreamHandler | None, stream: Any) -> None:
    """``handler`` writing to ``stream`` (not flushing the one it had: it may be closed)."""
    if handler is None:
        return
    handler.acquire()
    try:
        handler.stream = stream
    finally:
        handler.release()


class _CurrentStderr:
    """Whatever ``sys.stderr`` is when written to (the run's, inside the runner)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()
