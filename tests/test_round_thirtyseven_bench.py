"""Round thirty-seven of new-user probes, probe b: a corrected evidence cell refused a
store whose metrics never read it (P01); the single-token contrast refusal advised an id
on the page and in configs (P04); normxlogit's own .csv / .parquet tables opened with the
wrong loader were called cut-short JSON (P05); SanityResult.load placed a JSON row as a
CSV line (P06); an evidence column empty in every row got the advice to add one (P07);
``--versus M`` dropped an experiment where M is N/A without a word (P08); a contrastive
explanation file without its contrasts loaded as a plain one (P09); an experiment's own
unread protocol setting was named as a ``[protocol]`` key (P10); a config refused a
causal LM's space contrast (P11)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest

from normxlogit import Explanation
from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.runner import plan
from normxlogit.common.errors import InvalidFileError, NormXLogitError, StaleResultsError
from normxlogit.common.targets import token_id_advice, without_index_advice
from normxlogit.evaluation import EvaluationResult
from normxlogit.sanity import SanityResult

from .bench.helpers import _save_tiny
from .conftest import sanity_frame, sharp_model


@pytest.fixture(scope="module")
def sentiment_model(tmp_path_factory) -> Path:
    return _save_tiny(tmp_path_factory.mktemp("tiny-sentiment-37"), seed=0)


def _bench(folder: Path, model: Path, evidence: str, metrics: str, store: str = "s") -> Path:
    data = folder / "ev.tsv"
    data.write_text(
        f"sentence\tlabel\tevidence\na good film indeed\t1\t{evidence}\n"
        "terrible boring movie\t0\t0 1\n"
    )
    config = folder / f"{store}.toml"
    config.write_text(
        f'seeds = [0]\nmetrics = [{metrics}]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{model}"\ndataset = "{data}"\n'
    )
    return config


# ------------------------------------------------------------------ P01
def test_p01_corrected_evidence_no_metric_reads_refuses_nothing(tmp_path, sentiment_model):
    config = _bench(tmp_path, sentiment_model, "1 2", '"comp_cd"')
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_bench(load_config(config), store)
    _bench(tmp_path, sentiment_model, "0 3", '"comp_cd"')
    with ResultStore(tmp_path / "s.sqlite", create=False) as store:
        assert all(c.done == c.total for c in plan(load_config(config), store, with_units=False))
        run_bench(load_config(config), store)
    # the evidence, read for the first time now, is recorded then (the corrected one)
    config = _bench(tmp_path, sentiment_model, "0 3", '"comp_cd", "auprc"')
    with ResultStore(tmp_path / "s.sqlite", create=False) as store:
        run_bench(load_config(config), store)
    _bench(tmp_path, sentiment_model, "1 2", '"comp_cd", "auprc"')
    refused = pytest.raises(StaleResultsError, match=r"dataset '.*ev.tsv' gives instance 0 other")
    with ResultStore(tmp_path / "s.sqlite", create=False) as store, refused:
        plan(load_config(config), store, with_units=False)


def test_p01_merge_of_evidence_no_metric_read_goes_through(tmp_path, sentiment_model):
    for name, evidence in (("a", "1 2"), ("b", "0 3")):
        config = _bench(tmp_path, sentiment_model, evidence, '"comp_cd"', name)
        with ResultStore(tmp_path / f"{name}.sqlite") as store:
            run_bench(load_config(config), store)
    with ResultStore(tmp_path / "a.sqlite", create=False) as store:
        store.merge_from(tmp_path / "b.sqlite")


def test_p01_a_merge_refusal_names_the_dataset_as_the_config_does(tmp_path, sentiment_model):
    for name, evidence in (("a", "1 2"), ("b", "0 3")):
        config = _bench(tmp_path, sentiment_model, evidence, '"auprc"', name)
        with ResultStore(tmp_path / f"{name}.sqlite") as store:
            run_bench(load_config(config), store)
    store = ResultStore(tmp_path / "a.sqlite", create=False)
    with store, pytest.raises(NormXLogitError) as caught:
        store.merge_from(tmp_path / "b.sqlite")
    message = str(caught.value)
    assert "other evidence for instance 0 of dataset '" in message
    assert '{"name"' not in message


# ------------------------------------------------------------------ P04
def test_p04_the_token_id_advice_is_dropped_where_only_text_is_taken():
    advice = token_id_advice("contrast")
    message = f"contrast 'id:223' is 5 tokens (id, :); ...: pass one of them {advice}"
    assert "--contrast-id" in message
    assert without_index_advice(message).endswith("pass one of them")
    unknown = f"pass a word the vocabulary has {token_id_advice('target', 'a token id')}"
    assert without_index_advice(unknown) == "pass a word the vocabulary has"


def test_p04_the_page_words_a_blank_target_as_its_box_takes_it():
    from normxlogit.common.errors import InvalidInputError
    from normxlogit.common.targets import requested_target
    from normxlogit.serve.phrasing import page_named

    with pytest.raises(InvalidInputError) as caught:
        requested_target("  ")
    shown = page_named(str(caught.value))
    assert "an int" not in shown and "'all'" not in shown and "a list" not in shown
    assert "leave the box empty" in shown


# ------------------------------------------------------------------ P05, P06
def test_p05_a_sanity_table_opened_with_another_loader_names_sanity_load(tmp_path):
    path = SanityResult(sanity_frame()).save(tmp_path / "s.csv")
    for loader in (Explanation.load, EvaluationResult.load):
        with pytest.raises(InvalidFileError) as caught:
            loader(path)
        assert "is a sanity result table" in str(caught.value)
        assert "use normxlogit.sanity.SanityResult.load" in str(caught.value)
        assert "cut" not in str(caught.value)


def test_p05_a_parquet_table_is_not_told_to_reencode(tmp_path):
    pytest.importorskip("pyarrow")
    path = SanityResult(sanity_frame()).save(tmp_path / "s.parquet")
    with pytest.raises(InvalidFileError) as caught:
        EvaluationResult.load(path)
    assert "iconv" not in str(caught.value)
    assert "SanityResult.load" in str(caught.value)


def test_p05_an_evaluate_summary_and_a_bench_export_say_no_loader_reads_them(tmp_path):
    summary = tmp_path / "e.csv"
    summary.write_text("method,soft_nc\nattnlrp,0.74\n")
    export = tmp_path / "x.csv"
    pd.DataFrame(
        [dict(model="m", dataset="d", instance=0, method="r", seed=0, metric="a", value=1.0)]
    ).to_csv(export, index=False)
    for path, what in ((summary, "evaluate summary"), (export, "bench export")):
        for loader in (EvaluationResult.load, SanityResult.load):
            with pytest.raises(InvalidFileError) as caught:
                loader(path)
            assert what in str(caught.value) and "no loader reads back" in str(caught.value)


def test_p06_sanity_rows_are_placed_as_each_format_places_them(tmp_path):
    path = SanityResult(sanity_frame()).save(tmp_path / "s.json")
    data = json.loads(path.read_text())
    data["rows"][0]["spearman"] = 1.5
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError) as caught:
        SanityResult.load(path)
    assert "rows[0]: spearman is 1.5" in str(caught.value)
    assert "CSV" not in str(caught.value)
    data["rows"] = []
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError, match="has no rows"):
        SanityResult.load(path)


# ------------------------------------------------------------------ P07
def test_p07_an_evidence_column_empty_in_every_row_is_named(tmp_path, sentiment_model):
    data = tmp_path / "e.tsv"
    data.write_text("sentence\tlabel\tevidence\na good film\t1\t\nso dull\t0\t\n")
    config = tmp_path / "c.toml"
    config.write_text(
        'seeds = [0]\nmetrics = ["token_f1"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{sentiment_model}"\ndataset = "{data}"\n'
    )
    with ResultStore(tmp_path / "s.sqlite") as store, pytest.raises(NormXLogitError) as caught:
        plan(load_config(config), store, with_units=False)
    message = str(caught.value)
    assert "the evidence column of" in message and "is empty in every row (line 2" in message
    assert "with an evidence column" not in message


# ------------------------------------------------------------------ P08
def test_p08_versus_a_method_na_in_an_experiment_says_so():
    from types import SimpleNamespace

    from normxlogit.bench.report import paired_table

    result = SimpleNamespace(
        experiment=SimpleNamespace(name="tgpt:ev.tsv"),
        frame=pd.DataFrame({"method": ["random"]}),
        skipped={"attnlrp": "attnlrp has no rules for gpt2."},
    )
    line = paired_table(result, "attnlrp")
    assert line is not None and "**tgpt:ev.tsv**: no differences" in line
    assert "attnlrp is N/A there: attnlrp has no rules for gpt2." in line


# ------------------------------------------------------------------ P09
@pytest.mark.parametrize("edit", ["empty", "removed", "settings"])
def test_p09_a_file_whose_contrasts_and_settings_disagree_is_refused(tmp_path, edit):
    model = sharp_model()
    labels = list(model.label_names) if hasattr(model, "label_names") else None
    explanation = model.explain(
        "a good film", "gradient_x_input", contrast=labels[0] if labels else 0
    )
    path = tmp_path / "e.json"
    explanation.save(path)
    data = json.loads(path.read_text())
    assert data.get("contrasts")
    if edit == "empty":
        data["contrasts"] = []
    elif edit == "removed":
        del data["contrasts"]
    else:
        data["settings"]["contrast"] = ["nothing"]
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError, match="settings.contrast records"):
        Explanation.load(path)


# ------------------------------------------------------------------ P10
def test_p10_an_experiments_own_unread_setting_is_named_where_it_was_given(
    tmp_path, tiny_classifier
):
    data = tmp_path / "rows.jsonl"
    data.write_text('{"text": "a good movie", "label": 0}\n')
    config = tmp_path / "c.toml"
    config.write_text(
        'methods = ["random"]\nmetrics = ["comp_cd"]\n'
        f'[[experiments]]\nname = "mine"\nmodel = "{tiny_classifier}"\ndataset = "{data}"\n'
        "protocol = { top_k = 3 }\n"
    )
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        load_config(config)
    shown = [str(w.message) for w in said if "none of the chosen metrics" in str(w.message)]
    assert len(shown) == 1
    assert shown[0].startswith("experiment mine: ")
    assert "[[experiments]] protocol = { top_k = 3 }" in shown[0]


# ------------------------------------------------------------------ P11
def test_p11_a_config_takes_a_space_contrast_as_written(tmp_path, tiny_classifier):
    data = tmp_path / "rows.jsonl"
    data.write_text('{"text": "a good movie", "label": 0}\n')
    config = tmp_path / "c.toml"
    config.write_text(
        'metrics = ["comp_cd"]\n[[methods]]\nname = "gradient_x_input"\ncontrast = " "\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "{data}"\n'
    )
    loaded = load_config(config)
    assert loaded.experiments[0].methods[0].contrast == " "
