"""``Explanation``: token scores for one text, with what produced them.

Scores are ``[T]`` (one target), ``[T, K]`` (several targets or all labels), and gain a
leading layer axis ``[L, T]`` / ``[L, T, K]`` for per-layer methods. An explanation
renders in the terminal, to standalone HTML, to a tidy DataFrame and to JSON, and
round-trips through ``save``/``load``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import InvalidInputError

AGGREGATIONS = {"sum": np.sum, "mean": np.mean, "max": np.max, "absmax": None}


@dataclass
class Explanation:
    """Scores of every token of ``text`` for the ``targets`` (score columns)."""

    text: str | tuple[str, str]
    tokens: list[str]
    scores: np.ndarray
    targets: list[str]
    label: str
    probs: dict[str, float]
    method: str
    settings: dict[str, Any] = field(default_factory=dict)
    layers: list[int] | None = None
    special: list[bool] = field(default_factory=list)
    word_ids: list[int | None] = field(default_factory=list)
    model: str = ""
    value: float | None = None
    #: per-target numbers a method reports about itself, e.g. IG's ``convergence_delta``
    diagnostics: dict[str, list[float]] = field(default_factory=dict)

    # ------------------------------------------------------------------ views
    @property
    def has_layers(self) -> bool:
        return self.layers is not None

    @property
    def has_targets_axis(self) -> bool:
        return self.scores.ndim == (3 if self.has_layers else 2)

    def scores_3d(self) -> np.ndarray:
        """Scores as ``[L, T, K]`` whatever their stored shape (L = 1 without layers)."""
        scores = self.scores if self.has_layers else self.scores[None]
        return scores if self.has_targets_axis else scores[..., None]

    def top_tokens(self, k: int = 5, target: int = 0, layer: int = -1) -> list[tuple[str, float]]:
        """The ``k`` highest-scoring non-special tokens for one target (and layer)."""
        column = self.scores_3d()[layer, :, target]
        order = [i for i in np.argsort(-column) if not (self.special and self.special[i])]
        return [(self.tokens[i], float(column[i])) for i in order[:k]]

    def __repr__(self) -> str:
        shape = "x".join(map(str, self.scores.shape))
        return (
            f"Explanation(method={self.method!r}, label={self.label!r}, tokens={len(self.tokens)}, "
            f"scores=[{shape}], targets={self.targets})"
        )

    # ------------------------------------------------------------ aggregation
    def aggregate_words(self, how: str = "sum") -> Explanation:
        """Merge subword scores into words (``sum``, ``mean``, ``max`` or ``absmax``)."""
        if how not in AGGREGATIONS:
            raise InvalidInputError(f"aggregate={how!r} is not one of: {', '.join(AGGREGATIONS)}")
        if not self.word_ids or len(self.word_ids) != len(self.tokens):
            raise InvalidInputError(
                "word aggregation needs word ids, which only fast tokenizers provide"
            )
        groups: list[list[int]] = []
        previous: int | None = None
        for index, word in enumerate(self.word_ids):
            if word is None or word != previous or not groups:
                groups.append([index])
            else:
                groups[-1].append(index)
            previous = word
        scores = self.scores_3d()
        merged = np.stack([_reduce(scores[:, g, :], how) for g in groups], axis=1)
        shape_back = merged if self.has_layers else merged[0]
        if not self.has_targets_axis:
            shape_back = shape_back[..., 0]
        return replace(
            self,
            tokens=[_join_pieces([self.tokens[i] for i in g]) for g in groups],
            scores=shape_back,
            special=[bool(self.special and self.special[g[0]]) for g in groups],
            word_ids=[self.word_ids[g[0]] for g in groups],
            settings={**self.settings, "aggregate": how},
        )

    # --------------------------------------------------------------- exports
    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "scores": self.scores.tolist(),
            "label": self.label,
            "probs": self.probs,
            "method": self.method,
            "settings": self.settings,
            "targets": self.targets,
            "layers": self.layers,
            "text": list(self.text) if isinstance(self.text, tuple) else self.text,
            "special": self.special,
            "word_ids": self.word_ids,
            "model": self.model,
            "value": self.value,
            "diagnostics": self.diagnostics,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Explanation:
        text = data.get("text", "")
        return cls(
            text=tuple(text) if isinstance(text, list) else text,
            tokens=list(data["tokens"]),
            scores=np.asarray(data["scores"], dtype=np.float32),
            targets=list(data.get("targets") or [data["label"]]),
            label=data["label"],
            probs=dict(data.get("probs") or {}),
            method=data["method"],
            settings=dict(data.get("settings") or {}),
            layers=data.get("layers"),
            special=list(data.get("special") or []),
            word_ids=list(data.get("word_ids") or []),
            model=data.get("model", ""),
            value=data.get("value"),
            diagnostics=dict(data.get("diagnostics") or {}),
        )

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_frame(self) -> pd.DataFrame:
        """Tidy scores: one row per (layer,) token and target."""
        scores = self.scores_3d()
        layers = self.layers if self.has_layers else [None]
        records = [
            {
                "layer": layer,
                "position": position,
                "token": token,
                "special": bool(self.special[position]) if self.special else False,
                "target": target,
                "score": float(scores[li, position, ti]),
            }
            for li, layer in enumerate(layers)
            for position, token in enumerate(self.tokens)
            for ti, target in enumerate(self.targets)
        ]
        frame = pd.DataFrame.from_records(records)
        if not self.has_layers:
            frame = frame.drop(columns="layer")
        return frame.assign(method=self.method, label=self.label, model=self.model)

    def to_html(self) -> str:
        from .render.html import render_html

        return render_html([self])

    def __rich_console__(self, console, options):
        from .render.terminal import render_rich

        yield from render_rich(self)

    def save(self, path: str | os.PathLike) -> Path:
        return save_explanations([self], path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Explanation:
        explanations = load_explanations(path)
        if len(explanations) != 1:
            raise InvalidInputError(
                f"{path} holds {len(explanations)} explanations; use load_explanations"
            )
        return explanations[0]


def _reduce(block: np.ndarray, how: str) -> np.ndarray:
    """Reduce ``[L, n, K]`` over the pieces axis."""
    if how == "absmax":
        picks = np.abs(block).argmax(axis=1, keepdims=True)
        return np.take_along_axis(block, picks, axis=1)[:, 0]
    return AGGREGATIONS[how](block, axis=1)


def _join_pieces(pieces: Sequence[str]) -> str:
    """Readable word from subword pieces of WordPiece, BPE or SentencePiece tokenizers."""
    text = "".join(
        piece[2:] if i and piece.startswith("##") else piece for i, piece in enumerate(pieces)
    )
    return text


def write_atomically(path: str | os.PathLike, content: str) -> Path:
    """Write a whole file or nothing: a temporary file renamed into place."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(content)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes it private; give normal rights
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def save_explanations(explanations: Sequence[Explanation], path: str | os.PathLike) -> Path:
    """Save to JSON (one object for one explanation, else a list)."""
    data = [e.to_dict() for e in explanations]
    return write_atomically(path, json.dumps(data[0] if len(data) == 1 else data))


def load_explanations(path: str | os.PathLike) -> list[Explanation]:
    """Explanations saved by :func:`save_explanations` or :meth:`Explanation.save`."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise InvalidInputError(f"cannot read explanations from {path}: {error}") from None
    items = data if isinstance(data, list) else [data]
    return [Explanation.from_dict(item) for item in items]
