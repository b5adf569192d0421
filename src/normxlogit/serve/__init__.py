"""``normxlogit serve``: a local page to explore explanations and their faithfulness.

>>> from normxlogit.serve import serve
>>> serve(models=["path/to/my-model"], bench=["experiments/pisoft-classification.toml"])

The page offers the built-in models and the folders named here; it explains a text with
several methods side by side (per label, per layer, and step by step for a decoder's
generation), draws the faithfulness curves of those explanations, and browses the
tables, curves and stored explanations of ``normxlogit bench`` results.

It needs the ``serve`` extra (``pip install 'normxlogit[serve]'``: FastAPI and uvicorn).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..common.errors import InvalidInputError, InvalidOptionError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def _need_server_libraries() -> None:
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise InvalidInputError(
            "the page needs FastAPI and uvicorn: pip install 'normxlogit[serve]'"
        ) from None


def build_app(
    models: Sequence[str | Path] = (),
    *,
    loaded: dict[str, Any] | None = None,
    bench: Sequence[str | Path] = (),
    data: Sequence[str | Path] = (),
    builtins: bool = True,
):
    """The FastAPI app (for tests, or to mount in your own server).

    Args:
        models: local model folders to offer besides the built-ins.
        loaded: already loaded models, ``{name: ExplainableModel}``.
        bench: bench configs (``CONFIG`` or ``CONFIG=STORE``) whose results to browse.
        data: example files (the formats ``normxlogit evaluate`` reads).
        builtins: offer the built-in models too.
    """
    _need_server_libraries()
    from .app import ServeSettings, create_app
    from .browse import BenchEntry
    from .models import ModelPool

    settings = ServeSettings(
        models=ModelPool.build(list(models), loaded, builtins=builtins),
        bench=[BenchEntry.parse(entry) for entry in bench],
        data=[Path(path) for path in data],
    )
    return create_app(settings)


def serve(
    models: Sequence[str | Path] = (),
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    loaded: dict[str, Any] | None = None,
    bench: Sequence[str | Path] = (),
    data: Sequence[str | Path] = (),
    open_browser: bool = False,
) -> None:
    """Run the page until interrupted (Ctrl-C). Listens on 127.0.0.1 unless told
    otherwise: anyone who reaches the port can run the models."""
    _check_port_free(host, port)
    app = build_app(models, loaded=loaded, bench=bench, data=data)
    import uvicorn

    url = f"http://{host}:{port}/"
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    print(f"normxlogit page on {url} (Ctrl-C stops it)", flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def _check_port_free(host: str, port: int) -> None:
    """Refuse a port another program listens on before saying where the page is."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise InvalidOptionError(f"--host {host}: {error.strerror}; pass an address") from None
    family, kind, protocol, _, address = infos[0]
    with socket.socket(family, kind, protocol) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as error:
            raise InvalidOptionError(
                f"cannot listen on {host}:{port}: {error.strerror}; pass another --port "
                "(or stop what uses it)"
            ) from None


__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "build_app", "serve"]
