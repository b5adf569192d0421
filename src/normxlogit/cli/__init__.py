"""The ``normxlogit`` command line: ``explain``, ``evaluate``, ``bench``, ``serve``, ``models``,
``methods``, ``metrics``, ``train``, ``sanity``.

Only typer, rich and the package's light modules are imported at the top: every command
checks its arguments, output paths and input files first, then imports torch and
transformers and loads the model. ``--help`` and bad input are answered at once, and a
bad output path is refused before minutes of work, not after.
"""

from __future__ import annotations

# importing a command module registers its commands, in the order --help lists them
# isort: off
from . import explain, evaluate, sanity, listing, train, serve  # noqa: F401

# isort: on
from .app import app, out
from .bench import bench_app

app.add_typer(bench_app, name="bench")

__all__ = ["app", "main", "out"]


def main() -> None:
    app()


if __name__ == "__main__":
    main()
