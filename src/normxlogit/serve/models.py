"""The models the page may use: built-in names and what the command line named.

The page picks a model by its name in this list and nothing else, so a request can
never make the server read a path of its choosing. Models load on first use (in a job,
with progress shown on the page) and stay loaded.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..common.errors import InvalidInputError, UnknownModelError


@dataclass(frozen=True)
class ModelEntry:
    """A model the page offers: its name on the page, and what :func:`normxlogit.load`
    is given (a built-in name or a local folder), or an already loaded model."""

    name: str
    source: str | Any
    description: str = ""


class ModelPool:
    """Model entries by name, loaded once each (two requests for a model still loading
    wait for the same load)."""

    def __init__(self, entries: list[ModelEntry]):
        if not entries:
            raise InvalidInputError("the page needs at least one model")
        self.entries = {entry.name: entry for entry in entries}
        self._loaded: dict[str, Any] = {}
        self._locks = {entry.name: threading.Lock() for entry in entries}

    @classmethod
    def build(
        cls, paths: list[str | Path] = (), models: dict[str, Any] | None = None, builtins=True
    ) -> ModelPool:
        """Built-ins (unless ``builtins=False``), then local folders, then loaded models
        (``{name: ExplainableModel}``)."""
        from ..builtin import BUILTIN_MODELS

        entries = []
        if builtins:
            entries += [ModelEntry(m.name, m.name, m.description) for m in BUILTIN_MODELS.values()]
        taken = {entry.name for entry in entries}
        for path in paths:
            folder = Path(path).expanduser()
            if not folder.exists() and str(path) in BUILTIN_MODELS:
                # a built-in name loads as `explain --model` loads it (offered once)
                if str(path) not in taken:
                    builtin = BUILTIN_MODELS[str(path)]
                    entries.append(ModelEntry(builtin.name, builtin.name, builtin.description))
                    taken.add(builtin.name)
                continue
            if not folder.exists():
                from ..common.input_paths import blank_edge_hint, shown_name

                raise UnknownModelError(
                    f"model folder {shown_name(folder)} does not exist"
                    f"{blank_edge_hint(folder)}; --model takes a local model "
                    "folder or a built-in name (`normxlogit models` lists them; the page "
                    "offers them already)"
                )
            name = folder.name
            while name in taken:
                name = f"{name}'"
            taken.add(name)
            entries.append(ModelEntry(name, str(folder.resolve()), f"local folder {folder}"))
        for name, model in (models or {}).items():
            if name in taken:
                raise InvalidInputError(f"two models are named {name!r}")
            taken.add(name)
            entries.append(ModelEntry(name, model, "loaded in this process"))
        return cls(entries)

    def names(self) -> list[str]:
        return list(self.entries)

    def is_loaded(self, name: str) -> bool:
        return name in self._loaded

    def entry(self, name: str) -> ModelEntry:
        if name not in self.entries:
            raise UnknownModelError(
                f"no model {name!r} on this page; choose one of {', '.join(self.entries)} (start "
                "`normxlogit serve --model FOLDER` to add a local one)"
            )
        return self.entries[name]

    def get(self, name: str) -> Any:
        """The loaded model (loading it the first time)."""
        entry = self.entry(name)
        with self._locks[name]:
            if name not in self._loaded:
                if isinstance(entry.source, str):
                    from ..loading import load

                    self._loaded[name] = load(entry.source)
                else:
                    self._loaded[name] = entry.source
            return self._loaded[name]
