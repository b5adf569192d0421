"""What the head-on-top predicts: the task kind, label names, label words and prompts."""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Iterable, KeysView, Mapping, Set
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..common.errors import (
    InvalidInputError,
    InvalidOptionError,
    UnsupportedModelError,
    refuse_surrogate,
)
from ..common.fields import name_problem
from ..common.outputs import lone_item, short_value, type_phrase
from ..common.targets import ALL

if TYPE_CHECKING:  # transformers is imported only when a model is loaded
    from transformers import PreTrainedModel


class TaskKind(str, Enum):
    CLASSIFICATION = "classification"
    REGRESSION = "regression"
    MASKED_LM = "masked_lm"
    CAUSAL_LM = "causal_lm"


@dataclass(frozen=True)
class ChatPrompt:
    """A chat prompt around the user's text, rendered with the tokenizer's chat template.

    ``user`` names the text ``{text}``. A prompt for text pairs names the pair's two parts
    in ``fields``, in the pair's order: with ``fields=("question", "passage")`` a text
    ``(question, passage)`` fills ``{question}`` and ``{passage}``, wherever ``user`` puts
    them. Such a prompt takes pairs only; a prompt without ``fields`` takes one text only.
    """

    user: str = "{text}"
    system: str | None = None
    fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        fields = self.fields if self.fields is not None else ()
        # a set fills the pair in hash order (changing run to run), a string letter by
        # letter: only an ordered collection says which part comes first
        unordered = isinstance(fields, Set) and not isinstance(fields, KeysView)
        if unordered or isinstance(fields, str | bytes) or not isinstance(fields, Iterable):
            why = (
                " (it has no order)"
                if unordered
                else " (read letter by letter)"
                if isinstance(fields, str | bytes)
                else ""
            )
            raise InvalidInputError(
                "a chat prompt's fields name the two parts of a text pair in order, as a "
                f"tuple or list, e.g. ('question', 'passage'); got {type_phrase(fields)}{why}"
            )
        # np.str_ (np.array([...]) iterates them) stored as plain str, as label_words is
        fields = tuple(str(f) if isinstance(f, str) else f for f in fields)
        object.__setattr__(self, "fields", fields)
        if self.fields and (
            len(self.fields) != 2
            or len(set(self.fields)) != 2
            or not all(isinstance(f, str) and f.isidentifier() for f in self.fields)
        ):
            raise InvalidInputError(
                f"a chat prompt's fields name the two parts of a text pair, e.g. "
                f"('question', 'passage'); got {short_value(self.fields, 80)}"
            )
        if self.system is not None and not isinstance(self.system, str):
            raise InvalidInputError(
                f"a chat prompt's system message is a string (or None); got "
                f"{type(self.system).__name__} {short_value(self.system, 60)}"
            )
        allowed = set(self.fields) if self.fields else {"text"}
        placeholders = ", ".join(f"{{{n}}}" for n in sorted(allowed))
        literal = "; write a literal brace as '{{' or '}}'"
        if not isinstance(self.user, str):
            raise InvalidInputError(
                f"a chat prompt's user template is a string placing {placeholders}, e.g. "
                f"'Review: {{text}}'; got {type(self.user).__name__} {short_value(self.user, 60)}"
            )
        # a lone surrogate is tokenized with the text and ended in the tokenizer's TypeError
        refuse_surrogate(self.user, "the chat prompt's user template")
        if self.system is not None:
            refuse_surrogate(self.system, "the chat prompt's system message")
        try:
            parsed = list(string.Formatter().parse(self.user))
        except ValueError as error:  # an unmatched '{' or a single '}'
            brace = "'}'" if "Single '}'" in str(error) else "'{'"
            raise InvalidInputError(
                f"the chat prompt {self.user!r} has an unmatched {brace}{literal}"
            ) from None
        names = {name for _, name, _, _ in parsed if name is not None}
        if "" in names or any(name.isdigit() for name in names):
            positional = "{}" if "" in names else f"{{{min(n for n in names if n.isdigit())}}}"
            raise InvalidInputError(
                f"the chat prompt {self.user!r} names {positional}, but its text fills only "
                f"{placeholders} by name{literal}"
            )
        if names - allowed:
            raise InvalidInputError(
                f"the chat prompt {self.user!r} names {{{sorted(names - allowed)[0]}}}, but "
                f"its text fills only {placeholders}"
                + ("" if self.fields else "; name a pair's parts with fields=(first, second)")
                + literal
            )
        if allowed - names:
            missing = ", ".join(f"{{{n}}}" for n in sorted(allowed - names))
            raise InvalidInputError(
                f"the chat prompt {self.user!r} does not place the text; put {missing} where "
                "it goes"
            )
        for _, name, spec, conversion in parsed:
            # '{text:.3}' cuts every text to 3 characters, '{text:.0}' leaves none of it,
            # '{text!r}' quotes it, '{text:{text}}' makes the text the spec: never wanted
            if name is not None and (spec or conversion):
                written = f"{{{name}{'!' + conversion if conversion else ''}"
                written += f"{':' + spec if spec else ''}}}"
                raise InvalidInputError(
                    f"the chat prompt {self.user!r} cannot be filled as written: {written} "
                    f"would change the text (a format spec pads or cuts it, a conversion "
                    f"quotes it); write the field plain, {{{name}}}"
                )
        try:  # a bad spec ('{text:Q}') or anything else format() refuses
            self.user.format(**dict.fromkeys(allowed, ""))
        except (IndexError, KeyError, ValueError, AttributeError, TypeError) as error:
            raise InvalidInputError(
                f"the chat prompt {self.user!r} cannot be filled ({error}); place the text as "
                f"plain {placeholders}{literal}"
            ) from None

    def check_tokenizer(self, tokenizer) -> None:
        """Refuse a tokenizer without a chat template: the prompt is rendered with it."""
        if not getattr(tokenizer, "chat_template", None):
            raise InvalidInputError(
                "prompt= wraps texts in the tokenizer's chat template, and this tokenizer has "
                "none; set tokenizer.chat_template or load a chat model's tokenizer"
            )

    @property
    def takes_pairs(self) -> bool:
        """Whether the prompt's text is a pair, its parts named by ``fields``."""
        return bool(self.fields)

    def values(self, text: str | tuple[str, str]) -> dict[str, str]:
        """What ``text`` fills in ``user``: ``{"text": text}`` or the pair's named parts."""
        if self.takes_pairs:
            if not (isinstance(text, tuple) and len(text) == 2):
                first, second = self.fields
                raise InvalidInputError(
                    f"this model's chat prompt takes a ({first}, {second}) pair, not one text"
                )
            return dict(zip(self.fields, text, strict=True))
        if isinstance(text, tuple):
            raise InvalidInputError(
                "this model wraps its input in a chat prompt and takes one text, not a pair; "
                "join the two texts into one string"
            )
        return {"text": text}

    def render(self, tokenizer, text: str | tuple[str, str]) -> str:
        self.check_tokenizer(tokenizer)
        messages = [{"role": "user", "content": self.user.format(**self.values(text))}]
        if self.system:
            messages.insert(0, {"role": "system", "content": self.system})
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def to_dict(self) -> dict:
        """The prompt as JSON-ready values (an adapter's manifest keeps it)."""
        return {"system": self.system, "user": self.user, "fields": list(self.fields)}

    @classmethod
    def from_dict(cls, values: dict) -> ChatPrompt:
        return cls(
            user=values.get("user", "{text}"),
            system=values.get("system"),
            fields=tuple(values.get("fields") or ()),
        )


@dataclass(frozen=True)
class Task:
    """The prediction being explained.

    For a causal LM, ``label_words`` turn it into a prompted classifier: class ``k`` is
    the first token of ``label_words[k]`` read at the last position, named ``labels[k]``.
    """

    kind: TaskKind
    labels: tuple[str, ...] = ()
    label_words: tuple[str, ...] = ()
    prompt: ChatPrompt | None = field(default=None)

    @property
    def over_vocabulary(self) -> bool:
        """Whether the head's outputs are vocabulary logits (a language-model head)."""
        return self.kind in (TaskKind.MASKED_LM, TaskKind.CAUSAL_LM)

    @property
    def prompted(self) -> bool:
        return bool(self.label_words)

    @property
    def has_label_set(self) -> bool:
        """Outputs are a fixed, named label set (a classifier or a prompted LM)."""
        return self.kind is TaskKind.CLASSIFICATION or self.prompted


def detect_task(
    model: PreTrainedModel,
    label_words: dict[str, str] | list[str] | None = None,
    prompt: ChatPrompt | None = None,
) -> Task:
    """The task of a transformers model, from the class of its head."""
    from transformers.models.auto import modeling_auto as auto

    check_prompt(prompt)

    name = type(model).__name__
    if name in auto.MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES.values():
        _refuse_prompting(name, label_words, prompt)
        config = model.config
        if config.num_labels == 1 or config.problem_type == "regression":
            return Task(TaskKind.REGRESSION, labels=(_label_name(config, 0, "score"),))
        labels = tuple(_label_name(config, i, f"LABEL_{i}") for i in range(config.num_labels))
        _refuse_repeated_labels(model, labels)
        return Task(TaskKind.CLASSIFICATION, labels=labels)
    if name in auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES.values():
        _refuse_prompting(name, label_words, prompt)
        return Task(TaskKind.MASKED_LM)
    if name in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values():
        if label_words is not None:
            names, words = _label_words(label_words)
            return Task(TaskKind.CAUSAL_LM, labels=names, label_words=words, prompt=prompt)
        return Task(TaskKind.CAUSAL_LM, prompt=prompt)
    raise UnsupportedModelError(
        f"{name} has no head-on-top normxlogit can explain; load the model with a "
        "sequence-classification, masked-LM or causal-LM head (for example "
        "AutoModelForSequenceClassification)"
    )


def check_prompt(prompt: Any) -> None:
    """``prompt=`` is a :class:`ChatPrompt` (or None): a template given as a plain string,
    or a dict of its messages, is refused here, with the wrapping that fixes it, rather
    than failing inside the model as an object without a ChatPrompt's methods."""
    if prompt is None or isinstance(prompt, ChatPrompt):
        return
    if isinstance(prompt, str):
        wrap = f"prompt=normxlogit.ChatPrompt(user={prompt!r})"
    elif isinstance(prompt, dict) and prompt and set(prompt) <= {"user", "system", "fields"}:
        keywords = ", ".join(f"{key}={value!r}" for key, value in prompt.items())
        wrap = f"prompt=normxlogit.ChatPrompt({keywords})"
    else:
        wrap = "prompt=normxlogit.ChatPrompt(system='...', user='... {text} ...')"
    raise InvalidInputError(
        f"prompt= takes a normxlogit.ChatPrompt, not {type_phrase(prompt)}; give {wrap}"
    )


def _refuse_prompting(name: str, label_words, prompt) -> None:
    """A model that is no causal LM has its own labels and inputs: prompt= and
    label_words= would be dropped without a word."""
    given = [o for o, v in (("prompt=", prompt), ("label_words=", label_words)) if v is not None]
    if given:
        raise InvalidOptionError(
            f"{' and '.join(given)} make a causal LM a prompted classifier, and {name} is "
            "not a causal LM (its labels and inputs are its own); leave them out"
        )


def _flattening(label_words: Any) -> str:
    """How to make a 2-d ``label_words`` flat, for its type: a one-row DataFrame is a row
    (a Series, read as {column: word}), a one-column one that column's words; an array of
    any kind (an np.matrix stays 2-d under .ravel()) its words as a list."""
    columns = getattr(label_words, "columns", None)
    if columns is not None and hasattr(label_words, "iloc"):  # a pandas DataFrame
        rows, width = label_words.shape
        if rows == 1:
            return "label_words=frame.iloc[0], read as {column: word}"
        if width == 1:
            return f"label_words=frame[{short_value(columns[0])}].tolist()"
        return "label_words=frame.to_numpy().ravel().tolist()"
    return "label_words=np.asarray(label_words).ravel().tolist()"


def _label_words(label_words: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """label_words' names and words, in order: a dict ``{name: word}`` or a list of words
    (each its own name). A string would be read letter by letter, a set in hash order (label
    0 would differ run to run), an empty one would leave a plain language model without a
    word, one word would be a choice of one (its probability always 1): each is refused,
    as is a word that is not a string."""
    shape = "label_words is a dict {name: word} or a list of words"
    label_words = lone_item(label_words)  # np.array("good"): the one string it holds
    if isinstance(label_words, (str, bytes)):
        raise InvalidInputError(
            f"{shape}; got the {'string' if isinstance(label_words, str) else 'bytes'} "
            f"{label_words!r:.60}, which would be read letter by letter: give e.g. "
            f"[{label_words!r:.40}, ...] or {{name: word}}"
        )
    if isinstance(label_words, (set, frozenset)):
        raise InvalidInputError(
            f"{shape}; got {type_phrase(label_words)}, which has no order, so the labels' "
            "order (target=0, saved runs) would change from run to run: give a list or a dict"
        )
    if getattr(label_words, "ndim", 1) > 1:  # rows would each be read as one word
        raise InvalidInputError(
            f"{shape}; got a {label_words.ndim}-d {type(label_words).__name__} of shape "
            f"{tuple(label_words.shape)}: give a flat list of words, e.g. [' bad', ' good'] "
            f"({_flattening(label_words)})"
        )
    label_words = _series_as_mapping(label_words)
    if isinstance(label_words, Mapping):
        names, words = tuple(label_words), tuple(label_words.values())
    elif isinstance(label_words, Iterable):
        names = words = tuple(label_words)
    else:
        raise InvalidInputError(
            f"{shape}, e.g. {{'negative': ' bad', 'positive': ' good'}}; got "
            f"{type(label_words).__name__} {label_words!r:.60}"
        )
    if not words:
        raise InvalidInputError(
            "label_words is empty; give the labels' words, {name: word}, or "
            "leave label_words out to explain a plain language model"
        )
    if len(words) == 1:  # a softmax over one word is 1 whatever the input
        raise InvalidInputError(
            f"label_words names one label ({names[0]!r}); give two or more: the answer is "
            "read as a choice among them, and one word's probability is always 1, so no "
            "perturbation could change it (every faithfulness metric would read 0)"
        )
    if isinstance(label_words, Mapping):
        _check_label_names(names)
    for index, (name, word) in enumerate(zip(names, words, strict=True)):
        shown = f"for {name!r}" if isinstance(label_words, Mapping) else f"at [{index}]"
        if not isinstance(word, str):
            raise InvalidInputError(
                f"label_words' words are strings, e.g. {{'negative': ' bad'}} or [' bad', "
                f"' good']; got {type(word).__name__} {short_value(word, 60)} {shown}"
            )
        refuse_surrogate(word, f"label_words' word {shown}")
    # np.str_ (np.array([...]) iterates them) stored as plain str, as a saved task reads back
    words = tuple(str(word) for word in words)
    names = tuple(str(name) if isinstance(name, str) else name for name in names)
    if not isinstance(label_words, Mapping):
        names = _names_of_words(words)
    fix = (
        "give each label a name of its own, {name: word}"
        if isinstance(label_words, Mapping)
        else "name the labels yourself, {name: word}"
    )
    if (problem := label_names_problem(names)) is not None:
        raise InvalidInputError(f"label_words names {problem}; {fix}")
    return names, words


def _names_of_words(words: tuple[str, ...]) -> tuple[str, ...]:
    """The labels a list of words names: each word without the blanks at its ends (' good'
    is the label 'good'), without invisible characters ('\u200byes' is 'yes') and in its
    compatibility-composed form (NFKC: the KELVIN SIGN is 'K'), as a dict's names must be
    written; a word that is only blanks, or two words that are one name, refused (name the
    labels yourself then)."""
    from ..common.fields import unseen_in_name

    names = tuple(
        unicodedata.normalize("NFKC", "".join(c for c in word if not unseen_in_name(c))).strip()
        for word in words
    )
    for index, name in enumerate(names):
        if not name:
            raise InvalidInputError(
                f"label_words' word at [{index}] is {ascii(words[index])}, which names no label; "
                "name the labels yourself, {name: word}"
            )
        first = names.index(name)
        if first < index and words[first] != words[index]:  # the same word: said at load
            raise InvalidInputError(
                f"label_words' words {ascii(words[first])} (at [{first}]) and "
                f"{ascii(words[index])} (at [{index}]) both name the label {name!r} (a word "
                "names its label without the blanks at its ends or invisible characters, "
                "its letters composed); name the labels yourself, {name: word}"
            )
    return names


def label_names_problem(names: tuple[str, ...]) -> str | None:
    """Why label names cannot all be named apart (None: they can): a label is named
    without regard to case (``target=``, ``--label``, gold labels), so two names equal
    but for case would both name the first, and ``"all"`` is the keyword for every label.
    Said as what follows "names" (``label_words names ...``)."""
    for index, name in enumerate(names):
        folded = name.strip().lower()
        composed = unicodedata.normalize("NFC", folded)
        for first in range(index):
            other = names[first]
            if other != name and unicodedata.normalize("NFC", other.strip().lower()) == composed:
                if other.strip().lower() == folded:
                    break  # case or blanks: said below
                odd = index if unicodedata.normalize("NFC", name) != name else first
                return (
                    f"labels {ascii(other)} (label {first}) and {ascii(name)} (label "
                    f"{index}), which both show as {unicodedata.normalize('NFC', name)!r}: "
                    "they differ only in how their letters are composed (separate combining "
                    f"accents or a compatibility character); write label {odd} composed, "
                    "unicodedata.normalize('NFC', name)"
                )
        if folded == ALL:
            return (
                f"a label {name!r} (label {index}), which is the keyword for every label "
                "(target='all', --label all), so that label could not be named: rename it"
            )
        for first in range(index):
            if names[first].strip().lower() == folded and names[first] != name:
                return (
                    f"labels {names[first]!r} (label {first}) and {name!r} (label {index}), "
                    "which differ only in case or blanks, and labels are named without regard "
                    "to case"
                )
    return None


def _series_as_mapping(label_words: Any) -> Any:
    """A pandas Series named by its index (``pd.Series({"negative": " bad", ...})``) as
    the dict it reads as, so its index gives the names, not its words; a Series on the
    default 0, 1, ... index is a list of words (each its own name), as a list is."""
    index = getattr(label_words, "index", None)
    if index is None or not callable(getattr(label_words, "items", None)):
        return label_words
    default = type(index).__name__ == "RangeIndex" and list(index) == list(range(len(index)))
    return list(label_words) if default else dict(label_words.items())


def _check_label_names(names: tuple) -> None:
    """Refuse label_words' names that are not strings, are empty or look like another name
    (spaces around, invisible characters, combining accents: ``name_problem``). A dict's
    names cannot repeat, and composed alike they cannot look alike either."""
    for name in names:
        if not isinstance(name, str):
            raise InvalidInputError(
                f"label_words' names are strings, {{name: word}}; got "
                f"{type(name).__name__} {name!r}"
            )
        if not name.strip():
            raise InvalidInputError(
                f"label_words names a label {name!r}, which shows as nothing; give every "
                "label a name, {name: word}"
            )
        if (problem := name_problem(name)) is not None:
            raise InvalidInputError(f"label_words names the label {name!r}, {problem}")


def _refuse_repeated_labels(model, labels: tuple[str, ...]) -> None:
    """Labels are keys (``probs``, ``--label``): a repeated name would show one class's
    probability as the other's."""
    for index, label in enumerate(labels):
        if label in labels[:index]:
            first = labels.index(label)
            where = getattr(model, "name_or_path", "") or type(model).__name__
            raise UnsupportedModelError(
                f"{where}: the config's id2label names classes {first} and {index} both "
                f"{label!r}; labels must be distinct: give each class its own name in "
                "id2label (config.json)"
            )
    if (problem := label_names_problem(labels)) is not None:
        where = getattr(model, "name_or_path", "") or type(model).__name__
        raise UnsupportedModelError(
            f"{where}: the config's id2label names {problem}; give each class a name of its "
            "own in id2label (config.json)"
        )


def _label_name(config, index: int, default: str) -> str:
    id2label = getattr(config, "id2label", None) or {}
    return str(id2label.get(index, default))
