"""What every command of the command line shares: user errors and warnings as one line
each (never a stack trace), on one error console.

Light on purpose: the command modules import it before checking their arguments, so it
imports neither torch nor the model.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import wraps

import typer

from ..common.console import GuardedStdout, labelled, plain_console
from ..common.errors import NormXLogitError

#: the console of errors, warnings and progress (stderr; text is never read as markup)
err = plain_console(stderr=True)


def friendly(command: Callable) -> Callable:
    """Print user errors and warnings as one line each, never a stack trace."""

    @wraps(command)
    def run(*args, **kwargs):
        from ..common.options import check_magnitude

        def show_warning(message, category, *rest, **more):
            err.print(labelled("warning:", "yellow", message), soft_wrap=True)

        previous = warnings.showwarning
        warnings.showwarning = show_warning
        try:
            for name, value in kwargs.items():  # every integer flag, bounded
                for item in value if isinstance(value, list) else [value]:
                    check_magnitude(item, f"--{name.replace('_', '-')}")
            result = command(*args, **kwargs)
            GuardedStdout().flush()  # a full disk shows here, not as a failure at exit
            return result
        except NormXLogitError as error:
            err.print(labelled("error:", "red", error), soft_wrap=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            err.print(labelled("interrupted", "red", "(files are written whole or not at all)"))
            raise typer.Exit(130) from None
        finally:
            warnings.showwarning = previous

    return run


def refuse_model_file(output: object, model: str, flag: str) -> None:
    """Refuse an output ``flag`` that names an existing file inside the local model folder
    ``model`` (its config.json, weights, tokenizer files): writing it would break the
    model. A new file inside the folder is left alone; so is a model that is no folder."""
    import os
    from pathlib import Path

    from ..common.errors import OutputPathError

    if output is None or not model:
        return
    folder, target = Path(model), Path(os.fspath(output))
    try:
        if not folder.is_dir() or not target.exists() or target.is_dir():
            return
        inside = target.resolve().is_relative_to(folder.resolve())
    except OSError:
        return
    if inside:
        raise OutputPathError(f"{flag} {output} is a file of the model {model}; write elsewhere")
