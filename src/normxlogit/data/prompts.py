"""Open-generation prompts of the pi-Soft paper (and of ReAGent before it): TellMeWhy
why-questions about short narratives, and WikiBio biographies to continue.

The examples are prompts: ``text`` is what the model is given, ``label`` is None (there is
no gold output to score; the metrics compare the model with itself).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..common.errors import InvalidFileError
from ..common.input_paths import read_text
from .files import Example, checked_text, read_jsonl, split_lines
from .sources import check_limit, check_split, column, locate, take

TELLMEWHY_SPLITS = ("test", "reagent")
WIKIBIO_SPLITS = ("test", "valid", "train")


def read_tellmewhy(
    split: str = "test",
    root: Path | None = None,
    *,
    path: str | Path | None = None,
    limit: int | None = None,
) -> list[Example]:
    """TellMeWhy prompts in ReAGent's setting: the narrative, a space, the why-question.

    ``test``: the 464 questions of the annotated test split (190 narratives), from
    ``tellmewhy/annotated_test_464.jsonl`` (``path=``: JSON lines with ``narrative`` and
    ``question``). ``reagent``: the 20 prompts of ReAGent's own benchmark file
    (``tellmewhy/reagent_tellmewhy2_prompts.txt``, one prompt per line; ``path=``: such a
    file).
    """
    check_split("tellmewhy", split, TELLMEWHY_SPLITS)
    limit = check_limit(limit)
    if split == "reagent":
        source = locate(path, "tellmewhy", "reagent_tellmewhy2_prompts.txt", root=root)
        return take(_prompt_lines(source), limit)
    source = locate(path, "tellmewhy", "annotated_test_464.jsonl", root=root)
    examples = []
    for index, (line, row) in enumerate(read_jsonl(source)):
        narrative = checked_text(row, column(row, ("narrative",), source, line), source, line)
        question = checked_text(row, column(row, ("question",), source, line), source, line)
        examples.append(Example(f"{narrative.strip()} {question.strip()}", None, index))
        if limit is not None and len(examples) == limit:
            break
    if not examples:
        raise InvalidFileError(f"{source} holds no rows")
    return examples


def read_wikibio(
    split: str = "test",
    root: Path | None = None,
    *,
    path: str | Path | None = None,
    limit: int | None = None,
) -> list[Example]:
    """WikiBio biographies as prompts to continue: each article's opening, detokenised.

    The paper (after SelfCheckGPT and ReAGent) prompts with an article's first two
    sentences; the staged files (``wikibio/<split>_100.summary``, the first 100 articles
    of each split as wiki2bio preprocessed them) hold the first sentence only, so that is
    the prompt. WikiBio's tokenisation is undone: ``-lrb-``/``-rrb-`` become parentheses
    and spaces before punctuation go (the text stays lowercased, as WikiBio ships it).
    ``path=``: a ``.summary`` file (one article per line).
    """
    check_split("wikibio", split, WIKIBIO_SPLITS)
    limit = check_limit(limit)
    source = locate(path, "wikibio", f"{split}_100.summary", root=root)
    examples = [Example(detokenize(e.text), None, e.row) for e in _prompt_lines(source)]
    return take(examples, limit)


_BRACKETS = {"-lrb-": "(", "-rrb-": ")", "-lsb-": "[", "-rsb-": "]", "-lcb-": "{", "-rcb-": "}"}


def detokenize(text: str) -> str:
    """WikiBio's Penn-Treebank-style text as plain text."""
    for token, bracket in _BRACKETS.items():
        text = text.replace(token, bracket)
    text = re.sub(r"\( ", "(", text)
    text = re.sub(r" ([)\].,;:!?%])", r"\1", text)
    text = re.sub(r" (n't|'s|'re|'ve|'ll|'d|'m)\b", r"\1", text)
    text = text.replace("`` ", '"').replace(" ''", '"')
    return re.sub(r"\s+", " ", text).strip()


def _prompt_lines(source: Path) -> list[Example]:
    """One prompt per non-blank line (a blank line inside the file is refused)."""
    lines = split_lines(read_text(source))  # LF, CRLF or a lone CR, as every text file
    while lines and not lines[-1].strip():
        lines.pop()
    examples = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise InvalidFileError(
                f"{source}, line {number}: a blank line; a prompt file holds one prompt per line"
            )
        examples.append(Example(" ".join(line.split()), None, number - 1))  # tabs too
    if not examples:
        raise InvalidFileError(f"{source} holds no prompts")
    return examples
