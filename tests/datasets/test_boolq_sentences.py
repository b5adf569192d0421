"""ERASER BoolQ with sentences as segments (``passage="sentences"``, issue 42): the
evidence sentences with context sentences on each side, bounded in words."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from normxlogit.common.errors import InvalidOptionError
from normxlogit.data import data_root, load_dataset, read_boolq

ROOT = data_root() / "boolq_eraser"
staged = pytest.mark.skipif(not ROOT.is_dir(), reason="the shared ERASER BoolQ is not staged")

#: one sentence per line, as ERASER's documents are written
DOCUMENT = [
    "CATS",  # words 0
    "The cat sat on the mat .",  # 1-7
    "It was warm there .",  # 8-12
    "Dogs bark at night .",  # 13-17
    "The mat was red .",  # 18-22
    "Nobody came .",  # 23-25
]
WORDS = " ".join(DOCUMENT).split()


def _span(start: int, end: int) -> dict:
    return {
        "docid": "d1",
        "start_token": start,
        "end_token": end,
        "text": " ".join(WORDS[start:end]),
    }


def eraser_folder(folder: Path) -> Path:
    """A tiny ERASER BoolQ folder: one document of six sentences, two rows (the second
    with two evidence groups, far apart, the later one first)."""
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "d1").write_text("\n".join(DOCUMENT))
    rows = [
        {
            "annotation_id": 1,
            "classification": "True",
            "evidences": [[_span(4, 10)]],  # "on the mat . It was": sentences 1 and 2
            "query": "did the cat sit",
        },
        {
            "annotation_id": 2,
            "classification": "False",
            "evidences": [[_span(18, 21)], [_span(9, 12)]],  # sentences 4 and 2
            "query": "was it cold",
        },
    ]
    (folder / "val.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder


def test_sentences_are_segments_and_the_evidence_sentences_are_marked(tmp_path):
    folder = eraser_folder(tmp_path / "boolq")
    first, second = load_dataset("boolq", "val", path=folder, passage="sentences", context=1)
    assert first.segments == tuple(DOCUMENT[0:4])  # sentences 1-2, one on each side
    assert first.evidence_segments == (1, 2)
    assert first.text == ("did the cat sit", " ".join(DOCUMENT[0:4]))
    words = [*first.text[0].split(), *first.text[1].split()]
    assert [words[i] for i in first.evidence] == WORDS[4:10]  # the marked words themselves
    assert (first.label, first.row) == (1, 0)
    # two groups: the sentences between them are in the window, and not evidence
    assert second.segments == tuple(DOCUMENT[1:6])
    assert second.evidence_segments == (1, 3)
    # context 0: the evidence sentences alone; default context 2
    alone = read_boolq("val", path=folder, passage="sentences", context=0, limit=1)[0]
    assert alone.segments == tuple(DOCUMENT[1:3]) and alone.evidence_segments == (0, 1)
    wide = read_boolq("val", path=folder, passage="sentences", limit=1)[0]
    assert wide.segments == tuple(DOCUMENT[0:5]) and wide.evidence_segments == (1, 2)


def test_the_window_stays_within_max_words(tmp_path):
    folder = eraser_folder(tmp_path / "boolq")

    def read(**options):
        return read_boolq("val", path=folder, passage="sentences", limit=1, **options)[0]

    # the evidence (12 words) and then context nearest first while it fits: "CATS" (1 word)
    # fits, "Dogs bark at night ." (5) does not
    bounded = read(context=2, max_words=13)
    assert bounded.segments == tuple(DOCUMENT[0:3]) and bounded.evidence_segments == (1, 2)
    # an evidence longer than max_words keeps its first sentence (at least one)
    cut = read(max_words=5)
    assert cut.segments == (DOCUMENT[1],) and cut.evidence_segments == (0,)
    words = [*cut.text[0].split(), *cut.text[1].split()]
    assert [words[i] for i in cut.evidence] == WORDS[4:8]  # marked words inside the window
    with pytest.raises(InvalidOptionError, match="max_words must be a whole number"):
        read(max_words=0)
    with pytest.raises(InvalidOptionError, match="max_words bounds a passage='sentences'"):
        read_boolq("val", path=folder, passage="window", max_words=10)
    with pytest.raises(InvalidOptionError, match="whole number of sentences"):
        read(context=-1)


def test_other_passages_carry_no_segments(tmp_path):
    folder = eraser_folder(tmp_path / "boolq")
    for passage in ("evidence", "window"):
        example = read_boolq("val", path=folder, passage=passage, limit=1)[0]
        assert example.segments is None and example.evidence_segments is None


@staged
def test_real_rows_give_the_evidence_sentences_eraser_names():
    """On the shared file, the evidence segments are ERASER's start_sentence to
    end_sentence (inclusive), the marked words the evidence span, and every window at
    most max_words words."""
    examples = load_dataset("boolq", "val", limit=6, passage="sentences")
    rows = [json.loads(line) for line in (ROOT / "val.jsonl").read_text().splitlines()[:6]]
    wanted = {row["evidences"][0][0]["docid"] for row in rows}
    lines = {}
    with gzip.open(ROOT / "docs_val_test.jsonl.gz", "rt", encoding="utf-8") as docs:
        for line in docs:
            doc = json.loads(line)
            if doc["docid"] in wanted:
                lines[doc["docid"]] = [" ".join(s.split()) for s in doc["document"].split("\n")]
    for example, row in zip(examples, rows, strict=True):
        (evidence,) = [e for group in row["evidences"] for e in group]
        sentences = lines[evidence["docid"]]
        count = len(example.segments)
        first = next(
            n for n in range(len(sentences)) if tuple(sentences[n : n + count]) == example.segments
        )
        marked = [first + i for i in example.evidence_segments]
        assert marked == list(range(evidence["start_sentence"], evidence["end_sentence"] + 1))
        question, passage = example.text
        assert passage == " ".join(example.segments)
        words = [*question.split(), *passage.split()]
        assert " ".join(words[i] for i in example.evidence) == evidence["text"]
        assert len(passage.split()) <= 300
        assert max(0, evidence["start_sentence"] - 2) <= first <= evidence["start_sentence"]
