"""Evidence alignment end to end: BLiMP pairs as masked-LM inputs, evidence on tokens,
evidence from a user's file, the masked-LM trainer, and the bench's per-layer experiment
on a tiny masked LM.

The BLiMP reader itself (targets, parsed evidence, the hand-checked sample) is tested in
test_blimp.py; here pairs are built by hand where the parse does not matter.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers as T

import normxlogit
from normxlogit import training
from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.report import write_report
from normxlogit.bench.results import experiment_results
from normxlogit.common.errors import InvalidFileError, InvalidInputError
from normxlogit.data import Example, read_examples
from normxlogit.data.blimp import BlimpPair
from normxlogit.data.masked_pairs import mask_pair, split_pairs, token_evidence, token_words

from ..conftest import SHARED_DATA, SMALL, fresh_tokenizer, tokenizer


def _pair(good: str, bad: str, target: int, evidence: tuple[int, ...], paradigm="p", pid=0):
    words = good.split()
    return BlimpPair(
        paradigm,
        pid,
        good,
        bad,
        target,
        words[target].strip("."),
        bad.split()[target],
        evidence,
        "parse",
    )


def test_the_one_differing_token_is_masked_even_inside_a_word():
    pair = _pair(
        "A niece of most senators hasn't fled.", "A niece of most senators haven't fled.", 5, (1,)
    )
    item = mask_pair(pair, tokenizer())
    assert item is not None
    assert item.text == "A niece of most senators [MASK]'t fled."
    assert (item.target_token, item.foil_token) == ("hasn", "haven")
    assert item.target_id == tokenizer().convert_tokens_to_ids("hasn")
    # the masked text keeps the words, so the evidence indices still name "niece"
    assert item.text.split()[1] == "niece"


def test_a_pair_whose_words_split_differently_cannot_be_one_mask():
    pair = _pair("Those waitress left.", "Those waitresses left.", 1, (0,))
    assert mask_pair(pair, tokenizer()) is None  # waitress vs waitress ##es


def test_evidence_words_cover_every_piece_of_the_word():
    text = "The waitresses of Churchill [MASK] left."
    words = token_words(tokenizer(), text)
    tokens = tokenizer().convert_ids_to_tokens(tokenizer()(text)["input_ids"])
    assert words[0] is None and words[-1] is None  # [CLS], [SEP]
    vector = token_evidence(tokenizer(), text, [1])
    assert len(vector) == len(tokens)
    assert [t for t, v in zip(tokens, vector, strict=True) if v] == ["waitress", "##es"]
    with pytest.raises(InvalidInputError, match="out of range.*6 words"):
        token_evidence(tokenizer(), text, [6])


def test_pairs_split_into_even_and_odd_within_each_paradigm():
    pairs = [_pair("a b.", "a c.", 1, (0,), paradigm=p, pid=i) for p in "xy" for i in range(5)]
    train, heldout = split_pairs(pairs, "train"), split_pairs(pairs, "heldout")
    assert [(p.paradigm, p.pair_id) for p in train] == [
        ("x", 0),
        ("x", 2),
        ("x", 4),
        ("y", 0),
        ("y", 2),
        ("y", 4),
    ]
    assert len(heldout) == 4 and not set(train) & set(heldout)
    assert split_pairs(pairs, "all") == pairs
    with pytest.raises(InvalidInputError, match="no split 'dev'"):
        split_pairs(pairs, "dev")


# ------------------------------------------------------------- a user's evidence


def test_a_file_gives_evidence_as_word_indices_or_a_mask(tmp_path):
    jsonl = tmp_path / "e.jsonl"
    rows = [
        {"text": "the keys to the cabinet are here", "evidence": [1]},
        {"text": "a dog barks", "evidence_mask": [0, 1, 0]},
    ]
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    first, second = read_examples(jsonl)
    assert first.evidence == (1,) and second.evidence == (1,)
    tsv = tmp_path / "e.tsv"
    tsv.write_text("sentence\tevidence\nthe keys to the cabinet are\t1,4\nno evidence here\t\n")
    given, none = read_examples(tsv)
    assert given.evidence == (1, 4) and none.evidence is None


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"text": "a dog barks", "evidence": [3]}, "index 3 is out of range.*3 .*words"),
        ({"text": "a dog barks", "evidence_mask": [0, 1]}, "one 0 or 1 per .*word.*3 words"),
        ({"text": "a dog barks", "evidence": "one"}, "whole word indices"),
        ({"text": "a dog", "evidence": [0], "evidence_mask": [1, 0]}, "one column"),
    ],
)
def test_bad_evidence_in_a_file_names_the_line_and_the_fix(tmp_path, row, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(InvalidFileError, match=message):
        read_examples(path)


# ------------------------------------------------------------- a tiny masked LM


@pytest.fixture(scope="module")
def tiny_mlm(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-mlm")
    torch.manual_seed(0)
    T.BertForMaskedLM(T.BertConfig(vocab_size=len(tokenizer()), **SMALL)).eval().save_pretrained(
        folder
    )
    fresh_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def blimp_folder(tmp_path_factory) -> Path:
    """The first 6 pairs of two of the paper's paradigms."""
    folder = tmp_path_factory.mktemp("blimp")
    for name in ("anaphor_number_agreement", "distractor_agreement_relational_noun"):
        lines = (SHARED_DATA / "blimp" / f"{name}.jsonl").read_text().splitlines()[:6]
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_the_blimp_data_set_is_built_for_the_models_tokenizer(tiny_mlm, blimp_folder):
    from normxlogit.data import load_dataset
    from normxlogit.loading import load_tokenizer

    tokenizer = load_tokenizer(str(tiny_mlm))
    examples = load_dataset(
        "blimp",
        "all",
        path=str(blimp_folder),
        tokenizer=tokenizer,
        paradigms=["anaphor_number_agreement"],
    )
    assert len(examples) == 6
    first = examples[0]
    assert first.text == "Susan revealed [MASK]." and first.label == "herself"
    assert first.foil == "themselves" and first.evidence == (0,)
    # the paradigms take turns, so that the first N cover them all; heldout = odd pairs
    both = load_dataset("blimp", path=str(blimp_folder), tokenizer=tokenizer, limit=2)
    assert [(e.row, e.label) for e in both] == [(1, "herself"), (1, "hasn")]
    for missing in ({}, {"tokenizer": str(tiny_mlm)}):  # the data layer never loads a model
        with pytest.raises(Exception, match="needs tokenizer="):
            load_dataset("blimp", path=str(blimp_folder), **missing)


def test_evaluate_scores_evidence_per_layer_with_the_mask_left_out(tiny_mlm):
    model = normxlogit.load(str(tiny_mlm))
    text = "Susan revealed [MASK]."
    explanation = model.explain(text, method="normxlogit", target="herself", layer="all")
    evidence = token_evidence(model.tokenizer, text, [0])
    result = normxlogit.evaluate(
        model, {"normxlogit": [explanation]}, ["evidence_ap", "evidence_dot"], evidence=[evidence]
    )
    frame = result.frame
    assert sorted(frame["x"].dropna().unique()) == list(range(model.num_layers + 1))
    assert frame[frame["metric"] == "evidence_ap"]["value"].between(0, 1).all()
    # the raw dot product is the evidence token's own score: Susan at each layer
    dot = frame[frame["metric"] == "evidence_dot"].sort_values("x")["value"].to_numpy()
    susan = explanation.tokens.index("susan")
    np.testing.assert_allclose(dot, explanation.scores_3d()[:, susan, 0], rtol=1e-5)


def test_the_evidence_bench_runs_per_layer_and_draws_its_figures(tiny_mlm, blimp_folder, tmp_path):
    config = tmp_path / "evidence.toml"
    config.write_text(
        f"""
title = "evidence"
metrics = ["evidence_dot", "evidence_ap"]
[protocol]
dot_product = "softmax"
[[methods]]
name = "normxlogit"
target = "label"
layer = "all"
[[methods]]
name = "logat"
label = "LogAt(foil)"
target = "foil"
layer = "all"
[[methods]]
name = "gradient_x_input"
target = "label"
[[methods]]
name = "attention"
layer = "all"
[[methods]]
name = "gradient_x_input"
label = "contrastive"
target = "label"
contrast = "foil"
[[experiments]]
name = "tiny"
model = "{tiny_mlm}"
dataset = "blimp"
split = "heldout"
path = "{blimp_folder}"
[[plots]]
name = "ap"
kind = "layers"
metric = "evidence_ap"
"""
    )
    loaded = load_config(config)
    experiment = loaded.experiments[0]
    assert experiment.dataset.options["model"] == str(tiny_mlm)  # inputs depend on it
    normx, foil = experiment.methods[:2]
    assert (normx.target, normx.layer, foil.target) == ("label", "all", "foil")
    assert normx.key != normx.__class__(normx.name, normx.options).key
    with ResultStore(tmp_path / "store.sqlite") as store:
        run_bench(loaded, store)
        (result,) = experiment_results(loaded, store)
        write_report(loaded, store, tmp_path / "report")
    frame = result.frame
    assert set(frame["method"]) == {
        "normxlogit", "LogAt(foil)", "gradient_x_input", "attention", "contrastive",
    }  # fmt: skip
    assert frame["instance"].nunique() == 6  # the odd pairs of two paradigms, 3 each
    layered = frame[frame["method"] == "normxlogit"]
    assert sorted(layered["x"].unique()) == [0, 1, 2]
    assert frame[frame["method"] == "gradient_x_input"]["x"].isna().all()  # final only
    assert np.isfinite(frame["value"]).all()
    assert (tmp_path / "report" / "ap.png").stat().st_size > 1000
    # each instance is explained for its own gold token, or its own foil
    from normxlogit.bench.store import CellKey

    with ResultStore(tmp_path / "store.sqlite") as store:
        gold, foils = (
            store.explanations(CellKey(str(tiny_mlm), experiment.dataset.key, spec.key, 0), [0, 1])
            for spec in (normx, foil)
        )
    assert [gold[i]["targets"] for i in (0, 1)] == [["herself"], ["hasn"]]  # paradigms alternate
    assert [foils[i]["targets"] for i in (0, 1)] == [["themselves"], ["haven"]]
    contrastive = experiment.methods[-1]
    assert contrastive.key != experiment.methods[2].key  # its own results
    with ResultStore(tmp_path / "store.sqlite") as store:
        versus = store.explanations(
            CellKey(str(tiny_mlm), experiment.dataset.key, contrastive.key, 0), [0, 1]
        )
    assert [versus[i]["contrasts"] for i in (0, 1)] == [["themselves"], ["haven"]]


# ------------------------------------------------------------- the trainer


def test_the_masked_lm_trainer_learns_target_over_foil_and_loads(tmp_path, monkeypatch):
    pairs = [
        _pair("Susan revealed herself.", "Susan revealed themselves.", 2, (0,), "anaphor", i)
        for i in range(4)
    ] + [
        _pair("The boys hurt themselves.", "The boys hurt herself.", 3, (1,), "anaphor", 4 + i)
        for i in range(4)
    ]
    monkeypatch.setitem(training.READERS, "blimp", lambda split: pairs)
    manifest = training.train(
        "minilm-blimp", tmp_path / "mlm", {"epochs": 4, "batch_size": 4}, log=lambda line: None
    )
    assert manifest["task"] == "masked_lm" and manifest["labels"] == []
    metrics = manifest["dev_metrics"]
    assert set(metrics) >= {"accuracy", "per_paradigm", "top1", "left_out"}
    assert metrics["per_paradigm"]["anaphor"] == metrics["accuracy"]
    model = normxlogit.load(str(tmp_path / "mlm"))
    assert type(model.model).__name__ == "BertForMaskedLM" and model.task.kind.value == "masked_lm"
    explanation = model.explain("Susan revealed [MASK].", method="logat", target="herself")
    assert len(explanation.scores) == len(explanation.tokens)
    # the merged model chooses target over foil as often as the trainer measured
    right = []
    for pair in pairs:
        item = mask_pair(pair, model.tokenizer)
        inputs = model.tokenizer(item.text, return_tensors="pt")
        position = int((inputs["input_ids"][0] == model.tokenizer.mask_token_id).nonzero()[0, 0])
        with torch.no_grad():
            logits = model.model(**inputs).logits[0, position]
        right.append(bool(logits[item.target_id] > logits[item.foil_id]))
    assert np.mean(right) == pytest.approx(metrics["accuracy"])
    assert metrics["accuracy"] == 1.0  # 8 pairs of two patterns, 4 epochs: learnt


def test_the_minilm_blimp_recipe_reads_the_papers_paradigms():
    recipe = training.get_recipe("minilm-blimp")
    assert recipe.task == "masked_lm" and recipe.dataset == "blimp"
    assert (recipe.train_split, recipe.eval_split) == ("train", "heldout")
    assert "transform" in recipe.modules_to_save


def test_an_example_holds_evidence_and_foil_as_content():
    assert Example("a b", "x", evidence=(1,)) != Example("a b", "x", evidence=(0,))
    assert Example("a b", "x", foil="y").foil == "y"


def test_the_command_line_scores_evidence_from_a_file(tiny_mlm, tmp_path):
    from typer.testing import CliRunner

    from normxlogit.cli import app

    data = tmp_path / "pairs.jsonl"
    rows = [
        {"text": "Susan revealed [MASK].", "label": "herself", "evidence": [0]},
        {"text": "The boys hurt [MASK].", "label": "themselves", "evidence_mask": [0, 1, 0, 0]},
    ]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    args = [
        "evaluate",
        str(data),
        "--model",
        str(tiny_mlm),
        "--metric",
        "evidence_ap",
        "--metric",
        "evidence_dot",
        "--method",
        "logat",
        "--explain-label",
        "--save",
        str(tmp_path / "e.json"),
        "--format",
        "json",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    saved = normxlogit.EvaluationResult.load(tmp_path / "e.json")
    assert set(saved.frame["metric"]) == {"evidence_ap", "evidence_dot"}
    # explained for each row's own gold token: the dot product is its LogAt on the evidence
    model = normxlogit.load(str(tiny_mlm))
    second = model.explain(rows[1]["text"], method="logat", target="themselves")
    dot = saved.frame[(saved.frame["metric"] == "evidence_dot") & (saved.frame["instance"] == 1)]
    assert dot["value"].iloc[0] == pytest.approx(second.scores[second.tokens.index("boys")])

    data.write_text(json.dumps({"text": "Susan revealed [MASK].", "label": "herself"}) + "\n")
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0 and "line 1: no evidence" in result.output


def test_the_mask_position_is_left_out_of_both_metrics(tiny_mlm):
    """Marking the masked target itself as evidence changes nothing: it is removed from
    the scores and the evidence before AP and the dot product."""
    model = normxlogit.load(str(tiny_mlm))
    text = "Susan revealed [MASK]."
    explanation = model.explain(text, method="logat", target="herself")
    plain = token_evidence(model.tokenizer, text, [0])
    with_mask = token_evidence(model.tokenizer, text, [0, 2])  # word 2 is "[MASK]."
    assert sum(with_mask) == sum(plain) + 2  # [MASK] and "." pieces
    mask = explanation.tokens.index("[MASK]")
    with_mask_only = [int(i == mask) or v for i, v in enumerate(plain)]
    results = [
        normxlogit.evaluate(
            model, {"m": [explanation]}, ["evidence_ap", "evidence_dot"], evidence=[vector]
        )
        .frame["value"]
        .to_numpy()
        for vector in (plain, with_mask_only)
    ]
    np.testing.assert_allclose(results[0], results[1])


def test_explain_each_gives_every_text_its_own_target_in_order(tiny_mlm):
    from normxlogit.explaining.texts import explain_each

    model = normxlogit.load(str(tiny_mlm))
    texts = ["Susan revealed [MASK].", "The boys hurt [MASK].", "Mary hurt [MASK]."]
    targets = ["herself", "themselves", "herself"]
    each = explain_each(model, texts, targets, "logat")
    for text, target, explanation in zip(texts, targets, each, strict=True):
        alone = model.explain(text, method="logat", target=target)
        assert explanation.targets == [target]
        np.testing.assert_allclose(explanation.scores, alone.scores, rtol=1e-5, atol=1e-6)
    with pytest.raises(InvalidInputError, match="3 texts but 2 targets"):
        explain_each(model, texts, targets[:2])
