"""The named data sets: readers on the staged files, users' own copies, hub names, refusals."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import types
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest

from normxlogit.common.errors import (
    InvalidFileError,
    InvalidInputError,
    InvalidOptionError,
    NormXLogitError,
)
from normxlogit.data import (
    DATA_ENV,
    DatasetInfo,
    Example,
    data_root,
    dataset_info,
    list_datasets,
    load_dataset,
    read_boolq,
    read_imdb,
    read_mnli,
    read_qnli,
    read_sst2,
    read_stsb,
)

ROOT = data_root()
staged = pytest.mark.skipif(
    not (ROOT / "sst2" / "dev.tsv").is_file(), reason=f"no staged data in {ROOT}"
)


@contextmanager
def refused(kind: type[NormXLogitError], *patterns: str):
    """The block raises exactly ``kind`` with a message matching every pattern."""
    with pytest.raises(NormXLogitError) as caught:
        yield caught
    assert type(caught.value) is kind, f"{type(caught.value).__name__}: {caught.value}"
    for pattern in patterns:
        assert re.search(pattern, str(caught.value), re.S), f"{pattern!r} not in: {caught.value}"


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


# ---------------------------------------------------------------- the registry


def test_registry_lists_the_data_sets_with_their_info():
    assert list_datasets() == [
        "sst2", "mnli", "qnli", "stsb", "imdb", "boolq", "tellmewhy", "wikibio", "blimp"
    ]  # fmt: skip
    expected = {
        "sst2": ("classification", ("negative", "positive"), ("sentence",)),
        "mnli": (
            "classification",
            ("entailment", "neutral", "contradiction"),
            ("premise", "hypothesis"),
        ),
        "qnli": ("classification", ("entailment", "not_entailment"), ("question", "sentence")),
        "stsb": ("regression", (), ("sentence1", "sentence2")),
        "imdb": ("classification", ("negative", "positive"), ("text",)),
        "boolq": ("classification", ("false", "true"), ("question", "passage")),
        "tellmewhy": ("generation", (), ("prompt",)),
        "wikibio": ("generation", (), ("prompt",)),
    }
    for name, (task, labels, fields) in expected.items():
        info = dataset_info(name)
        assert isinstance(info, DatasetInfo)
        assert (info.name, info.task, info.labels, info.fields) == (name, task, labels, fields)
        assert info.default_split in info.splits
        assert "\n" not in info.description
    assert dataset_info("mnli").splits == ("train", "heldout", "dev")
    assert dataset_info("mnli").default_split == "heldout"
    for name in ("mnli", "qnli"):
        assert re.search("even rows.*odd rows", dataset_info(name).description)
    assert dataset_info("boolq").splits == ("val", "test", "test_original")
    with pytest.raises(AttributeError):
        dataset_info("sst2").name = "other"  # type: ignore[misc]


def test_example_row_is_optional_and_not_part_of_equality():
    assert Example("a film", 1) == Example("a film", 1, row=7)
    assert Example("a film", 1).row is None
    assert Example(("a", "b"), 0.5, 3).row == 3


def test_importing_the_data_package_stays_light():
    code = (
        "import sys, normxlogit.data; "
        "print([m for m in ('torch', 'transformers', 'datasets') if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# ---------------------------------------------------------------- the staged files


@staged
@pytest.mark.parametrize(
    ("name", "split", "rows", "labels"),
    [
        ("sst2", "dev", 872, {1: 444, 0: 428}),
        ("sst2", "train", 67_349, {1: 37_569, 0: 29_780}),
        ("stsb", "dev", 1_500, None),
        ("stsb", "train", 5_749, None),
        ("mnli", "dev", 9_815, {0: 3_479, 2: 3_213, 1: 3_123}),
        ("mnli", "train", 4_908, None),
        ("mnli", "heldout", 4_907, None),
        ("qnli", "dev", 5_463, {0: 2_702, 1: 2_761}),
        ("qnli", "train", 2_732, None),
        ("qnli", "heldout", 2_731, None),
        ("imdb", "test", 2_000, {0: 1_000, 1: 1_000}),
        ("boolq", "val", 1_491, {1: 914, 0: 577}),
        ("boolq", "test", 2_807, {1: 1_726, 0: 1_081}),
        ("boolq", "test_original", 2_817, {1: 1_735, 0: 1_082}),
    ],
)
def test_staged_splits_have_the_rows_and_labels_of_sources_md(name, split, rows, labels):
    examples = load_dataset(name, split)
    info = dataset_info(name)
    assert len(examples) == rows
    if labels is not None:
        assert Counter(e.label for e in examples) == labels
    if info.task == "regression":
        scores = [e.label for e in examples]
        assert all(isinstance(s, float) for s in scores) and 0 <= min(scores) <= max(scores) <= 5
    else:
        assert {type(e.label) for e in examples} == {int}
        assert {e.label for e in examples} <= set(range(len(info.labels)))
    for example in examples[:50]:
        texts = (example.text,) if isinstance(example.text, str) else example.text
        assert len(texts) == len(info.fields) and all(t.strip() for t in texts)


@staged
def test_first_rows_match_sources_md_and_the_readers_agree_with_the_registry():
    first_mnli = read_mnli("dev")[0]
    assert first_mnli.text[0] == "The new rights are nice enough"
    assert (first_mnli.label, first_mnli.row) == (1, 0)  # neutral
    first_stsb = read_stsb("dev")[0]
    assert first_stsb.text == (
        "A man with a hard hat is dancing.",
        "A man wearing a hard hat is dancing.",
    )
    assert first_stsb.label == 5.0
    assert read_sst2("dev", limit=5) == load_dataset("sst2", limit=5)
    assert read_qnli("heldout", limit=5) == load_dataset("qnli", limit=5)
    assert read_imdb(limit=3) == load_dataset("imdb", "test", limit=3)
    assert read_boolq("val", limit=3) == load_dataset("boolq", limit=3)
    assert [e.row for e in read_sst2("dev")] == list(range(872))


@staged
@pytest.mark.parametrize("name", ["mnli", "qnli"])
def test_the_halves_alternate_rows_and_are_disjoint(name):
    dev = load_dataset(name, "dev")
    train, heldout = load_dataset(name, "train"), load_dataset(name, "heldout")
    assert [e.row for e in dev] == list(range(len(dev)))
    assert [e.row for e in train] == list(range(0, len(dev), 2))
    assert [e.row for e in heldout] == list(range(1, len(dev), 2))
    assert not {e.row for e in train} & {e.row for e in heldout}
    assert len(train) + len(heldout) == len(dev)
    for example in heldout[:100] + train[:100]:
        assert (dev[example.row].text, dev[example.row].label) == (example.text, example.label)
    # limit keeps the first examples of the half, not of the file
    assert [e.row for e in load_dataset(name, "heldout", limit=3)] == [1, 3, 5]


@staged
def test_boolq_evidence_is_the_documents_tokens_and_the_default_passage():
    """SOURCES.md: every evidence span equals the document's tokens start:end."""
    folder = ROOT / "boolq_eraser"
    rows = {}
    for split, file in (
        ("val", "val.jsonl"),
        ("test", "test.jsonl"),
        ("test_original", "test_original_2817.jsonl"),
    ):
        lines = (folder / file).read_text().splitlines()
        rows[split] = [json.loads(line) for line in lines[::40]]  # a sample of every split
    needed = {
        e["docid"] for split in rows.values() for r in split for g in r["evidences"] for e in g
    }
    documents = {}
    with gzip.open(folder / "docs_val_test.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            if doc["docid"] in needed:
                documents[doc["docid"]] = doc["document"].split()
    checked = 0
    for split_rows in rows.values():
        for row in split_rows:
            for evidence in (e for group in row["evidences"] for e in group):
                tokens = documents[evidence["docid"]][
                    evidence["start_token"] : evidence["end_token"]
                ]
                assert " ".join(tokens) == evidence["text"]
                checked += 1
    assert checked > 150
    # the default passage is the single evidence span; the question is the query
    val = load_dataset("boolq", "val")
    for index, row in zip(range(0, len(val), 40), rows["val"], strict=True):
        assert val[index].row == index
        assert val[index].text == (row["query"], row["evidences"][0][0]["text"])


@staged
def test_boolq_document_passage_holds_the_evidence():
    evidence = load_dataset("boolq", "val", limit=5)
    whole = load_dataset("boolq", "val", limit=5, passage="document")
    for short, long in zip(evidence, whole, strict=True):
        assert short.text[0] == long.text[0] and short.label == long.label
        assert short.text[1] in long.text[1] and len(long.text[1]) > len(short.text[1])


@staged
def test_boolq_window_marks_the_human_rationale_among_its_context():
    evidence = load_dataset("boolq", "val", limit=5)
    window = load_dataset("boolq", "val", limit=5, passage="window", context=7)
    for plain, wide in zip(evidence, window, strict=True):
        question, passage = wide.text
        words = [*question.split(), *passage.split()]
        marked = [words[i] for i in wide.evidence]
        assert " ".join(marked) == plain.text[1]  # the rationale is the evidence, in order
        assert wide.evidence[0] >= len(question.split())  # the question is never rationale
        assert len(passage.split()) <= len(plain.text[1].split()) + 14
    assert any(
        len(w.text[1].split()) > len(p.text[1].split())
        for p, w in zip(evidence, window, strict=True)
    )
    with pytest.raises(InvalidOptionError, match="context must be"):
        load_dataset("boolq", "val", limit=1, passage="window", context=-1)


@staged
def test_boolq_overlapping_spans_are_joined_once_in_document_order():
    lines = (ROOT / "boolq_eraser" / "test.jsonl").read_text().splitlines()
    index, row = next(
        (i, r) for i, r in enumerate(map(json.loads, lines)) if len(r["evidences"]) > 1
    )
    spans = sorted(
        (e["start_token"], e["end_token"], e["text"]) for g in row["evidences"] for e in g
    )
    tokens = {}
    for start, _, text in spans:
        for position, token in enumerate(text.split(), start=start):
            tokens[position] = token
    example = load_dataset("boolq", "test", limit=index + 1)[index]
    assert example.text[1] == " ".join(tokens[p] for p in sorted(tokens))
    assert len(example.text[1].split()) == len(tokens)


# ---------------------------------------------------------------- users' own files


def test_user_files_of_every_format(tmp_path):
    sst2 = tmp_path / "sst2.tsv"
    sst2.write_text('sentence\tlabel\n"quoted" film\t1\ndull\t0\n')
    assert load_dataset("sst2", path=sst2) == [Example('"quoted" film', 1), Example("dull", 0)]
    stsb = tmp_path / "stsb.tsv"
    stsb.write_text("index\tsentence1\tsentence2\tscore\n0\ta man\ta person\t4.2\n")
    assert load_dataset("stsb", "train", path=stsb) == [Example(("a man", "a person"), 4.2)]

    mnli = write_jsonl(
        tmp_path / "my_dev.jsonl",
        [
            {"premise": f"p{i}", "hypothesis": f"h{i}", "label": label}
            for i, label in enumerate(["neutral", "Entailment", "contradiction", 1])
        ],
    )
    heldout = load_dataset("mnli", "heldout", path=mnli)
    assert [(e.text, e.label, e.row) for e in heldout] == [
        (("p1", "h1"), 0, 1),
        (("p3", "h3"), 1, 3),
    ]
    glue_mnli = tmp_path / "dev_matched.tsv"
    glue_mnli.write_text(
        "index\tsentence1\tsentence2\tlabel1\tgold_label\n0\ta\tb\tneutral\tneutral\n"
    )
    assert load_dataset("mnli", "dev", path=glue_mnli) == [Example(("a", "b"), 1)]

    qnli = tmp_path / "qnli.tsv"
    qnli.write_text(
        "index\tquestion\tsentence\tlabel\n0\tq0?\ts0\tentailment\n1\tq1?\ts1\tnot_entailment\n"
    )
    assert [e.label for e in load_dataset("qnli", "dev", path=qnli)] == [0, 1]
    assert [e.row for e in load_dataset("qnli", "train", path=qnli)] == [0]

    imdb = write_jsonl(
        tmp_path / "reviews.jsonl",
        [{"text": "great<br />fun", "label": 1}, {"text": "bad", "label": "negative"}],
    )
    assert load_dataset("imdb", path=imdb, limit=5) == [
        Example("great<br />fun", 1),
        Example("bad", 0),
    ]


def _eraser(folder: Path, docs: str) -> Path:
    """A tiny ERASER BoolQ folder; ``docs`` is "folder", "jsonl" or "gz"."""
    folder.mkdir()
    document = "Title .\nThe cat sat on the mat .\nIt was warm ."
    rows = [
        {
            "annotation_id": 1,
            "classification": "True",
            "docids": ["d1"],
            "evidences": [
                [
                    {
                        "docid": "d1",
                        "start_token": 2,
                        "end_token": 8,
                        "text": "The cat sat on the mat",
                    }
                ]
            ],
            "query": "did the cat sit",
            "query_type": None,
        },
        {
            "annotation_id": 2,
            "classification": "False",
            "evidences": [  # two overlapping groups, out of order
                [{"docid": "d1", "start_token": 9, "end_token": 12, "text": "It was warm"}],
                [{"docid": "d1", "start_token": 6, "end_token": 10, "text": "the mat . It"}],
            ],
            "query": "was it cold",
        },
    ]
    write_jsonl(folder / "val.jsonl", rows)
    write_jsonl(folder / "test_original.jsonl", rows[:1])
    if docs == "folder":
        (folder / "docs").mkdir()
        (folder / "docs" / "d1").write_text(document)
    else:
        content = json.dumps({"docid": "d1", "document": document}) + "\n"
        if docs == "gz":
            (folder / "docs.jsonl.gz").write_bytes(gzip.compress(content.encode()))
        else:
            (folder / "docs.jsonl").write_text(content)
    return folder


@pytest.mark.parametrize("docs", ["folder", "jsonl", "gz"])
def test_user_eraser_boolq_folder(tmp_path, docs):
    folder = _eraser(tmp_path / "boolq", docs)
    val = load_dataset("boolq", "val", path=folder)
    assert [(e.text, e.label, e.row) for e in val] == [
        (("did the cat sit", "The cat sat on the mat"), 1, 0),
        (("was it cold", "the mat . It was warm"), 0, 1),
    ]
    whole = "Title . The cat sat on the mat . It was warm ."
    assert [e.text[1] for e in load_dataset("boolq", "val", path=folder, passage="document")] == [
        whole
    ] * 2
    assert load_dataset("boolq", "test_original", path=folder)[0].label == 1
    assert (
        read_boolq("val", path=folder / "val.jsonl", passage="document", limit=1)[0].text[1]
        == whole
    )


def test_a_name_that_is_a_file_is_read_as_a_user_file(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("text,label\ngood,positive\nbad,negative\n")
    assert load_dataset(str(path)) == [Example("good", "positive"), Example("bad", "negative")]
    assert [e.row for e in load_dataset(str(path), limit=1)] == [0]
    info = dataset_info(str(path))
    assert (info.task, info.labels, info.fields) == (
        "classification",
        ("positive", "negative"),
        ("text",),
    )
    scores = tmp_path / "scores.tsv"
    scores.write_text("sentence1\tsentence2\tscore\na\tb\t2.5\n")
    assert dataset_info(str(scores)).task == "regression"
    with refused(InvalidOptionError, "no splits"):
        load_dataset(str(path), "dev")


# ---------------------------------------------------------------- refusals


def test_missing_staged_file_says_how_to_point_at_the_data(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    for name in list_datasets():
        with refused(InvalidInputError, re.escape(str(tmp_path)), DATA_ENV, "path="):
            load_dataset(name)
    with refused(InvalidInputError, "my_dev.jsonl", "not found"):
        load_dataset("mnli", path=tmp_path / "my_dev.jsonl")
    with refused(InvalidInputError, "not found", "ERASER BoolQ folder"):
        load_dataset("boolq", path=tmp_path / "nowhere")
    with refused(InvalidInputError, "test.jsonl", "val.jsonl"):
        load_dataset("boolq", "test", path=_eraser(tmp_path / "boolq", "jsonl"))


def test_missing_column_names_file_column_and_header(tmp_path):
    qnli = tmp_path / "qnli.tsv"
    qnli.write_text("index\tquestion\ttext\tlabel\n0\tq\ts\tentailment\n")
    with refused(
        InvalidFileError, "qnli.tsv", "'question' and 'sentence'", "index, question, text, label"
    ):
        load_dataset("qnli", path=qnli)
    sst2 = tmp_path / "sst2.tsv"
    sst2.write_text("sentence\tgold\nfine\t1\n")
    with refused(InvalidFileError, "sst2.tsv", "'label'", "sentence, gold"):
        load_dataset("sst2", path=sst2)
    imdb = write_jsonl(tmp_path / "imdb.jsonl", [{"review": "ok", "stars": 1}])
    with refused(InvalidFileError, "imdb.jsonl, line 1", "'label'", "review, stars"):
        load_dataset("imdb", path=imdb)
    boolq = write_jsonl(tmp_path / "val.jsonl", [{"question": "q", "answer": True}])
    with refused(InvalidFileError, "val.jsonl, line 1", "'query'", "question, answer"):
        load_dataset("boolq", path=boolq)


def test_unknown_label_names_file_line_value_and_known_labels(tmp_path):
    mnli = write_jsonl(
        tmp_path / "dev.jsonl",
        [
            {"premise": "a", "hypothesis": "b", "label": "neutral"},
            {"premise": "a", "hypothesis": "b", "label": "-"},
        ],
    )
    with refused(
        InvalidFileError, "dev.jsonl, line 2", "'-'", "entailment.*neutral.*contradiction"
    ):
        load_dataset("mnli", "dev", path=mnli)
    sst2 = tmp_path / "sst2.tsv"
    sst2.write_text("sentence\tlabel\ngood\t1\nodd\t2\n")
    with refused(InvalidFileError, "sst2.tsv, line 3", "2", "negative.*positive"):
        load_dataset("sst2", path=sst2)
    boolq = _eraser(tmp_path / "boolq", "jsonl")
    rows = [json.loads(line) for line in (boolq / "val.jsonl").read_text().splitlines()]
    rows[1]["classification"] = "Maybe"
    write_jsonl(boolq / "val.jsonl", rows)
    with refused(InvalidFileError, "val.jsonl, line 2", "'Maybe'", "false.*true"):
        load_dataset("boolq", path=boolq)


def test_unknown_split_name_limit_and_option():
    with refused(InvalidInputError, "mnli has no split 'test'", "train, heldout, dev"):
        load_dataset("mnli", "test")
    with refused(InvalidInputError, "no split 'validation'", "train, dev"):
        read_sst2("validation")
    with refused(
        InvalidInputError,
        "unknown data set 'sst-2'",
        "sst2, mnli",
        "hub:",
        "path of an existing file",
    ):
        load_dataset("sst-2")
    with refused(InvalidInputError, "unknown data set"):
        dataset_info("glue")
    for limit in (0, -3):
        with refused(InvalidOptionError, "at least 1", str(limit)):
            load_dataset("sst2", limit=limit)
    for limit in (1.5, True, "10"):
        with refused(InvalidOptionError, "whole number"):
            load_dataset("sst2", limit=limit)
    with refused(InvalidOptionError, "takes no option 'passage'"):
        load_dataset("sst2", passage="evidence")
    with refused(InvalidOptionError, "'evidence', 'document'", "'paragraph'"):
        load_dataset("boolq", passage="paragraph")


def test_boolq_documents_that_do_not_fit_are_refused(tmp_path):
    folder = _eraser(tmp_path / "boolq", "folder")
    (folder / "docs" / "d1").write_text("Another text entirely , with other words in it .")
    with refused(InvalidFileError, "line 1", "not tokens 2:8", "documents do not belong"):
        load_dataset("boolq", path=folder, passage="document")
    (folder / "docs" / "d1").unlink()
    with refused(InvalidFileError, "document d1 not found"):
        load_dataset("boolq", path=folder, passage="document")
    (folder / "docs").rmdir()
    with refused(InvalidInputError, "passage='document' needs a docs/ folder"):
        load_dataset("boolq", path=folder, passage="document")
    assert len(load_dataset("boolq", path=folder)) == 2  # the evidence needs no documents


# ---------------------------------------------------------------- hub: names


class _ClassLabel:
    def __init__(self, names):
        self.names = names


class _Value:
    def __init__(self, dtype):
        self.dtype = dtype


class _Dataset:
    def __init__(self, rows, features):
        self.rows, self.features = rows, features
        self.column_names = list(features)

    def __iter__(self):
        return iter(self.rows)


@pytest.fixture
def fake_datasets(monkeypatch):
    """A stand-in for the HF datasets library holding glue/sst2 and glue/stsb."""
    tables = {
        ("glue", "sst2"): (
            {
                "sentence": _Value("string"),
                "label": _ClassLabel(["negative", "positive"]),
                "idx": _Value("int32"),
            },
            {
                "validation": [
                    {"sentence": "fine ", "label": 1, "idx": 0},
                    {"sentence": "bad", "label": 0, "idx": 1},
                ],
                "test": [{"sentence": "unknown", "label": -1, "idx": 0}],
            },
        ),
        ("glue", "stsb"): (
            {
                "sentence1": _Value("string"),
                "sentence2": _Value("string"),
                "label": _Value("float32"),
            },
            {"train": [{"sentence1": "a", "sentence2": "b", "label": 3.5}]},
        ),
    }
    calls = []

    def lookup(name, config):
        if (name, config) not in tables:
            raise FileNotFoundError(f"Dataset '{name}' doesn't exist on the Hub")
        return tables[(name, config)]

    def load_dataset(name, config=None, *, split, **options):
        calls.append((name, config, split, options))
        features, splits = lookup(name, config)
        return _Dataset(splits[split], features)

    module = types.ModuleType("datasets")
    module.load_dataset = load_dataset
    module.get_dataset_split_names = lambda name, config=None, **_: list(lookup(name, config)[1])
    module.load_dataset_builder = lambda name, config=None, **_: types.SimpleNamespace(
        info=types.SimpleNamespace(features=lookup(name, config)[0])
    )
    monkeypatch.setitem(sys.modules, "datasets", module)
    return calls


def test_hub_names_go_through_the_datasets_library(fake_datasets):
    examples = load_dataset("hub:glue/sst2", "validation", revision="main")
    assert examples == [Example("fine", 1), Example("bad", 0)]
    assert [e.row for e in examples] == [0, 1]
    assert fake_datasets[-1] == ("glue", "sst2", "validation", {"revision": "main"})
    assert load_dataset("hub:glue/sst2", limit=1) == [Example("fine", 1)]  # validation by default
    assert load_dataset("hub:glue/sst2", "test") == [Example("unknown", None)]
    assert load_dataset("hub:glue/stsb") == [Example(("a", "b"), 3.5)]  # the only split
    info = dataset_info("hub:glue/sst2")
    assert (info.task, info.labels, info.fields, info.default_split) == (
        "classification",
        ("negative", "positive"),
        ("sentence",),
        "validation",
    )
    assert dataset_info("hub:glue/stsb").task == "regression"
    with refused(InvalidInputError, "no split 'dev'", "validation, test"):
        load_dataset("hub:glue/sst2", "dev")
    with refused(InvalidInputError, "hub:glue/cola", "doesn't exist", "HF cache"):
        load_dataset("hub:glue/cola")
    with refused(InvalidInputError, "not a hub data set name"):
        load_dataset("hub:a/b/c/d")


def test_hub_without_the_library_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # an import of it fails
    with refused(InvalidInputError, re.escape("pip install 'normxlogit[hub]'")):
        load_dataset("hub:glue/sst2")


# ------------------------------------------------------------- generation prompts
def test_tellmewhy_prompts_are_narrative_then_question():
    rows = [json.loads(line) for line in (ROOT / "tellmewhy" / "annotated_test_464.jsonl").open()]
    test = load_dataset("tellmewhy")
    assert len(test) == 464 == len(rows)
    assert test[0].text == f"{rows[0]['narrative']} {rows[0]['question']}"
    assert all(e.label is None for e in test)
    reagent = load_dataset("tellmewhy", "reagent")
    assert len(reagent) == 20
    assert reagent[0].text.startswith("Jay took a trip to his old college.")
    assert reagent[0].text.endswith("Why did He go ?")
    assert all("\t" not in e.text for e in reagent)  # one line separates them by a tab


def test_wikibio_prompts_are_detokenised_first_sentences():
    for split in ("test", "valid", "train"):
        assert len(load_dataset("wikibio", split)) == 100
    (first,) = load_dataset("wikibio", limit=1)
    assert first.text == (
        "leonard shenoff randle (born february 12, 1949) is a former major league baseball player."
    )
    assert first.label is None and first.row == 0


def test_generation_prompt_files_of_a_user(tmp_path):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("one story . why ?\n\nanother\n")
    with pytest.raises(InvalidFileError, match="line 2: a blank line"):
        load_dataset("tellmewhy", "reagent", path=prompts)
    summary = tmp_path / "bio.summary"
    summary.write_text("ada lovelace -lrb- 1815 -- 1852 -rrb- was a mathematician .\n")
    assert load_dataset("wikibio", path=summary)[0].text == (
        "ada lovelace (1815 -- 1852) was a mathematician."
    )
    rows = tmp_path / "why.jsonl"
    rows.write_text(json.dumps({"narrative": "A b.", "story": "x"}) + "\n")
    with pytest.raises(InvalidFileError, match="question"):
        load_dataset("tellmewhy", path=rows)
