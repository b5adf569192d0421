"""``normxlogit serve``: the local page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..common.console import labelled
from ..common.errors import InvalidOptionError
from .app import app
from .helpers import err, friendly, once_each


@app.command(cls=once_each())
@friendly
def serve(
    model: Annotated[
        list[Path] | None,
        typer.Option(
            "--model",
            "-m",
            help="A local model folder the page may use besides the built-ins (repeat for "
            "more; a built-in name is offered anyway). The page can use no other path.",
        ),
    ] = None,
    bench: Annotated[
        list[str] | None,
        typer.Option(
            "--bench",
            help="A bench config whose results the page browses: CONFIG (its default store) "
            "or CONFIG=STORE (repeat for more).",
        ),
    ] = None,
    data: Annotated[
        list[Path] | None,
        typer.Option("--data", help="A file of examples to pick from (repeat for more)."),
    ] = None,
    host: Annotated[
        str,
        typer.Option(help="Address to listen on; anyone who reaches it can run the models."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the page in the default browser.")
    ] = False,
) -> None:
    """Explore explanations and their faithfulness in the browser, and browse bench results.

    The page explains a text with several methods side by side (per label, per layer,
    step by step for a decoder's generation), runs the faithfulness curves of those
    explanations, and shows the tables, curves and stored explanations of `normxlogit bench`
    stores. Stop it with Ctrl-C.
    """
    from ..serve import serve as run_page

    if not 0 < port < 65536:
        raise InvalidOptionError(f"--port must be between 1 and 65535, not {port}")
    if host not in ("127.0.0.1", "localhost", "::1"):
        err.print(
            labelled(
                "warning:",
                "yellow",
                f"listening on {host}: anyone who reaches this port can run the models "
                "on this machine",
            )
        )
    run_page(
        model or [],
        host=host,
        port=port,
        bench=bench or [],
        data=data or [],
        open_browser=open_browser,
    )
