"""Round thirty-two, evidence and sanity checks:

- P01: a model with fewer positions than its tokenizer's limit reads the smaller number
  (a long text is cut with the truncation warning, no IndexError); a rotary model's
  positions are a soft limit and leave the tokenizer's alone.
- P02: a 0/1 mask written in a data file's ``evidence`` column is refused (it looks like a
  mask, which belongs in ``evidence_mask``); repeated word indices are refused.
- P03: ``explain_and_evaluate`` reads ``labels`` and ``evidence_words`` given as
  iterators once.
- P04: NaN scores on the randomised model give n/a for both similarities, and the warning
  and the verdict's note say the scores were NaN (not the one-token reason).
- P05: the CLI ``sanity`` names its flags: a repeated ``--method`` and a bad ``--preset``.
- P06: ``evaluate FILE`` with an evidence column scores evidence alignment by default (as
  its help says); with evidence on some rows only, a warning says it is not scored.
- P07: an ``evidence_mask`` value other than 0 or 1 is named.
- P08: the bench refuses an experiment whose data set has no evidence words before any
  experiment runs, and names the data sets that give them.
- P09: bench warnings name the ``[protocol]`` key, not ``Protocol(...)``.
- P10: ``bench report`` draws (and links) no curve figure of a metric without a curve.
- P11: ``normxlogit.workflows`` is reachable after a plain ``import normxlogit``.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import transformers as T

import normxlogit
from normxlogit.common.errors import InvalidFileError, InvalidInputError
from normxlogit.data import read_examples

from .conftest import SMALL, build_model, explainable, fresh_tokenizer, invoke_in, tokenizer

SRC = Path(__file__).resolve().parents[1] / "src"
TEXTS = ["a good fine movie", "the plot was thin"]


def _said(result) -> str:
    return " ".join(result.output.split())


# ---------------------------------------------------------------- P01: position limit


def test_a_tokenizer_limit_past_the_position_table_reads_the_table():
    model = T.BertForSequenceClassification(
        T.BertConfig(vocab_size=len(tokenizer()), max_position_embeddings=24, **SMALL)
    ).eval()
    loaded = normxlogit.load((model, fresh_tokenizer()))  # the tokenizer says 512
    assert loaded.encoder.max_length == 24
    with pytest.warns(normxlogit.common.errors.NormXLogitWarning, match="reads at most 24"):
        explanation = loaded.explain(" ".join(["good movie"] * 40), "random")
    assert len(explanation.tokens) == 24


def test_a_rotary_model_keeps_the_tokenizer_limit():
    config = T.LlamaConfig(
        vocab_size=len(tokenizer()),
        pad_token_id=0,
        num_key_value_heads=2,
        **{**SMALL, "max_position_embeddings": 16},
    )
    loaded = normxlogit.load((T.LlamaForCausalLM(config).eval(), fresh_tokenizer()))
    assert loaded.encoder.max_length == fresh_tokenizer().model_max_length


# ---------------------------------------------------------- P02, P07: evidence cells


def _read(tmp_path: Path, column: str, cell: str):
    path = tmp_path / "rows.tsv"
    path.write_text(f"text\tlabel\t{column}\na good fine movie\t1\t{cell}\n")
    return read_examples(path)


def test_a_mask_in_the_evidence_column_is_refused_pointing_to_evidence_mask(tmp_path):
    with pytest.raises(InvalidFileError) as refused:
        _read(tmp_path, "evidence", "0 1 1 0")
    message = str(refused.value)
    assert "line 2" in message and "looks like a 0/1 mask" in message
    assert "evidence_mask" in message


def test_a_repeated_word_index_is_refused(tmp_path):
    with pytest.raises(InvalidFileError, match="evidence repeats word 2; give each word index"):
        _read(tmp_path, "evidence", "2 3 2")


def test_word_indices_each_once_are_read(tmp_path):
    assert _read(tmp_path, "evidence", "3 1")[0].evidence == (1, 3)


def test_a_mask_value_other_than_0_or_1_is_named(tmp_path):
    with pytest.raises(InvalidFileError, match="evidence_mask value 2 is not 0 or 1"):
        _read(tmp_path, "evidence_mask", "0 2 1 0")


# ------------------------------------------------------------ P03: iterators, read once


def test_explain_and_evaluate_reads_iterators_once():
    model = explainable("bert", "classification")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scored = normxlogit.explain_and_evaluate(
            model, TEXTS, ["random"], ["token_f1"], evidence_words=iter([[1], [1, 2]])
        )
        assert "token_f1" in scored.result.summary().columns
        labelled = normxlogit.explain_and_evaluate(
            model, TEXTS, ["random"], ["comp_acc"], labels=iter([1, 0])
        )
    assert "comp_acc" in labelled.result.summary().columns


# ------------------------------------------------------- P04: NaN on the randomised model


def _nan_once_randomised():
    """gradient_x_input whose scores are NaN after its first (trained) call."""
    base = type(normxlogit.get_method("gradient_x_input"))

    class NaNLater(base):
        calls = 0

        def attribute(self, *args, **kwargs):
            scores = super().attribute(*args, **kwargs)
            NaNLater.calls += 1
            if NaNLater.calls == 1:
                return scores
            return type(scores)(scores.scores * float("nan"), scores.diagnostics)

    return NaNLater()


def test_nan_scores_on_the_randomised_model_are_n_a_with_their_own_reason():
    from normxlogit.sanity import parameter_randomization

    model = normxlogit.load((build_model("bert", "classification"), fresh_tokenizer()))
    texts = ["a good fine movie and more words here today", "the plot was thin but great"]
    with pytest.warns(normxlogit.common.errors.NormXLogitWarning) as caught:
        result = parameter_randomization(model, texts, {"gx": _nan_once_randomised()}, top_k=2)
    assert result.frame["spearman"].isna().all()
    assert result.frame["top_k"].isna().all()  # not an overlap of the NaNs sorted last
    said = " ".join(str(w.message) for w in caught)
    assert "NaN or infinite" in said and "one-token" not in said
    note = result.verdicts()["note"].iloc[0]
    assert "NaN or infinite" in note and "one-token" not in note


def test_similarity_of_nan_scores_is_nan_for_both():
    from normxlogit.sanity.randomization import similarity

    model = explainable("bert", "classification")
    before = model.explain("a good fine movie and more words here", "random")
    after = dataclasses.replace(before, scores=np.full_like(np.asarray(before.scores), np.nan))
    rank, overlap = similarity(before, after, 2)
    assert np.isnan(rank) and np.isnan(overlap)


# ------------------------------------------------------------------ P05: sanity flags


@pytest.fixture
def two_texts(tmp_path):
    path = tmp_path / "two.txt"
    path.write_text("a good fine movie\nthe plot was thin\n")
    return path


def test_sanity_refuses_a_repeated_method_in_flags(tmp_path, two_texts):
    result = invoke_in(
        tmp_path, "sanity", str(two_texts), "--method", "random", "--method", "random"
    )
    assert result.exit_code == 2
    said = _said(result)
    assert "give each --method once" in said and "run sanity twice with --option" in said
    assert "dict" not in said and "get_method" not in said


def test_sanity_names_the_preset_flag(tmp_path, two_texts):
    result = invoke_in(tmp_path, "sanity", str(two_texts), "--preset", "quantus")
    assert result.exit_code == 2
    assert "--preset 'quantus' is not one of: normxlogit, quantus-mprt" in _said(result)
    assert "preset=" not in _said(result)


# --------------------------------------------------------- P06: evaluate's default metrics


def test_evaluate_scores_a_files_evidence_by_default(tmp_path, tiny_classifier):
    data = tmp_path / "ev.tsv"
    data.write_text("text\tlabel\tevidence\na good fine movie\t1\t1\nbad film\t0\t0\n")
    result = invoke_in(
        tmp_path,
        "evaluate",
        str(data),
        "-m",
        str(tiny_classifier),
        "--method",
        "random",
        "--save",
        "r.json",
        "-q",
    )
    assert result.exit_code == 0, _said(result)
    metrics = json.loads((tmp_path / "r.json").read_text())["metrics"]
    assert {"comp_cd", "suff_cd", "token_f1", "token_iou", "auprc"} <= set(metrics)


def test_evaluate_says_when_some_rows_lack_evidence(tmp_path, tiny_classifier):
    data = tmp_path / "some.tsv"
    data.write_text("text\tlabel\tevidence\na good fine movie\t1\t1\nbad film\t0\t\n")
    result = invoke_in(
        tmp_path, "evaluate", str(data), "-m", str(tiny_classifier), "--method", "random"
    )
    assert result.exit_code == 0, _said(result)
    said = _said(result)
    assert "the evidence column is not scored (line 3 has none)" in said
    # evidence on every row adds the metrics that read it (round 40 P06: --metric would
    # replace the defaults)
    assert "fill it on every row to score it (token_f1, token_iou, auprc" in said


# --------------------------------------------------------------- P08, P09, P10: bench


def _bench_files(folder: Path, model: Path) -> Path:
    (folder / "ev.jsonl").write_text(
        json.dumps({"text": "a good fine movie", "label": 1, "evidence": [1]})
        + "\n"
        + json.dumps({"text": "bad film", "label": 0, "evidence": []})
        + "\n"
    )
    (folder / "plain.jsonl").write_text(json.dumps({"text": "a fine film", "label": 1}) + "\n")
    return folder


def test_the_bench_refuses_an_experiment_without_evidence_before_running_any(
    tmp_path, tiny_classifier
):
    from normxlogit.bench import ResultStore, load_config, run_bench

    _bench_files(tmp_path, tiny_classifier)
    config = tmp_path / "two.toml"
    config.write_text(
        'title = "two"\nseeds = [0]\nmetrics = ["token_f1"]\nmethods = ["random"]\n'
        f'[[experiments]]\nname = "first"\nmodel = "{tiny_classifier}"\ndataset = "ev.jsonl"\n'
        f'[[experiments]]\nname = "second"\nmodel = "{tiny_classifier}"\n'
        'dataset = "plain.jsonl"\n'
    )
    with ResultStore(tmp_path / "two.sqlite") as store:
        with pytest.raises(InvalidInputError) as refused:
            run_bench(load_config(config), store)
        assert store.values().empty  # the first experiment did not run first
    message = str(refused.value)
    assert "experiment second: metric token_f1 needs each instance's evidence words" in message
    assert "boolq" in message and "evidence_mask" in message


@pytest.fixture(scope="module")
def plausibility_bench(tmp_path_factory):
    """A bench of token_f1 (one value per text: no curve) and comp_cd, run by the CLI
    (its warnings), and its report."""
    from .conftest import saved_tiny

    folder = tmp_path_factory.mktemp("round32")
    model = saved_tiny(folder / "tiny", "bert", "classification")
    _bench_files(folder, model)
    (folder / "p.toml").write_text(
        'title = "p"\nseeds = [0]\nmetrics = ["token_f1", "comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nname = "ev"\nmodel = "{model}"\ndataset = "ev.jsonl"\n'
    )
    ran = invoke_in(folder, "bench", "p.toml")
    reported = invoke_in(folder, "bench", "report", "p.toml", "-o", "rep")
    return folder, ran, reported


def test_bench_warnings_name_the_protocol_key(plausibility_bench):
    _, ran, _ = plausibility_bench
    assert ran.exit_code == 0, _said(ran)
    said = _said(ran)
    assert '[protocol] empty_rationale = "score"' in said
    assert "Protocol(" not in said


def test_config_keys_named_translates_protocol_settings():
    from normxlogit.cli.helpers import flags_named

    assert (
        flags_named("larger Protocol(ratios=...), or", "bench")
        == "larger [protocol] ratios = ..., or"
    )
    assert flags_named("Protocol(top_k=3) ranks", "bench") == "[protocol] top_k = 3 ranks"


def test_the_report_draws_no_curve_of_a_metric_without_one(plausibility_bench):
    folder, _, reported = plausibility_bench
    assert reported.exit_code == 0, _said(reported)
    report = (folder / "rep" / "report.md").read_text()
    assert not (folder / "rep" / "curve-token_f1.png").exists()
    assert "curve-token_f1" not in report
    assert (folder / "rep" / "curve-comp_cd.png").exists()  # a real curve is still drawn


# ---------------------------------------------------------------- P11: the submodule


def test_workflows_is_an_attribute_after_a_plain_import():
    code = "import normxlogit; print(normxlogit.workflows.evaluate_texts.__name__)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "evaluate_texts"
