"""BLiMP minimal pairs: target words, evidence from the parse or the paradigm's rule."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from normxlogit.common.errors import InvalidFileError, InvalidInputError, InvalidOptionError
from normxlogit.data import BlimpPair, data_root, evidence_report, read_blimp
from normxlogit.data.blimp import PAPER_PARADIGMS, PARADIGMS, SPACY_PIPELINE, _from_rule, _role

BLIMP = data_root() / "blimp"
HAND_CHECKED = json.loads(
    (Path(__file__).parent.parent / "data" / "blimp_hand_checked.json").read_text()
)
staged = pytest.mark.skipif(
    not (BLIMP / "anaphor_number_agreement.jsonl").is_file(), reason=f"no BLiMP in {BLIMP}"
)


def write(folder: Path, paradigm: str, *pairs: tuple[str, str], **extra) -> Path:
    """A paradigm file ``<paradigm>.jsonl`` with the (good, bad) pairs, BLiMP's keys."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(
            {"sentence_good": g, "sentence_bad": b, "UID": paradigm, "pairID": str(i)} | extra
        )
        for i, (g, b) in enumerate(pairs)
    ]
    path = folder / f"{paradigm}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


# ---------------------------------------------------------------- hand-checked pairs


@pytest.fixture(scope="module")
def hand_checked(tmp_path_factory) -> list[BlimpPair]:
    """The hand-annotated pairs (tests/data/blimp_hand_checked.json), read from files
    laid out like the BLiMP release."""
    folder = tmp_path_factory.mktemp("blimp")
    for paradigm in PARADIGMS:
        rows = [row for row in HAND_CHECKED if row["paradigm"] == paradigm]
        lines = [
            {"sentence_good": r["good"], "sentence_bad": r["bad"], "UID": paradigm}
            | {"pairID": str(r["pair_id"])}
            for r in rows
        ]
        (folder / f"{paradigm}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return read_blimp(folder)


def test_the_hand_checked_sample_covers_every_paradigm():
    counts = {p: sum(r["paradigm"] == p for r in HAND_CHECKED) for p in PARADIGMS}
    assert len(counts) == 8 and min(counts.values()) >= 5, counts
    assert set(PAPER_PARADIGMS) <= set(PARADIGMS)


@pytest.mark.parametrize(
    "expected", HAND_CHECKED, ids=[f"{r['paradigm']}-{r['pair_id']}" for r in HAND_CHECKED]
)
def test_hand_checked_target_and_evidence(hand_checked, expected):
    pair = next(
        p
        for p in hand_checked
        if (p.paradigm, p.pair_id) == (expected["paradigm"], expected["pair_id"])
    )
    words = pair.good.split()
    assert (pair.good, pair.bad) == (expected["good"], expected["bad"])
    assert pair.target == expected["target"], expected["note"]
    assert (pair.target_word, pair.foil_word) == (expected["target_word"], expected["foil_word"])
    assert pair.evidence == tuple(expected["evidence"]), (expected["note"], pair)
    assert [words[i] for i in pair.evidence] == expected["evidence_words"]
    assert pair.target not in pair.evidence
    assert pair.source in ("parse", "rule")


def test_pairs_come_in_file_order_and_paradigms_by_name(hand_checked):
    order = [(p.paradigm, p.pair_id) for p in hand_checked]
    assert order == sorted(order)


# ---------------------------------------------------------------- the staged files


@pytest.fixture(scope="module")
def first_200() -> list[BlimpPair]:
    return read_blimp(BLIMP, limit=200)


@staged
def test_every_staged_pair_has_a_target_and_evidence(first_200):
    assert len(first_200) == 8 * 200
    for pair in first_200:
        good, bad = pair.good.split(), pair.bad.split()
        differ = [i for i, (g, b) in enumerate(zip(good, bad, strict=True)) if g != b]
        assert differ == [pair.target]
        assert pair.target_word == good[pair.target].strip(".")
        assert pair.foil_word == bad[pair.target].strip(".")
        assert pair.evidence and pair.target not in pair.evidence, pair
        assert all(0 <= i < len(good) for i in pair.evidence)


@staged
def test_most_evidence_comes_from_the_parse(first_200):
    """Measured on these 200 pairs: 92-100 % per paradigm (en_core_web_sm 3.8.0)."""
    report = evidence_report(first_200)
    assert list(report) == sorted(PARADIGMS)
    for paradigm, counts in report.items():
        assert counts["pairs"] == 200
        assert counts["parse"] + counts["rule"] + counts["none"] == counts["pairs"]
        assert counts["none"] == 0, paradigm
        assert counts["parse"] >= 0.85 * counts["pairs"], (paradigm, counts)


@staged
def test_the_parse_and_the_template_rule_agree_where_the_parse_is_used(first_200):
    """Two independent ways to the evidence: where the parse fits, the rule must match."""
    for pair in (p for p in first_200 if p.source == "parse"):
        words = pair.good.split()
        rule = _from_rule(_role(pair.paradigm, words[pair.target]), words, pair.target)
        assert pair.evidence == (rule,), pair


@staged
def test_paradigms_select_files_in_the_order_asked_and_limit_counts_per_paradigm():
    chosen = ["regular_plural_subject_verb_agreement_1", "anaphor_number_agreement"]
    pairs = read_blimp(BLIMP, paradigms=chosen, limit=3)
    assert [(p.paradigm, p.pair_id) for p in pairs] == [
        (name, i) for name in chosen for i in range(3)
    ]
    single = read_blimp(BLIMP / "determiner_noun_agreement_2.jsonl", limit=2)
    assert [p.good for p in single] == [
        "Some dog stunned this committee.",
        "Tracy passed these art galleries.",
    ]
    assert read_blimp(BLIMP, paradigms="determiner_noun_agreement_2", limit=2) == single


# ---------------------------------------------------------------- small files


def test_a_single_file_and_the_report(tmp_path):
    path = write(
        tmp_path,
        "anaphor_number_agreement",
        ("Susan revealed herself.", "Susan revealed themselves."),
        ("The men hurt themselves.", "The men hurt itself."),
    )
    pairs = read_blimp(path)
    assert [(p.target_word, p.foil_word, p.evidence) for p in pairs] == [
        ("herself", "themselves", (0,)),
        ("themselves", "itself", (1,)),
    ]
    report = evidence_report(pairs)
    assert report == {
        "anaphor_number_agreement": {
            "pairs": 2,
            "parse": report["anaphor_number_agreement"]["parse"],
            "rule": 2 - report["anaphor_number_agreement"]["parse"],
            "none": 0,
        }
    }
    assert evidence_report([]) == {}


def test_a_differing_word_the_paradigm_does_not_agree_on_gets_no_evidence(tmp_path):
    path = write(tmp_path, "anaphor_number_agreement", ("Susan saw him.", "Susan saw them."))
    (pair,) = read_blimp(path)
    assert (pair.target, pair.evidence, pair.source) == (2, (), "none")


def test_a_determiner_that_differs_in_a_noun_paradigm_takes_the_noun(tmp_path):
    path = write(
        tmp_path, "determiner_noun_agreement_1", ("Jill saw these dogs.", "Jill saw this dogs.")
    )
    (pair,) = read_blimp(path)
    assert (pair.target_word, pair.evidence) == ("these", (3,))


def test_without_uid_the_file_name_names_the_paradigm(tmp_path):
    path = tmp_path / "regular_plural_subject_verb_agreement_2.jsonl"
    path.write_text(json.dumps({"sentence_good": "The boys run.", "sentence_bad": "The boy run."}))
    (pair,) = read_blimp(path)
    assert (pair.paradigm, pair.pair_id, pair.evidence) == (
        "regular_plural_subject_verb_agreement_2",
        0,
        (2,),
    )


# ---------------------------------------------------------------- errors


def test_missing_paths_are_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="not found; give a folder"):
        read_blimp(tmp_path / "nowhere")
    (tmp_path / "other.jsonl").write_text("{}\n")
    with pytest.raises(InvalidInputError, match="holds no BLiMP paradigm file.*other.jsonl"):
        read_blimp(tmp_path)
    write(tmp_path, "anaphor_number_agreement", ("Al saw himself.", "Al saw themselves."))
    with pytest.raises(InvalidInputError, match="no file determiner_noun_agreement_2.jsonl"):
        read_blimp(tmp_path, paradigms=["determiner_noun_agreement_2"])


def test_unknown_paradigms_list_the_known_ones(tmp_path):
    with pytest.raises(InvalidInputError, match="unknown BLiMP paradigm 'anaphor'.*anaphor_number"):
        read_blimp(tmp_path, paradigms=["anaphor"])
    path = write(tmp_path, "island_effects", ("Who left?", "Who lefts?"))
    with pytest.raises(InvalidFileError, match="'island_effects'.*known ones are anaphor"):
        read_blimp(path)


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        (("Al saw himself.", "Al saw him self."), "3 words and sentence_bad 4"),
        (("Al saw himself.", "Al saw himself."), "differ nowhere"),
        (("Al saw himself.", "Al sees themselves."), r"differ in 2 words \(positions \[1, 2\]\)"),
    ],
)
def test_pairs_that_are_not_minimal_are_refused(tmp_path, pair, message):
    path = write(tmp_path, "anaphor_number_agreement", pair)
    with pytest.raises(InvalidFileError, match=f"line 1: .*{message}"):
        read_blimp(path)


def test_lines_without_sentences_are_refused(tmp_path):
    path = tmp_path / "anaphor_number_agreement.jsonl"
    path.write_text(json.dumps({"sentence_good": "Al saw himself.", "UID": path.stem}) + "\n")
    with pytest.raises(InvalidFileError, match="line 1: no column 'sentence_bad'"):
        read_blimp(path)
    path.write_text(json.dumps({"sentence_good": None, "sentence_bad": "x"}) + "\n")
    with pytest.raises(InvalidFileError, match="'sentence_good' is null"):
        read_blimp(path)


def test_bad_options_are_refused(tmp_path):
    path = write(tmp_path, "anaphor_number_agreement", ("Al saw himself.", "Al saw themselves."))
    with pytest.raises(InvalidOptionError, match="limit must be at least 1"):
        read_blimp(path, limit=0)
    with pytest.raises(InvalidInputError, match="paradigms= is empty"):
        read_blimp(path, paradigms=[])
    with pytest.raises(InvalidInputError, match="'no_such_pipeline' is not installed.*install"):
        read_blimp(path, pipeline="no_such_pipeline")


def test_the_default_pipeline_is_the_one_reagent_uses():
    from normxlogit.methods.reagent.samplers import SPACY_PIPELINE as REAGENT_PIPELINE

    assert SPACY_PIPELINE == REAGENT_PIPELINE


def test_importing_the_data_package_does_not_import_spacy():
    code = "import sys, normxlogit.data; print([m for m in ('spacy', 'torch') if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
