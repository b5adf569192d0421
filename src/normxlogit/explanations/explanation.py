"""``Explanation``: token scores for one text, with what produced them.

Scores are ``[T]`` (one target), ``[T, K]`` (several targets or all labels), and gain a
leading layer axis ``[L, T]`` / ``[L, T, K]`` for per-layer methods. An explanation
renders in the terminal, to standalone HTML, to a tidy DataFrame and to JSON, and
round-trips through ``save``/``load``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd

from ..common.errors import InvalidInputError
from ..common.fields import (
    ARRAY,
    BOOLEANS,
    FINITE_NUMBER,
    INTEGERS,
    NONEMPTY_STRINGS,
    OBJECT,
    PROBABILITY_BY_NAME,
    STRING,
    STRING_BY_NAME,
    STRINGS,
    TEXT,
    WORD_IDS,
    check_token_ids,
    shown_value,
)
from ..common.outputs import checked_choice, lone_item, short_value
from ..common.saved_kinds import EVALUATION_LOADER, EXPLANATION_LOADER, other_loader_hint
from .base import ExplanationBase
from .segments import SegmentScores

AGGREGATIONS = {"sum": np.sum, "mean": np.mean, "max": np.max, "absmax": None}


#: what :meth:`Explanation.from_dict` needs, and what each field must hold
_REQUIRED = {"tokens": STRINGS, "scores": ARRAY, "label": STRING, "method": STRING}
_OPTIONAL = {
    "text": TEXT,
    "targets": NONEMPTY_STRINGS,
    "probs": PROBABILITY_BY_NAME,
    "settings": OBJECT,
    "layers": INTEGERS,
    "special": BOOLEANS,
    "word_ids": WORD_IDS,
    "diagnostics": OBJECT,
    "token_texts": STRINGS,
    "output_texts": STRING_BY_NAME,
    "model": STRING,
    "value": FINITE_NUMBER,
    "input_ids": ARRAY,
    "contrasts": STRINGS,
    "model_signature": STRING,
    "segments": OBJECT,
}


@dataclass
class Explanation(ExplanationBase):
    """Scores of every token of ``text`` for the ``targets`` (score columns)."""

    REQUIRED = _REQUIRED
    OPTIONAL = _OPTIONAL

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
    #: each token as text, what every view shows: `` Paris`` for ``ĠParis`` (see
    #: :class:`normxlogit.common.tokens.TokenTexts`); ``tokens`` keep the tokenizer's own pieces
    token_texts: list[str] = field(default_factory=list)
    #: display text of outputs that are vocabulary tokens (label, targets, probs keys)
    output_texts: dict[str, str] = field(default_factory=dict)
    #: the token ids explained, when they are not the text's own tokenisation (a step of a
    #: generation: the prompt and the tokens generated before it); evaluation reads them
    input_ids: list[int] | None = None
    #: a contrastive explanation's contrast per target ("why targets[k] rather than
    #: contrasts[k]": the scores explain the difference of the two outputs); empty otherwise
    contrasts: list[str] = field(default_factory=list)
    #: ``"<dtype>:<digest>"`` of the weights that made it
    #: (:meth:`~normxlogit.model.adapter.ExplainableModel.weights_signature`): evaluation
    #: refuses it with other weights at the same dtype; empty in files saved before it
    model_signature: str = ""
    #: the text's segments and their scores (``explain(..., segments=...)``); None without
    segments: SegmentScores | None = None

    def __post_init__(self) -> None:
        if self.contrasts and len(self.contrasts) != len(self.targets):
            raise InvalidInputError(
                f"inconsistent explanation: {len(self.targets)} targets but "
                f"{len(self.contrasts)} contrasts"
            )
        problem = _shape_problem(
            self.tokens,
            self.scores,
            self.targets,
            self.layers,
            self.special,
            self.word_ids,
            self.token_texts,
        )
        if problem:
            raise InvalidInputError(f"inconsistent explanation: {problem}")
        if not self.token_texts:
            from ..common.tokens import TokenTexts

            self.token_texts = TokenTexts.guess(self.tokens, self.special)

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

    def top_tokens(
        self, k: int = 5, target: int | str = 0, layer: int = -1
    ) -> list[tuple[str, float]]:
        """The ``k`` highest-scoring non-special tokens for one target (and layer), as text
        (``token_texts``: `` France``, not ``ĠFrance``; a token holding only part of a
        character gives that character). ``target``: a column index (0 .. K-1, or
        negative from the end) or a target's name; ``layer``: one of ``layers`` (or an
        index from the end, -1 the last)."""
        k = lone_item(k)  # np.array(3): the count held
        if isinstance(k, bool) or not isinstance(k, Integral) or k < 0:
            raise InvalidInputError(
                f"top_tokens() takes k, how many tokens, an int >= 0; got {_shown(k)}"
            )
        scores = self.scores_3d()
        column = scores[self._layer_position(layer, scores.shape[0]), :, self._column(target)]
        order = [i for i in np.argsort(-column) if not (self.special and self.special[i])]
        return [(self._piece_text(i), float(column[i])) for i in order[: int(k)]]

    def _column(self, target: object) -> int:
        """The score column of ``target``: a column index or a target's name (or text)."""
        count = self.scores_3d().shape[2]
        if isinstance(target, str):
            for names in (list(self.targets), self.target_texts, self.column_titles):
                if target in names:
                    return names.index(target)
        elif (
            isinstance(target, Integral)
            and not isinstance(target, bool)
            and -count <= int(target) < count
        ):
            return int(target)
        shown = ", ".join(repr(t) for t in self.targets[:10])
        raise InvalidInputError(
            f"target={_shown(target)} is not a target of this explanation; give a column "
            f"index (0 .. {count - 1}) or one of its targets: {shown}"
        )

    def _layer_position(self, layer: object, count: int) -> int:
        """The index along the layer axis of ``layer`` (see :func:`layer_position`)."""
        return layer_position(self.layers, layer, count)

    def _piece_text(self, position: int) -> str:
        """The token's text; for a token that only continues a character begun before it
        (``""`` in ``token_texts``), the text of the token that begins it."""
        while position > 0 and not self.token_texts[position]:
            position -= 1
        return self.token_texts[position]

    def text_of(self, output: str) -> str:
        """Display text of a label, target or ``probs`` key (`` Paris`` for ``ĠParis``)."""
        return self.output_texts.get(output, output)

    @property
    def label_text(self) -> str:
        """``label`` as text: the predicted token decoded for language models."""
        return self.text_of(self.label)

    @property
    def target_texts(self) -> list[str]:
        """``targets`` as text."""
        return [self.text_of(target) for target in self.targets]

    @property
    def is_contrastive(self) -> bool:
        return bool(self.contrasts)

    @property
    def contrast_is_target(self) -> bool:
        """Whether a target is contrasted with itself, which explains nothing (the
        difference of an output with itself is zero at every token): its scores are NaN
        and ``settings["contrast_is_target"]`` says so (one saved before they were holds
        zeros). ``evaluate`` leaves such an explanation out."""
        if self.settings.get("contrast_is_target") is True:  # a JSON true, not "false"
            return True
        return any(t == c for t, c in zip(self.targets, self.contrasts, strict=False))

    @property
    def column_titles(self) -> list[str]:
        """What each score column explains, as text: ``positive``, or ``positive vs
        negative`` for a contrastive explanation."""
        if not self.contrasts:
            return self.target_texts
        return [
            f"{self.text_of(target)} vs {self.text_of(contrast)}"
            for target, contrast in zip(self.targets, self.contrasts, strict=True)
        ]

    def __repr__(self) -> str:
        shape = "x".join(map(str, self.scores.shape))
        return (
            f"Explanation(method={self.method!r}, label={self.label!r}, tokens={len(self.tokens)}, "
            f"scores=[{shape}], targets={self.targets}"
            + (f", contrasts={self.contrasts})" if self.contrasts else ")")
        )

    # ------------------------------------------------------------ aggregation
    def aggregate_words(self, how: str = "sum") -> Explanation:
        """Merge subword scores into words (``sum``, ``mean``, ``max`` or ``absmax``)."""
        how = checked_choice(how, "aggregate", AGGREGATIONS)  # np.array("sum"): "sum"
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
            token_texts=[_join_pieces([self.token_texts[i] for i in g]) for g in groups],
            scores=shape_back,
            special=[bool(self.special and self.special[g[0]]) for g in groups],
            word_ids=[self.word_ids[g[0]] for g in groups],
            settings={**self.settings, "aggregate": how},
            segments=None
            if self.segments is None
            else replace(
                self.segments,
                token_segments=[self.segments.token_segments[g[0]] for g in groups],
            ),
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
            "token_texts": self.token_texts,
            "output_texts": self.output_texts,
            **({"input_ids": self.input_ids} if self.input_ids is not None else {}),
            **({"contrasts": self.contrasts} if self.contrasts else {}),
            **({"model_signature": self.model_signature} if self.model_signature else {}),
            **({"segments": self.segments.to_dict()} if self.segments is not None else {}),
        }

    @classmethod
    def _missing(cls, missing: list[str], data: dict[str, Any]) -> str:
        hint = other_loader_hint(data, EXPLANATION_LOADER)
        if not hint and "protocol" in data:  # an evaluation result missing other keys
            hint = f"; it looks like an evaluation result: use {EVALUATION_LOADER}"
        return (
            f"not a normxlogit explanation: no {', '.join(repr(k) for k in missing)} "
            f"(keys found: {', '.join(map(str, data)) or 'none'}){hint}"
        )

    @classmethod
    def _from_checked(cls, data: dict[str, Any], scores: np.ndarray) -> Explanation:
        flag = (data.get("settings") or {}).get("contrast_is_target")
        if flag is not None and not isinstance(flag, bool):
            raise InvalidInputError(
                f"settings.contrast_is_target must be true or false, not {flag!r}"
            )
        _check_answer_ids(data.get("settings") or {})
        _check_contrasts_recorded(data)
        _check_label_recorded(data)
        text = data.get("text", "")
        explanation = cls(
            text=tuple(text) if isinstance(text, list) else text,
            tokens=list(data["tokens"]),
            scores=scores,
            targets=list(data.get("targets") or [data["label"]]),
            label=data["label"],
            probs=dict(data.get("probs") or {}),
            method=data["method"],
            settings=dict(data.get("settings") or {}),
            layers=data.get("layers"),
            special=list(data.get("special") or []),
            word_ids=list(data.get("word_ids") or []),
            model=data.get("model") or "",
            value=data.get("value"),
            diagnostics=dict(data.get("diagnostics") or {}),
            token_texts=list(data.get("token_texts") or []),
            output_texts=dict(data.get("output_texts") or {}),
            input_ids=_input_ids(data.get("input_ids"), len(data["tokens"])),
            contrasts=list(data.get("contrasts") or []),
            model_signature=data.get("model_signature") or "",
        )
        _check_targets_recorded(data)  # after the shapes: a count that does not fit says so
        if data.get("segments") is not None:  # fits the token scores, checked first
            axis = 1 if explanation.has_layers else 0
            explanation.segments = SegmentScores.from_dict(data["segments"], scores, axis)
        return explanation

    def to_frame(self) -> pd.DataFrame:
        """Tidy scores: one row per (layer,) token and target."""
        scores = self.scores_3d()
        layers = self.layers if self.has_layers else [None]
        records = [
            {
                "layer": layer,
                "position": position,
                "token": token,
                "text": text,
                "special": bool(self.special[position]) if self.special else False,
                **(
                    {"segment": self.segments.token_segments[position]}
                    if self.segments is not None
                    else {}
                ),
                "target": target,
                **({"contrast": self.contrasts[ti]} if self.contrasts else {}),
                "score": float(scores[li, position, ti]),
            }
            for li, layer in enumerate(layers)
            for position, (token, text) in enumerate(
                zip(self.tokens, self.token_texts, strict=True)
            )
            for ti, target in enumerate(self.targets)
        ]
        frame = pd.DataFrame.from_records(records)
        return self._finish_frame(frame, self.has_layers, label=self.label)

    def segments_frame(self) -> pd.DataFrame:
        """Tidy segment scores: one row per (layer,) segment and target."""
        if self.segments is None:
            raise InvalidInputError(
                "this explanation has no segments; explain with segments='sentences' or a "
                "list of the text's segments"
            )
        scores = self.segments.scores if self.has_layers else self.segments.scores[None]
        if not self.has_targets_axis:
            scores = scores[..., None]
        layers = self.layers if self.has_layers else [None]
        records = [
            {
                "layer": layer,
                "segment": index,
                "text": text,
                "target": target,
                **({"contrast": self.contrasts[ti]} if self.contrasts else {}),
                "score": float(scores[li, index, ti]),
                "reduction": self.segments.how,
            }
            for li, layer in enumerate(layers)
            for index, text in enumerate(self.segments.texts)
            for ti, target in enumerate(self.targets)
        ]
        frame = pd.DataFrame.from_records(records)
        return self._finish_frame(frame, self.has_layers, label=self.label)

    def to_html(self) -> str:
        from ..render.html import render_html

        return render_html([self])

    def __rich_console__(self, console, options):
        from ..render.terminal import render_rich

        yield from render_rich(self)


def layer_position(layers: Sequence[int] | None, layer: object, count: int) -> int:
    """The index along a layer axis of ``count`` of ``layer``: one of ``layers``, or an
    index from the end (-1 the last; 0 and -1 without layers); anything else (another
    layer, a text, None) refused in one line naming the layers there are."""
    layer = lone_item(layer)  # np.array(1): the layer held
    if isinstance(layer, Integral) and not isinstance(layer, bool):
        layer = int(layer)
        if layers and layer in layers:
            return list(layers).index(layer)
        if -count <= layer < 0 or (not layers and layer == 0):
            return layer
    what = (
        f"one of its layers {list(layers)}, or -1 for the last"
        if layers
        else "-1 (the default: it has no layers)"
    )
    raise InvalidInputError(
        f"layer={_shown(layer)} is not a layer of this explanation; give {what}"
    )


def _shown(value: object) -> str:
    """An int or a text as it is written (``5``, ``'positive'``), anything else with its
    type."""
    if value is None or (isinstance(value, (int, str)) and not isinstance(value, bool)):
        return short_value(value)  # 10**400 by its count of digits
    return shown_value(value)


def _check_contrasts_recorded(data: dict[str, Any]) -> None:
    """A file's ``contrasts`` (what the scores explain the targets against) agree with the
    contrast its ``settings`` record: read without them, a contrastive explanation would
    be scored as a plain one, while its settings still say contrastive."""
    said = (data.get("settings") or {}).get("contrast")
    said = [] if said is None else said if isinstance(said, list) else [said]
    _check_recorded(
        "contrasts", data.get("contrasts") or [], "contrast", said, "against its contrast"
    )


def _check_targets_recorded(data: dict[str, Any]) -> None:
    """A file's ``targets`` (what each score column explains) in the order its
    ``settings.target`` records them: reordered by hand, every column would be read under
    another target's name with nothing said. A settings value that is no list (older
    files) is not compared."""
    said = (data.get("settings") or {}).get("target")
    stored = data.get("targets")
    if isinstance(said, list) and isinstance(stored, list):
        _check_recorded("targets", stored, "target", said, "in its score column, by position")


def _check_recorded(field: str, stored: list, setting: str, said: list, how: str) -> None:
    """``stored`` (the file's ``field``) as ``settings.<setting>`` records it (``said``);
    ``how``: how the scores depend on it, for the refusal."""
    if [str(item) for item in said] != [str(item) for item in stored]:
        raise InvalidInputError(
            f"{field} is {stored!r:.120}, but settings.{setting} records {said!r:.120}: the "
            f"scores explain each target {how}, so the two must agree; restore the file as "
            "saved, or explain the text again"
        )


def _check_label_recorded(data: dict[str, Any]) -> None:
    """A file's ``label`` (the model's prediction) among the outputs ``probs`` records,
    where it records some: the prediction is the most probable of them, so an edited
    label would be shown as a prediction the model never made."""
    probs = data.get("probs")
    if isinstance(probs, dict) and probs and data["label"] not in probs:
        shown = ", ".join(map(repr, list(probs)[:5])) + (", ..." if len(probs) > 5 else "")
        raise InvalidInputError(
            f"label {data['label']!r:.60} is none of the outputs probs records ({shown}): "
            "the label is the model's prediction, the most probable of them; restore the "
            "file as saved, or explain the text again"
        )


def _check_answer_ids(settings: dict[str, Any]) -> None:
    """A whole answer's token ids (``settings.answer_ids``, what evaluation scores) as
    explain wrote them; an edited file's would fail in the model, or give the
    log-probability of no answer. Their range needs the model: evaluation checks it."""
    if "answer_ids" not in settings:
        if "generated_by_model" in settings:  # written with answer_ids, for answers only
            raise InvalidInputError(
                "'settings.answer_ids' is missing, yet 'settings.generated_by_model' says this "
                "explains a whole answer, whose token ids evaluation scores"
            )
        return
    ids = settings["answer_ids"]
    if (
        not isinstance(ids, list)
        or not ids
        or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 2**63 for i in ids)
    ):
        raise InvalidInputError(
            f"'settings.answer_ids' is {ids!r:.40}; it holds the answer's token ids, a "
            "non-empty list of whole numbers from 0 (below 2**63)"
        )


def _input_ids(value: Any, tokens: int) -> list[int] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in value
    ):
        raise InvalidInputError("'input_ids' must be a list of token ids")
    check_token_ids(value, "input_ids")  # past 64 bits: the tokenizer fails on them
    if len(value) != tokens:
        raise InvalidInputError(f"{tokens} tokens but {len(value)} 'input_ids'")
    return list(value)


def _shape_problem(
    tokens: Sequence[str],
    scores: np.ndarray,
    targets: Sequence[str],
    layers: Sequence[int] | None,
    special: Sequence[bool],
    word_ids: Sequence[int | None],
    token_texts: Sequence[str],
) -> str | None:
    """What does not fit between the tokens, targets, layers and the scores' shape."""
    shape = list(np.shape(scores))
    expected = (
        "[layers, tokens] or [layers, tokens, targets]"
        if layers is not None
        else ("[tokens] or [tokens, targets]")
    )
    if len(shape) not in ((2, 3) if layers is not None else (1, 2)):
        return f"scores of shape {shape} are not {expected}"
    if layers is not None and shape[0] != len(layers):
        return f"{len(layers)} layers but scores of shape {shape} have {shape[0]} on the layer axis"
    axis = 1 if layers is not None else 0
    if shape[axis] != len(tokens):
        return (
            f"{len(tokens)} tokens but scores of shape {shape} have {shape[axis]} on the token axis"
        )
    columns = shape[-1] if len(shape) == axis + 2 else 1
    if columns != len(targets):
        return f"{len(targets)} targets but scores of shape {shape} have {columns} score columns"
    for name, values in (
        ("special", special),
        ("word_ids", word_ids),
        ("token_texts", token_texts),
    ):
        if values and len(values) != len(tokens):
            return f"{len(tokens)} tokens but {len(values)} entries in {name!r}"
    return None


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
