"""Turning texts into a padded batch that gives the same numbers whatever the padding.

Validation lives here too: empty texts are refused, long texts are truncated with a
warning that says how many tokens were dropped.
"""

from __future__ import annotations

import math
import numbers
import unicodedata
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import Tensor

from ..common.columns import PAIR_COLUMNS
from ..common.errors import InvalidInputError, NormXLogitWarning, refuse_surrogate
from ..common.numbering import text_name
from ..common.outputs import short_value, type_phrase
from ..common.tokens import TokenTexts
from ..common.words import word_at, word_spans
from .families import Family, Reading
from .tasks import Task, TaskKind

TextInput = str | tuple[str, str]


def nothing_read(what: str) -> str:
    """The refusal of a text (or a prompt before its answer) that a segment method's
    rendering leaves with no token at all: every segment removed and nothing around them
    (no BOS token, no chat template), so there is nothing for the model to read."""
    return (
        f"{what} is read as no token at all; keep some text the model reads (removing "
        "every segment of a text without a prompt around it leaves nothing: add a question "
        "or an instruction outside the segments)"
    )


@dataclass
class Batch:
    """Tokenised, padded inputs and where the head reads each row.

    Tensors are ``[B, T]`` (``reading_positions`` is ``[B]``) in padded coordinates.
    """

    texts: list[TextInput]
    input_ids: Tensor
    attention_mask: Tensor
    special_tokens_mask: Tensor
    reading_positions: Tensor
    token_type_ids: Tensor | None = None
    position_ids: Tensor | None = None
    dropped: tuple[int, ...] = ()
    word_ids: list[list[int | None]] | None = None  # per real token; None for special tokens

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def model_inputs(self) -> dict[str, Tensor]:
        """Keyword arguments for the backbone's forward."""
        inputs = {"input_ids": self.input_ids, "attention_mask": self.attention_mask}
        if self.token_type_ids is not None:
            inputs["token_type_ids"] = self.token_type_ids
        if self.position_ids is not None:
            inputs["position_ids"] = self.position_ids
        return inputs

    def to(self, device: torch.device) -> Batch:
        """The same batch with its tensors on ``device``."""
        moved = {
            name: value.to(device)
            for name, value in vars(self).items()
            if isinstance(value, Tensor) and value.device != device
        }
        return replace(self, **moved) if moved else self

    def real_positions(self, row: int) -> Tensor:
        """Padded indices of the row's real (non-padding) tokens, in order."""
        return self.attention_mask[row].nonzero().squeeze(-1)


def _numbers(texts: Sequence[TextInput], first_index: int | Sequence[int]) -> Sequence[int]:
    """Each text's number in messages: counted from ``first_index``, or given."""
    if isinstance(first_index, int):
        return range(first_index, first_index + len(texts))
    return first_index


ACCEPTED = "a str, a (str, str) pair for sentence pairs, or a list of those"


def check_texts(
    texts: TextInput | Sequence[TextInput], what: str = "texts"
) -> tuple[list[TextInput], bool]:
    """A list of validated texts, and whether a single text was given.

    Texts are ``str``, ``(str, str)`` pairs, or a list (any iterable) of those; anything
    else is refused with the types accepted, before any work starts (``what``: the
    argument, "texts" or "prompts", that a 0-d array's refusal names).
    """
    single = isinstance(texts, str) or (
        isinstance(texts, tuple)
        and len(texts) == 2
        and not any(isinstance(t, (tuple, list)) for t in texts)
    )
    if isinstance(texts, tuple) and not single and all(isinstance(t, str) for t in texts):
        raise InvalidInputError(
            f"a tuple of {len(texts)} strings: a tuple is one sentence pair (two strings); "
            "pass several texts as a list"
        )
    if not single:
        _check_container(texts, what)
    items = [texts] if single else [_held_text(item) for item in texts]
    if not items:
        raise InvalidInputError(f"no texts given; pass {ACCEPTED}")
    for index, item in enumerate(items):
        where = "the text" if single else text_name(index)
        if isinstance(item, tuple) and len(item) != 2:
            raise InvalidInputError(
                f"{where} is a tuple of {len(item)}; a sentence pair is a tuple of two "
                f"strings. Pass {ACCEPTED}"
            )
        parts = item if isinstance(item, tuple) else (item,)
        for which, part in enumerate(parts):
            if isinstance(part, str):
                continue
            hint = _type_hint(part)
            if isinstance(item, tuple):
                role = f"the {('first', 'second')[which]} text of the pair"
                where = role if single else f"{where}: {role}"
            raise InvalidInputError(f"{where} is {type_phrase(part)}; pass {ACCEPTED}{hint}")
        if any(not part.strip() for part in parts):
            where = "" if single else f" ({text_name(index)})"
            raise InvalidInputError(f"empty or whitespace-only text{where}; give some words")
        _refuse_surrogates(parts, "the text" if single else text_name(index))
    return items, single


def _held_text(item: object) -> object:
    """A list's item as its text where it is a 0-d array holding one (``[np.array("a
    film")]``, as per-text lists read 0-d values); any other item as it is."""
    if getattr(item, "ndim", None) == 0 and hasattr(item, "item"):
        try:
            held = item.item()
        except (TypeError, ValueError):
            return item
        if isinstance(held, str):
            return held
    return item


def _type_hint(part: object) -> str:
    """The fix for the usual non-text values: bytes to decode, or pandas' missing cell."""
    if getattr(part, "ndim", None) == 0 and hasattr(part, "item"):
        try:
            held = part.item()
        except (TypeError, ValueError):
            return ""
        shown = "None" if held is None else f"{type_phrase(held)} {held!r:.40}"
        if isinstance(held, (bytes, bytearray)):
            return f" (a 0-d array holding {shown}: decode it first, .item().decode('utf-8'))"
        return f" (a 0-d array holding {shown}, which is no text)"
    if isinstance(part, bytes):
        return " (decode bytes first: data.decode('utf-8'))"
    if isinstance(part, float) and math.isnan(part):
        return " (NaN, a missing cell: drop or fill those rows first, e.g. series.dropna())"
    return ""


def _refuse_surrogates(parts: tuple[str, ...], where: str) -> None:
    """No part of a text holds a lone surrogate, which no tokenizer encodes."""
    for which, part in enumerate(parts):
        role = (
            f"{where}: the {('first', 'second')[which]} text of the pair"
            if len(parts) > 1
            else where
        )
        refuse_surrogate(part, role)


#: column names that hold texts, for the DataFrame advice (data.TEXT_COLUMNS and prompts)
_TEXT_COLUMN_NAMES = ("text", "sentence", "prompt", "review", "content", "question", "texts")


def _text_column(frame: Any) -> Any:
    """The column of ``frame`` (a DataFrame) that most likely holds its texts, as it is
    named (an int stays an int: ``df[0]``): one named as texts are ("text", "prompt"),
    else the first whose first value is a str; None for none."""
    columns = list(frame.columns)
    named = next(
        (c for c in columns if isinstance(c, str) and c.strip().lower() in _TEXT_COLUMN_NAMES),
        None,
    )
    if named is not None:
        return named
    for column in columns:
        try:
            values = frame[column].dropna()
            if len(values) and isinstance(values.iloc[0], str):
                return column
        except Exception:  # noqa: BLE001 - a duplicated name, an odd frame: only advice
            continue
    return None


def _frame_advice(frame: Any) -> str:
    """How to pass a DataFrame's texts: both columns of a sentence pair zipped (a
    question alone would drop its sentence), else its column of texts; where it has none
    (labels and scores only), a list of strings without naming a column."""
    names = {c.strip().lower(): c for c in frame.columns if isinstance(c, str)}
    for first, second in PAIR_COLUMNS:
        if first in names and second in names:
            return (
                "give each pair as a tuple, in a list (e.g. "
                f"list(zip(df[{names[first]!r}], df[{names[second]!r}])))"
            )
    column = _text_column(frame)
    if column is None:
        shown = ", ".join(str(c) for c in list(frame.columns)[:6]) or "none"
        return f"give the texts as a list of strings (no column of this frame holds texts: {shown})"
    return f"give the column of texts as a list (e.g. list(df[{column!r}]))"


def _check_container(texts: object, what: str = "texts") -> None:
    """Refuse what is neither a text nor a collection of texts (None, numbers, bytes...);
    ``what`` names the argument ("texts", "prompts")."""
    if getattr(texts, "ndim", None) == 0:  # np.array("a film"): iterating it fails
        held = texts.item() if hasattr(texts, "item") else None
        if isinstance(held, (bytes, bytearray)):  # .item() alone gives bytes, refused too
            fix = f"e.g. {what}.item().decode('utf-8')"
        elif isinstance(held, str):
            fix = f"e.g. {what}.item()"
        else:  # np.array(None, dtype=object): .item() gives what is no text either
            shown = "None" if held is None else f"{type_phrase(held)} {held!r:.40}"
            fix = f"it holds {shown}, which is no text"
        kind = type(texts).__name__
        said = (
            f"a 0-d {'tensor' if kind == 'Tensor' else 'array'}"
            if kind in ("ndarray", "Tensor")
            else f"a NumPy scalar ({kind})"  # np.bytes_(b"x"), np.str_ is a str
        )
        raise InvalidInputError(f"{what} are {said} ({texts!r:.60}); pass {ACCEPTED} ({fix})")
    if isinstance(texts, (bytes, bytearray)):
        raise InvalidInputError(
            f"texts are bytes; pass {ACCEPTED}: decode the bytes first (data.decode('utf-8'))"
        )
    if type(texts).__name__ == "DataFrame" and hasattr(texts, "columns"):
        raise InvalidInputError(
            f"texts are a pandas DataFrame; {_frame_advice(texts)}: a DataFrame is read by "
            "its column names"
        )
    if isinstance(texts, Mapping) or not isinstance(texts, Iterable):
        raise InvalidInputError(f"texts must be {ACCEPTED}; got {type_phrase(texts)}")


def max_input_length(model, tokenizer, offset: int) -> int:
    """The most tokens the model reads: the tokenizer's limit, else the position table;
    the smaller of the two where the model has a learned position table (a tokenizer
    borrowed from a larger model would index past it). Rotary and other relative
    positions have no table, so their config's positions are a soft limit, not applied."""
    limit = getattr(tokenizer, "model_max_length", None)
    positions = position_limit(model, offset)
    if limit and limit < 1_000_000:
        if positions is not None and has_position_table(model):
            return min(int(limit), positions)
        return int(limit)
    return positions or 512


def has_position_table(model) -> bool:
    """Whether the model looks positions up in a learned table (BERT's
    ``position_embeddings``, GPT-2's ``wpe``, OPT's ``embed_positions``): an embedding
    module named for positions."""
    return any(
        isinstance(module, torch.nn.Embedding) and ("position" in name or name.endswith("wpe"))
        for name, module in model.named_modules()
    )


def position_limit(model, offset: int) -> int | None:
    """The positions the model's config declares (less the ``offset`` some families
    start at), or None where it declares none."""
    config = model.config
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        if value := getattr(config, key, None):
            return int(value) - offset
    return None


def checked_max_length(value: Any, limit: int | None = None, name: str = "the model") -> int | None:
    """``load``'s ``max_length``: None (the model's limit), or a whole number from 1 up to
    ``limit`` (the positions ``name`` reads, where known); anything else refused in one
    line naming the range. NumPy integers are taken as ints."""
    if value is None:
        return None
    allowed = f"1 to {limit}" if limit is not None else "a whole number from 1"
    fix = f"give {allowed}, or leave it out (the model's limit)"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInputError(
            f"max_length={value!r:.40} is {type_phrase(value)}, not a number of tokens; {fix}"
        )
    if value < 1:
        raise InvalidInputError(f"max_length={value} reads no tokens; {fix}")
    if limit is not None and value > limit:
        raise InvalidInputError(
            f"max_length={value} is past the {limit} positions {name} reads; {fix}"
        )
    return int(value)


def special_count(tokenizer, pair: bool = False) -> int:
    """The special tokens ``tokenizer`` adds around one text (or a pair): [CLS] and [SEP]
    on BERT, 3 for a pair; 0 where it cannot say."""
    count = getattr(tokenizer, "num_special_tokens_to_add", None)
    try:
        return int(count(pair=pair)) if count is not None else 0
    except Exception:  # a tokenizer that cannot count them: nothing refused on its account
        return 0


def check_room(tokenizer, max_length: int, limit: int | None, name: str) -> None:
    """A ``max_length`` that leaves no token of a text once the tokenizer's special
    tokens are added, refused at load with the smallest usable value: the tokenizer
    cannot truncate below its special tokens (it reads the whole text), and at their count
    it keeps none of the text."""
    specials = special_count(tokenizer)
    if max_length > specials:
        return
    pair = special_count(tokenizer, pair=True)
    least = specials + 1
    allowed = f"{least} to {limit}" if limit is not None else f"at least {least}"
    raise InvalidInputError(
        f"max_length={max_length} leaves no room for the text: {name} adds {specials} special "
        f"tokens around one text ({pair} around a pair); give {allowed}, or leave it out "
        "(the model's limit)"
    )


def check_prompt_room(tokenizer, prompt, max_length: int, name: str) -> None:
    """A ``max_length`` at or below a chat prompt's own length, refused at load: the text
    is truncated and the prompt never is, so every input would run past ``max_length``
    (at least one token of each text is kept)."""
    word = "a"
    text = (word, word) if prompt.takes_pairs else word
    least = len(tokenizer(prompt.render(tokenizer, text), add_special_tokens=False)["input_ids"])
    if max_length >= least:
        return
    raise InvalidInputError(
        f"max_length={max_length} leaves no room for the text: {name}'s chat prompt comes to "
        f"{least} tokens around a one-token text, and the prompt is never truncated; give at "
        "least that many, or leave it out (the model's limit)"
    )


def glues_pairs(tokenizer) -> bool:
    """Whether ``tokenizer`` reads a pair as its two texts glued together, nothing between
    them (GPT-2's and most decoders' tokenizers: no pair template). Adding no more special
    tokens around a pair than around one text leaves nothing between the two texts; a
    tokenizer that cannot count them is not suspected."""
    if getattr(tokenizer, "num_special_tokens_to_add", None) is None:
        return False
    try:
        single = int(tokenizer.num_special_tokens_to_add(pair=False))
        pair = int(tokenizer.num_special_tokens_to_add(pair=True))
    except Exception:  # a tokenizer that cannot count them: nothing said on its account
        return False
    return pair <= single


def glued_pairs_warning(tokenizer) -> str:
    """What a pair read by a tokenizer with no pair template is warned of, and how to set
    one (as the built-in decoder classifiers do: their end token between the texts)."""
    separator = tokenizer.sep_token or tokenizer.eos_token
    example = f'"first {separator} second"' if separator else "a separator the model knows"
    name = getattr(tokenizer, "name_or_path", "")
    whose = f"the tokenizer of {name}" if name else "this model's tokenizer"
    return (
        f"{whose} has no pair template: the two texts of a pair are read glued "
        "together, nothing between them (the end of the first runs into the start of the "
        "second); if the model was trained with a separator between them, join each pair "
        f"into one text with it, e.g. {example}, or give the tokenizer a pair template "
        "(tokenizers' TemplateProcessing) and save it with tokenizer.save_pretrained"
    )


class Encoder:
    """Tokenises texts for one model, task and family."""

    def __init__(
        self, tokenizer, family: Family, task: Task, max_length: int, position_offset: int = 0
    ):
        self.tokenizer = tokenizer
        self.position_offset = position_offset
        self.family = family
        self.task = task
        self.max_length = max_length
        self.texts = TokenTexts(tokenizer)
        self.quiet = False  # no truncation warning: load's own verification text
        self._glues_pairs: bool | None = None  # asked of the tokenizer at the first pair

    def _warn_dropped(self, index: int, total: int, excess: int) -> None:
        if self.quiet:
            return
        warnings.warn(
            f"{text_name(index)} has {total} tokens but the model reads at most {self.max_length}; "
            f"the last {excess} tokens were dropped",
            NormXLogitWarning,
            stacklevel=4,
        )

    def check(
        self,
        texts: Sequence[TextInput],
        first_index: int | Sequence[int] = 0,
        names: Sequence[str] | None = None,
    ) -> None:
        """Refuse, before any work starts, texts this model cannot read.

        A text made only of characters the tokenizer drops (zero-width spaces, control
        characters, lone combining marks), or only of special tokens written out
        (``"[CLS] [SEP]"``), would be explained as the special tokens alone;
        a chat prompt takes one text, or a pair when it names the pair's fields.
        ``first_index`` numbers the texts in messages when they are part of a longer input
        (or gives each text's number); ``names`` names each text instead (``contrast_input``).
        """
        numbers = _numbers(texts, first_index)
        labels = list(names) if names is not None else [text_name(n) for n in numbers]
        for index, text in zip(labels, texts, strict=True):
            parts = text if isinstance(text, tuple) else (text,)
            prompt = self.task.prompt
            if prompt and isinstance(text, tuple) and not prompt.takes_pairs:
                raise InvalidInputError(
                    f"{index} is a pair, but this model wraps its input in a chat prompt "
                    "and takes one text; join the two texts into one string"
                )
            if prompt and prompt.takes_pairs and not isinstance(text, tuple):
                first, second = prompt.fields
                raise InvalidInputError(
                    f"{index} is one text, but this model's chat prompt takes a "
                    f"({first}, {second}) pair; pass a tuple of two strings"
                )
            if isinstance(text, tuple) and not prompt:
                self._refuse_pair_without_room(index)
            for which, part in enumerate(parts):
                if _only_invisible(part) and not self._text_ids(part):
                    self._refuse_unreadable(index, parts, which)
                self._refuse_only_special(index, parts, which)
        self._warn_glued_pairs(texts)

    def _warn_glued_pairs(self, texts: Sequence[TextInput]) -> None:
        """Warn where pairs are read glued together: scores computed on such inputs mean
        little if the model was trained with a separator, and nothing else would tell.
        Warned from this one line in the same words every time, so Python shows it once
        (a run checks every batch), and the page, which records each request's warnings,
        every time."""
        if self.task.prompt is not None or not any(isinstance(t, tuple) for t in texts):
            return
        if self._glues_pairs is None:
            self._glues_pairs = glues_pairs(self.tokenizer)
        if self._glues_pairs:
            warnings.warn(glued_pairs_warning(self.tokenizer), NormXLogitWarning, stacklevel=1)

    def _refuse_pair_without_room(self, index: str) -> None:
        """A pair needs a token of each text besides the special tokens around it: with
        fewer, one text (or both) would be cut away whole, or not cut at all."""
        specials = special_count(self.tokenizer, pair=True)
        least = specials + 2
        if self.max_length < least:
            raise InvalidInputError(
                f"{index} is a pair, and max_length={self.max_length} leaves no room for both "
                f"texts: the model adds {specials} special tokens around a pair; load the "
                f"model with max_length={least} or more to read pairs"
            )

    def check_masks(
        self,
        texts: Sequence[TextInput],
        mask_position: int | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        """A masked LM reads its prediction at a mask token: refuse, before any work, a
        text without one (unless ``mask_position`` says where to read), naming it."""
        if self.task.kind is not TaskKind.MASKED_LM or mask_position is not None:
            return
        token = self.tokenizer.mask_token
        if token is None:
            return
        labels = list(names) if names is not None else [text_name(n) for n in range(len(texts))]
        for label, text in zip(labels, texts, strict=True):
            parts = text if isinstance(text, tuple) else (text,)
            if not any(token in part for part in parts):
                raise InvalidInputError(
                    f"{label} has no {token}: a masked LM reads its prediction at the mask "
                    f"token; put {token} in it, where the word to explain stands (in Python, "
                    "explain's mask_position= can say where to read instead)"
                )

    def _refuse_only_special(self, index: str, parts: tuple[str, ...], which: int) -> None:
        """A text written as special tokens (``"[CLS] [SEP] [PAD]"``) is read by the
        tokenizer as those markers: the model would see no words at all. The unknown
        token is no marker: it stands for text the vocabulary lacks."""
        markers = [t for t in self.tokenizer.all_special_tokens if t != self.tokenizer.unk_token]
        rest = parts[which]
        for marker in sorted(markers, key=len, reverse=True):  # a cheap test before tokenizing
            rest = rest.replace(marker, "")
        if rest.strip():
            return
        special = set(self.tokenizer.all_special_ids) - {self.tokenizer.unk_token_id}
        ids = self._text_ids(parts[which])
        if not ids or not all(i in special for i in ids):
            return
        shown = ", ".join(dict.fromkeys(self.tokenizer.convert_ids_to_tokens(ids)))
        part = "" if len(parts) == 1 else f" ({('first', 'second')[which]} text of the pair)"
        raise InvalidInputError(
            f"{index}{part} is only special tokens ({shown}): the tokenizer reads them "
            "as markers, not words, so there is nothing to explain; give some words"
        )

    def _text_ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _refuse_unreadable(self, index: str, parts: tuple[str, ...], which: int) -> None:
        characters = list(dict.fromkeys(parts[which]))
        named = ", ".join(
            f"U+{ord(c):04X} {unicodedata.name(c, '')}".rstrip() for c in characters[:3]
        )
        ids = [] if self.task.prompt else self.tokenizer(*parts)["input_ids"]
        seen = " ".join(self.tokenizer.convert_ids_to_tokens(ids)) or "nothing of it"
        part = "" if len(parts) == 1 else f" ({('first', 'second')[which]} text of the pair)"
        if not characters:
            raise InvalidInputError(f"{index}{part} is empty; give some words")
        raise InvalidInputError(
            f"{index}{part} has no tokens the model can read: it holds only {named}, "
            f"which the tokenizer drops, so the model would see {seen}; give some words"
        )

    def _tokenize_plain(self, text: TextInput, index: int) -> tuple[dict, int]:
        pair = text if isinstance(text, tuple) else (text,)
        full = self.tokenizer(*pair, truncation=False)
        excess = len(full["input_ids"]) - self.max_length
        if excess > 0:
            self._warn_dropped(index, len(full["input_ids"]), excess)
            full = self.tokenizer(*pair, truncation=True, max_length=self.max_length)
        return full, max(excess, 0)

    def _tokenize_prompted(self, text: TextInput, index: int) -> tuple[dict, int]:
        """Wrap the text in the chat prompt; truncate the text, never the prompt around it
        (of a pair, the longer part: the passage of a question and passage)."""
        prompt, tokenizer = self.task.prompt, self.tokenizer
        full = tokenizer(prompt.render(tokenizer, text), add_special_tokens=False)
        excess = len(full["input_ids"]) - self.max_length
        if excess > 0:
            self._warn_dropped(index, len(full["input_ids"]), excess)
            full = tokenizer(
                prompt.render(tokenizer, truncate_text(tokenizer, text, excess)),
                add_special_tokens=False,
            )
        return full, max(excess, 0)

    def token_words(self, text: TextInput) -> list[int | None]:
        """For each token the model reads for ``text`` (special and prompt tokens
        included), the whitespace word of the text it comes from: words count through the
        first text, then the second of a pair; None for a token of no word.

        How human evidence (word indices) lands on a model's tokens, whatever wraps the
        text: special tokens, a pair's separator, or a chat prompt. A text longer than the
        model reads is truncated as :meth:`encode` truncates it, so the list has one entry
        per token the model reads; word indices still count through the whole text."""
        whole = [word_spans(part) for part in ((text,) if isinstance(text, str) else text)]
        before = [sum(len(s) for s in whole[:p]) for p in range(len(whole))]
        parts, places = self.token_places(text)
        spans = [word_spans(part) for part in parts]
        words: list[int | None] = []
        for place in places:
            word = None if place is None else word_at(spans[place[0]], place[1])
            words.append(None if word is None else before[place[0]] + word)
        return words

    def token_places(
        self, text: TextInput
    ) -> tuple[tuple[str, ...], list[tuple[int, int, int] | None]]:
        """The parts of ``text`` the model reads (truncated as :meth:`encode` truncates)
        and, for each token it reads, ``(part, start, end)``: the characters of that part
        it covers, its leading whitespace skipped (``"Ġword"`` lies in its word); None for
        special and prompt tokens."""
        parts = (text,) if isinstance(text, str) else tuple(text)
        tokenizer = self.tokenizer
        if self.task.prompt is not None:
            prompt = self.task.prompt
            excess = (
                len(
                    tokenizer(prompt.render(tokenizer, text), add_special_tokens=False)["input_ids"]
                )
                - self.max_length
            )
            if excess > 0:  # as _tokenize_prompted: the longer part loses its last tokens
                read = truncate_text(tokenizer, text, excess)
                parts = (read,) if isinstance(read, str) else tuple(read)
            rendered = prompt.render(tokenizer, parts[0] if len(parts) == 1 else parts)
            encoded = tokenizer(rendered, add_special_tokens=False, return_offsets_mapping=True)
            starts = _part_starts(prompt, tokenizer, parts)
            located = [
                _locate(start, end, parts, starts) for start, end in encoded["offset_mapping"]
            ]
        else:
            encoded = tokenizer(
                *parts, return_offsets_mapping=True, truncation=True, max_length=self.max_length
            )
            located = [
                None if sequence is None or end <= start else (sequence, start, end)
                for sequence, (start, end) in zip(
                    encoded.sequence_ids(), encoded["offset_mapping"], strict=True
                )
            ]
        places: list[tuple[int, int, int] | None] = []
        for place in located:
            if place is not None:
                part, start, end = place
                while start < end - 1 and parts[part][start].isspace():
                    start += 1
                place = (part, start, end)
            places.append(place)
        return parts, places

    def encode(
        self,
        texts: Sequence[TextInput],
        mask_position: int | Sequence[int | None] | None = None,
        first_index: int | Sequence[int] = 0,
        check: bool = True,
    ) -> Batch:
        """Tokenise, truncate (with a warning), pad, and locate reading positions.

        ``first_index`` numbers the texts in warnings when this batch is part of a longer
        input (or gives each text's number, for texts taken out of order). ``check=False``
        reads texts :meth:`check` would refuse (a text with every segment removed is
        empty); a text of no token at all is still refused.
        """
        if check:
            self.check(texts, first_index)
        tokenize = self._tokenize_prompted if self.task.prompt else self._tokenize_plain
        rows, dropped, words = [], [], []
        for index, text in zip(_numbers(texts, first_index), texts, strict=True):
            encoded, excess = tokenize(text, index)
            if not encoded["input_ids"]:
                raise InvalidInputError(nothing_read(text_name(index)))
            dropped.append(excess)
            words.append(_word_ids(encoded))
            encoded["special_tokens_mask"] = special_mask(self.tokenizer, encoded["input_ids"])
            rows.append(encoded)
        padded = self.tokenizer.pad(rows, padding=True, return_tensors="pt")
        mask = padded["attention_mask"]
        return Batch(
            texts=list(texts),
            input_ids=padded["input_ids"],
            attention_mask=mask,
            special_tokens_mask=padded["special_tokens_mask"].bool() & mask.bool(),
            reading_positions=self._reading_positions(padded["input_ids"], mask, mask_position),
            token_type_ids=padded.get("token_type_ids"),
            position_ids=self.position_ids(mask),
            dropped=tuple(dropped),
            word_ids=None if any(w is None for w in words) else words,
        )

    def encode_ids(self, rows: Sequence[Sequence[int]], texts: Sequence[TextInput]) -> Batch:
        """A padded batch of rows already tokenised (a generation's prefixes), read at each
        row's last token (as a causal LM predicts the next one)."""
        encoded = [
            {
                "input_ids": list(row),
                "attention_mask": [1] * len(row),
                "special_tokens_mask": special_mask(self.tokenizer, list(row)),
            }
            for row in rows
        ]
        padded = self.tokenizer.pad(encoded, padding=True, return_tensors="pt")
        mask = padded["attention_mask"]
        first = mask.long().argmax(-1)
        return Batch(
            texts=list(texts),
            input_ids=padded["input_ids"],
            attention_mask=mask,
            special_tokens_mask=padded["special_tokens_mask"].bool() & mask.bool(),
            reading_positions=first + mask.sum(-1) - 1,
            position_ids=self.position_ids(mask),
        )

    def position_ids(self, mask: Tensor) -> Tensor:
        """Positions counted over real tokens only, so padding side does not matter."""
        real = mask.long()
        positions = (real.cumsum(-1) - 1).clamp(min=0) * real
        return positions + self.position_offset * real

    def _reading_positions(
        self, input_ids: Tensor, mask: Tensor, mask_position: int | None
    ) -> Tensor:
        lengths = mask.sum(-1)
        first = mask.long().argmax(-1)  # first real token (left padding shifts it)
        if self.task.kind is TaskKind.MASKED_LM:
            return self._mask_positions(input_ids, mask, first, lengths, mask_position)
        if self.family.reading is Reading.FIRST:
            return first
        return first + lengths - 1

    def _mask_positions(self, input_ids, mask, first, lengths, mask_position) -> Tensor:
        """Where a masked LM reads each row: ``mask_position`` (one for every row, or one
        per row, None for a row's first mask token) counted over the row's tokens, else
        the first mask token."""
        rows = len(lengths)
        given = mask_position if isinstance(mask_position, Sequence) else [mask_position] * rows
        out = torch.zeros(rows, dtype=torch.long)
        for row, position in enumerate(given):
            if position is None:
                continue
            if not -int(lengths[row]) <= position < int(lengths[row]):
                raise InvalidInputError(
                    f"mask_position {short_value(position)} is outside a text of "
                    f"{int(lengths[row])} tokens; count positions over the tokenised text"
                )
            counted = int(lengths[row]) + position if position < 0 else position
            out[row] = int(first[row]) + counted
        searched = [row for row, position in enumerate(given) if position is None]
        if not searched:
            return out
        mask_id = self.tokenizer.mask_token_id
        is_mask = (input_ids == mask_id) & mask.bool() if mask_id is not None else None
        if is_mask is None or not bool(is_mask[searched].any(-1).all()):
            token = self.tokenizer.mask_token or "[MASK]"
            raise InvalidInputError(
                f"a masked-LM explanation reads the prediction at a mask token: put {token} "
                "in every text (in Python, explain's mask_position= can say where to read "
                "instead)"
            )
        found = is_mask.long().argmax(-1)
        out[searched] = found[searched].to(out.dtype)
        return out


def truncate_text(tokenizer, text: TextInput, excess: int) -> TextInput:
    """``text`` less its last ``excess`` tokens (of a pair, those of the longer part),
    keeping at least one token."""
    parts = list(text) if isinstance(text, tuple) else [text]
    ids = [tokenizer(part, add_special_tokens=False)["input_ids"] for part in parts]
    longest = max(range(len(parts)), key=lambda i: len(ids[i]))
    parts[longest] = tokenizer.decode(ids[longest][: max(len(ids[longest]) - excess, 1)])
    return (parts[0], parts[1]) if isinstance(text, tuple) else parts[0]


def _only_invisible(text: str) -> bool:
    """Only separators, control or format characters and combining marks (which some
    tokenizers drop entirely, e.g. zero-width spaces)."""
    return all(unicodedata.category(c)[0] in "ZCM" for c in text)


def _part_starts(prompt, tokenizer, parts: Sequence[str]) -> list[int]:
    """Where each part of a text begins in its rendered chat prompt, whatever order the
    prompt places them in: the prompt is rendered once with markers for the parts, and
    each marker's place is shifted by the lengths of the parts placed before it."""
    markers = [f"\ue000{index}\ue001" for index in range(len(parts))]
    marked = prompt.render(tokenizer, markers[0] if len(parts) == 1 else tuple(markers))
    places = sorted((marked.find(marker), index) for index, marker in enumerate(markers))
    starts = [-1] * len(parts)
    shift = 0
    for place, index in places:
        if place >= 0:
            starts[index] = place + shift
            shift += len(parts[index]) - len(markers[index])
    return starts


def _locate(
    start: int, end: int, parts: Sequence[str], starts: Sequence[int]
) -> tuple[int, int, int] | None:
    """Which part of the text a rendered prompt's character span lies in, and where in
    it: ``(part, start, end)``; None for the prompt's own characters."""
    if end <= start:
        return None
    for index, (part, first) in enumerate(zip(parts, starts, strict=True)):
        if first >= 0 and first <= start < first + len(part):
            return index, start - first, min(end, first + len(part)) - first
        if first >= 0 and start < first < end:  # a token that begins before the part
            return index, 0, min(end, first + len(part)) - first
    return None


def _word_ids(encoded) -> list[int | None] | None:
    """One index per word across both texts of a pair (fast tokenizers only)."""
    if not getattr(encoded, "is_fast", False):
        return None
    numbering: dict[tuple[int, int], int] = {}
    ids: list[int | None] = []
    for sequence, word in zip(encoded.sequence_ids(), encoded.word_ids(), strict=True):
        if word is None:
            ids.append(None)
        else:
            ids.append(numbering.setdefault((sequence, word), len(numbering)))
    return ids


def pack_by_width(
    widths: Sequence[int], batch_size: int, max_tokens: int | None = None
) -> list[list[int]]:
    """Consecutive positions of ``widths`` (token counts, in the order they run) grouped
    into forward passes of at most ``batch_size`` rows and, with ``max_tokens``, at most
    that many tokens: rows x the widest, padding included (a wider row goes alone)."""
    batches: list[list[int]] = []
    widest = 0
    for position, width in enumerate(widths):
        current = batches[-1] if batches else []
        widest = max(widest, width) if current else width
        full = len(current) >= batch_size or (
            max_tokens is not None and (len(current) + 1) * widest > max_tokens
        )
        if not current or full:
            batches.append([position])
            widest = width
        else:
            current.append(position)
    return batches


def special_mask(tokenizer: Any, ids: Sequence[int]) -> list[int]:
    """1 at each marker token of ``ids`` (``[CLS]``, ``</s>``, a chat template's), 0 at
    the text's. The unknown token is text: it stands for words the vocabulary lacks (an
    emoji, a rare script), so it is ranked, perturbed and read as evidence like any word,
    although tokenizers list it among their special tokens."""
    mask = tokenizer.get_special_tokens_mask(list(ids), already_has_special_tokens=True)
    unknown = tokenizer.unk_token_id
    if unknown is None:
        return list(mask)
    return [0 if token == unknown else flag for token, flag in zip(ids, mask, strict=True)]
