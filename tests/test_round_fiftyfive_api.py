"""Round 55 (a): the Python API and the command line.

- F04: a regressor's gold value past float64 (10**400): an OverflowError.
- F05: evaluate's evidence checked only after the faithfulness metrics ran; 10**400 in
  it an OverflowError; a bfloat16 evidence tensor refused.
- F08: metrics' exclude=/mask= as bfloat16 tensors or lists of 0-d ones: a TypeError.
- F09: a pi= refusal printed the whole value (60 lines for an array).
- F10: long values cut without a mark (a different number) or printed whole.
- F11: sanity's seed past torch's range: a ValueError after the trained model's run.
- F12: 0-d arrays refused for layer=, generate=, batch sizes, top_tokens(k) and seed=.
- F13: label_words' 2-d advice did not work for an np.matrix or a DataFrame.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

import normxlogit as nx
from normxlogit import metrics as M
from normxlogit import sanity
from normxlogit import workflows as W
from normxlogit.common.errors import InvalidInputError, NormXLogitError
from normxlogit.common.outputs import checked_choice

from .conftest import explainable, fresh_tokenizer, invoke_in, saved_tiny
from .conftest import said as _said

BIG = 10**400
SHORT_BIG = "10000000000000000000... (401 digits)"


@pytest.fixture
def never_explaining(monkeypatch):
    """sanity's explaining replaced by a failure: a refusal must come first."""
    from normxlogit.sanity import randomization

    def fail(*args, **kwargs):
        raise AssertionError("explained before refusing")

    monkeypatch.setattr(randomization, "_explain", fail)


def _classifier():
    return explainable("bert", "classification")


# ------------------------------------------------------------------ F04
def test_f04_a_regressor_gold_value_past_float64_is_refused():
    reg = explainable("bert", "regression")
    ex = [nx.explain(reg, t, method="random") for t in ("a good film", "a bad film")]
    with pytest.raises(InvalidInputError) as caught:
        nx.evaluate(reg, ex, metrics=["comp_acc"], labels=[BIG, 1.0])
    said = str(caught.value)
    assert SHORT_BIG in said and "labels[0]" in said and "finite numbers" in said, said


def test_f04_explain_and_evaluate_refuses_it_before_explaining():
    reg = explainable("bert", "regression")
    with pytest.raises(InvalidInputError, match="beyond a float64"):
        W.explain_and_evaluate(reg, ["a good film"], ["random"], ["comp_acc"], labels=[BIG])


def test_f04_a_data_file_gold_value_past_float64(tmp_path):
    model = saved_tiny(tmp_path / "reg", "bert", "regression")
    (tmp_path / "reg.tsv").write_text(
        "sentence\tscore\na good film\t1" + "0" * 400 + "\na bad film\t1.0\n"
    )
    result = invoke_in(tmp_path, "evaluate", "reg.tsv", "-m", str(model), "--method", "random")
    said = _said(result)
    assert result.exit_code != 0 and "Traceback" not in said, said
    assert SHORT_BIG in said and "not finite" in said, said


# ------------------------------------------------------------------ F05
def _two(model):
    texts = ["a good film. it was bad.", "a bad film. it was good."]
    return [nx.explain(model, t, method="random") for t in texts]


@pytest.mark.parametrize(
    ("first", "words"),
    [
        (lambda n: [0.5] + [0] * (n - 1), "got 0.5 at token 0"),
        (lambda n: [0] * (n - 1), "got shape"),
        (lambda n: [BIG] + [0] * (n - 1), SHORT_BIG),
    ],
    ids=["half", "short", "big"],
)
def test_f05_evidence_is_checked_before_any_metric_runs(first, words):
    model = _classifier()
    ex = _two(model)
    calls: list = []
    evidence = [first(len(ex[0].tokens)), [0] * len(ex[1].tokens)]
    with pytest.raises(InvalidInputError) as caught:
        nx.evaluate(
            model,
            ex,
            metrics=["comp_cd", "soft_nc", "auprc"],
            evidence=evidence,
            progress=calls.append,
        )
    assert words in str(caught.value), str(caught.value)
    assert "text 0" in str(caught.value)
    assert calls == [], "faithfulness metrics ran before the evidence was refused"


@pytest.mark.parametrize(
    "as_given",
    [
        lambda v: torch.tensor(v, dtype=torch.bfloat16),
        lambda v: list(torch.tensor(v, dtype=torch.bfloat16)),
    ],
    ids=["tensor", "list-of-0d"],
)
def test_f05_bfloat16_evidence_is_read(as_given):
    model = _classifier()
    ex = _two(model)
    n0, n1 = len(ex[0].tokens), len(ex[1].tokens)
    first = [0.0] * n0
    first[1] = 1.0
    second = [0.0] * n1
    second[2] = 1.0
    got = nx.evaluate(model, ex, metrics=["auprc"], evidence=[as_given(first), second])
    want = nx.evaluate(model, ex, metrics=["auprc"], evidence=[first, second])
    assert got.frame["value"].tolist() == want.frame["value"].tolist()


def test_f05_good_evidence_still_runs_every_metric():
    model = _classifier()
    ex = _two(model)
    evidence = [[1] + [0] * (len(ex[0].tokens) - 1), [0, 1] + [0] * (len(ex[1].tokens) - 2)]
    with pytest.warns(nx.NormXLogitWarning):
        result = nx.evaluate(model, ex, metrics=["comp_cd", "auprc"], evidence=evidence)
    assert set(result.frame["metric"]) == {"comp_cd", "auprc"}


# ------------------------------------------------------------------ F08
SCORES = [0.3, 0.1, 0.5, 0.1]


def test_f08_a_bfloat16_exclude_is_read_then_its_floats_refused():
    with pytest.raises(InvalidInputError) as caught:
        M.dot_product(SCORES, [1, 0, 0, 0], exclude=torch.tensor([0, 1], dtype=torch.bfloat16))
    said = str(caught.value)
    assert "got a float 0.0" in said and ".long()" in said, said
    fixed = torch.tensor([0, 1], dtype=torch.bfloat16).long()
    assert M.dot_product(SCORES, [1, 0, 0, 0], exclude=fixed) == 0.0


def test_f08_a_list_of_bfloat16_0d_tensors():
    one = torch.tensor(1.0, dtype=torch.bfloat16)
    with pytest.raises(InvalidInputError, match="got a float 1.0"):
        M.dot_product(SCORES, [1, 0, 0, 0], exclude=[one])
    masked = M.rescale_unit(SCORES, mask=[one] * 4)
    assert np.allclose(masked, M.rescale_unit(SCORES))
    scores = [torch.tensor(s, dtype=torch.bfloat16) for s in SCORES]
    assert M.aopc(scores) == pytest.approx(M.aopc([float(s) for s in scores]))


# ------------------------------------------------------------------ F09
@pytest.mark.parametrize(
    ("pi", "words"),
    [
        (np.full((30, 30), 2.0), "got 2.0 at pi[0, 0] (900 of 900 outside)"),
        (10**300, "got 10000000000000000000... (301 digits)"),
        (torch.linspace(0, 1, 50), "got 0.0 at pi[0] (2 of 50 outside)"),
        ([0.5, 2], "got 2 at pi[1] (1 of 2 outside)"),
    ],
    ids=["grid", "big", "tensor", "list"],
)
def test_f09_pi_refusals_are_one_short_line(pi, words):
    for call in (M.calibrate, M.find_alpha):
        with pytest.raises(InvalidInputError) as caught:
            call([0.3, 0.1, 0.5], pi)
        said = str(caught.value)
        assert "\n" not in said and len(said) < 120 and words in said, said


# ------------------------------------------------------------------ F10
def test_f10_the_shared_shortening():
    from normxlogit.common.outputs import short_value

    assert short_value(BIG) == SHORT_BIG
    assert short_value(-BIG).endswith("(401 digits)")
    assert short_value("x" * 3000) == "'" + "x" * 38 + "..."
    assert short_value(5) == "5"
    assert short_value("   ") == "'   '"  # a text's blanks as given
    assert "\n" not in short_value(np.zeros((30, 30)))
    assert M._short is short_value


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"top_k": -BIG}, "-1000000000000000000... (401 digits)"),
        ({"tokens": BIG}, f"tokens=an int {SHORT_BIG}"),
        ({"init": "x" * 3000}, "init='xxxxxxxx"),
        ({"seed": BIG}, SHORT_BIG),
    ],
    ids=["top_k", "tokens", "init", "seed"],
)
def test_f10_sanity_values_are_shortened(options, words, never_explaining):
    with pytest.raises(NormXLogitError) as caught:
        sanity.parameter_randomization(
            _classifier(), ["a good film"], methods=["random"], **options
        )
    said = str(caught.value)
    assert words in said and len(said) < 160, said


def test_f10_checked_choice_shortens():
    with pytest.raises(InvalidInputError) as caught:
        checked_choice("y" * 300, "segment_reduce", ["sum", "mean"])
    assert len(str(caught.value)) < 100, str(caught.value)


def _explain_calls():
    model = _classifier()
    gpt = explainable("gpt2", "causal_lm")
    mlm = explainable("bert", "masked_lm")
    return {
        "target": lambda: nx.explain(model, "a good film", method="random", target=BIG),
        "layer": lambda: nx.explain(model, "a good film", layer=BIG),
        "continuation": lambda: nx.explain(gpt, "the cat", method="random", continuation=[5, BIG]),
        "mask_position": lambda: nx.explain(mlm, "the cat", method="random", mask_position=BIG),
        "max_new_tokens": lambda: nx.explain(
            gpt, "the cat", method="random", generate=True, max_new_tokens=BIG
        ),
        "explain_steps": lambda: nx.explain(
            gpt, "the cat", method="random", continuation=[5, 6], explain_steps=[BIG]
        ),
    }


@pytest.mark.parametrize(
    "name",
    ["target", "layer", "continuation", "mask_position", "max_new_tokens", "explain_steps"],
    ids=["target", "layer", "continuation", "mask_position", "max_new_tokens", "explain_steps"],
)
def test_f10_explain_values_are_shortened(name):
    with pytest.raises(NormXLogitError) as caught:
        _explain_calls()[name]()
    said = str(caught.value)
    assert SHORT_BIG in said and len(said) < 300, said


def test_f10_evidence_segments_are_shortened():
    with pytest.raises(NormXLogitError) as caught:
        W.explain_and_evaluate(
            _classifier(),
            ["a good film. it was bad."],
            ["random"],
            ["segment_auprc"],
            segments="sentences",
            evidence_segments=[[BIG]],
        )
    assert SHORT_BIG in str(caught.value), str(caught.value)


def test_f10_saved_files_name_the_value_shortened(tmp_path):
    model = _classifier()
    explanation = nx.explain(model, "a good film", method="random")
    explanation.save(tmp_path / "e.json")
    saved = json.loads((tmp_path / "e.json").read_text())
    saved["scores"][0] = BIG
    (tmp_path / "e2.json").write_text(json.dumps(saved))
    with pytest.raises(NormXLogitError) as caught:
        nx.Explanation.load(tmp_path / "e2.json")
    assert f"holds {SHORT_BIG}, beyond" in str(caught.value), str(caught.value)
    result = nx.evaluate(model, [explanation], metrics=["comp_cd"])
    result.save(tmp_path / "r.json")
    saved = json.loads((tmp_path / "r.json").read_text())
    saved["rows"][0]["value"] = BIG
    (tmp_path / "r2.json").write_text(json.dumps(saved))
    with pytest.raises(NormXLogitError) as caught:
        nx.EvaluationResult.load(tmp_path / "r2.json")
    assert f"'value' is {SHORT_BIG}" in str(caught.value), str(caught.value)


def test_f10_a_data_file_evidence_value_is_shortened(tmp_path, tiny_classifier):
    row = {"text": "a good film", "label": "pos", "evidence_mask": [0, 0, BIG]}
    (tmp_path / "m.jsonl").write_text(json.dumps(row) + "\n")
    result = invoke_in(
        tmp_path, "evaluate", "m.jsonl", "-m", str(tiny_classifier), "--method", "random"
    )
    assert SHORT_BIG in _said(result) and "Traceback" not in _said(result), _said(result)


# ------------------------------------------------------------------ F11
@pytest.mark.parametrize("seed", [2**64 - 1, 10**30, -(2**63) - 5], ids=["u64", "e30", "neg"])
def test_f11_a_seed_past_the_bound_is_refused_before_work(seed, never_explaining):
    with pytest.raises(InvalidInputError) as caught:
        sanity.parameter_randomization(
            _classifier(),
            ["a good film"],
            methods=["normxlogit"],
            init="reset_parameters",
            seed=seed,
        )
    assert "2147483647" in str(caught.value), str(caught.value)


def test_f11_a_seed_within_the_bound_runs():
    result = sanity.parameter_randomization(
        _classifier(),
        ["a good film"],
        methods=["random"],
        init="reset_parameters",
        seed=2**31 - 1,
    )
    assert result.settings["seed"] == 2**31 - 1


# found while merging: numbers past the 4,300 digits Python prints, and a top_k past
# the command line's bound (it ran the whole check, then could not be saved as JSON)
def test_short_value_names_numbers_python_cannot_print():
    from normxlogit.common.outputs import short_value

    assert short_value(10**5000) == "10000000000000000000... (5001 digits)"
    assert short_value(-(10**5000 - 1)) == "-99999999999999999999... (5000 digits)"
    assert short_value(123 * 10**6000) == "12300000000000000000... (6003 digits)"


@pytest.mark.parametrize("top_k", [2**31, BIG, 10**5000], ids=["bound", "e400", "e5000"])
def test_a_top_k_past_the_bound_is_refused_before_work(top_k, never_explaining):
    with pytest.raises(InvalidInputError) as caught:
        sanity.parameter_randomization(
            _classifier(), ["a good film"], methods=["random"], top_k=top_k
        )
    said = str(caught.value)
    assert said.startswith("top_k ") and "1 to 2147483647" in said and "\n" not in said


def test_a_top_k_at_the_bound_runs_and_saves(tmp_path):
    result = sanity.parameter_randomization(
        _classifier(), ["a good film"], methods=["random"], top_k=2**31 - 1
    )
    result.save(tmp_path / "s.json")
    assert sanity.SanityResult.load(tmp_path / "s.json").settings["top_k"] == 2**31 - 1


# ------------------------------------------------------------------ F12
def test_f12_layer_0d_arrays_are_read():
    model = _classifier()
    one = nx.explain(model, "a good film", layer=np.array(1))
    assert np.array_equal(one.scores_3d(), nx.explain(model, "a good film", layer=1).scores_3d())
    every = nx.explain(model, "a good film", layer=np.array("all"))
    assert list(every.layers) == [0, 1, 2]


def test_f12_generate_batch_size_and_k_0d_are_read():
    gpt = explainable("gpt2", "causal_lm")
    made = nx.explain(gpt, "the cat", method="random", generate=np.array(True), max_new_tokens=2)
    assert type(made).__name__ == "GenerationExplanation"
    model = _classifier()
    explanation = nx.explain(model, "a good film", method="random", batch_size=np.array(2))
    assert explanation.top_tokens(np.array(2)) == explanation.top_tokens(2)
    nx.evaluate(model, [explanation], metrics=["comp_cd"], batch_size=torch.tensor(2))
    W.explain_texts(model, ["a good film"], ["random"], batch_size=np.array(2))


def test_f12_explain_and_evaluate_reads_a_0d_seed():
    model = _classifier()
    done = W.explain_and_evaluate(model, ["a good film"], ["random"], ["comp_cd"], seed=np.array(3))
    assert done.result.protocol.seed == 3
    with pytest.raises(InvalidInputError) as caught:
        W.explain_and_evaluate(model, ["a good film"], ["random"], ["comp_cd"], seed=1.5)
    said = str(caught.value)
    assert said.startswith("seed=1.5") and "protocol setting" not in said, said


def test_f12_evaluate_and_top_tokens_read_a_0d_layer():
    model = _classifier()
    explanation = nx.explain(model, "a good film here and there", layer="all")
    assert explanation.top_tokens(2, layer=np.array(1)) == explanation.top_tokens(2, layer=1)
    got = nx.evaluate(model, [explanation], metrics=["comp_cd"], layer=np.array(1))
    want = nx.evaluate(model, [explanation], metrics=["comp_cd"], layer=1)
    assert got.frame["value"].tolist() == want.frame["value"].tolist()
    with pytest.raises(InvalidInputError, match=r"\(401 digits\) is out of range"):
        nx.evaluate(model, [explanation], metrics=["comp_cd"], layer=BIG)


# ------------------------------------------------------------------ F13
def _chat(label_words):
    from .conftest import CHAT_TEMPLATE, build_model

    tokenizer = fresh_tokenizer()
    tokenizer.chat_template = CHAT_TEMPLATE
    return nx.load(
        (build_model("llama", "causal_lm"), tokenizer),
        prompt=nx.ChatPrompt(user="Review: {text}"),
        label_words=label_words,
    )


def _advice(label_words) -> str:
    with pytest.raises(InvalidInputError) as caught:
        _chat(label_words)
    return str(caught.value)


def test_f13_the_matrix_advice_works():
    matrix = np.matrix([[" bad", " good"]])
    said = _advice(matrix)
    assert "np.asarray(label_words).ravel().tolist()" in said, said
    assert _chat(np.asarray(matrix).ravel().tolist()).task.labels == ("bad", "good")


def test_f13_the_dataframe_advice_works():
    row = pd.DataFrame({"neg": [" bad"], "pos": [" good"]})
    assert "frame.iloc[0]" in _advice(row)
    assert _chat(row.iloc[0]).task.labels == ("neg", "pos")
    column = pd.DataFrame({"w": [" bad", " good"]})
    assert "frame['w'].tolist()" in _advice(column)
    assert _chat(column["w"].tolist()).task.labels == ("bad", "good")
