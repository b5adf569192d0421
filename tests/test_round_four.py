"""Round four of new-user probes (issue 41): the new capabilities under bad input, and no
result that is quietly meaningless.

CLI cases run the real entry point (a subprocess); library cases use tiny models.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from normxlogit.common.outputs import save_figure, write_atomically


def _usual_rights() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


# ------------------------------------------------------------------ outputs' rights


def test_every_written_file_gets_the_usual_rights(tmp_path):
    """A PNG or compressed store was written 0600 (mkstemp's private mode), other
    outputs 0644: every output now gets what a plain ``open`` would give."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from normxlogit.bench.archive import compress_store

    figure = plt.figure()
    written = [save_figure(figure, tmp_path / "plot.png")]
    plt.close(figure)
    written.append(write_atomically(tmp_path / "table.md", "| a |\n"))
    store = tmp_path / "store.sqlite"
    sqlite3.connect(store).execute("create table t (x)").connection.commit()
    written.append(compress_store(store, tmp_path / "store.sqlite.xz"))
    assert {path.name: path.stat().st_mode & 0o777 for path in written} == {
        path.name: _usual_rights() for path in written
    }
    assert not [p for p in Path(tmp_path).iterdir() if p.name.startswith(".")]


# ------------------------------------------------------------------ bench export keys


def test_export_keeps_every_setting_that_keys_a_value(tmp_path):
    """A contrastive store's plain and "vs foil" rows exported with identical keys: the
    export now carries target, layer and contrast (and the data set's options)."""
    from normxlogit.bench.results import EXPORT_COLUMNS, export_frame
    from normxlogit.bench.spec import DatasetSpec, MethodSpec
    from normxlogit.bench.store import ResultStore

    dataset = DatasetSpec("sst2", "dev")
    plain = MethodSpec("logat", target="label")
    against = MethodSpec("logat", target="label", contrast="foil")
    layered = MethodSpec("logat", target="label", layer="all")
    with ResultStore(tmp_path / "s.sqlite") as store:
        for method in (plain, against, layered):
            _store_one_value(store, dataset, method)
        frame = export_frame(store)
    assert list(frame.columns) == EXPORT_COLUMNS
    keys = [c for c in EXPORT_COLUMNS if c != "value"]
    assert not frame.duplicated(subset=keys).any()
    assert sorted(frame["contrast"].fillna("-")) == ["-", "-", "foil"]
    assert sorted(frame["layer"].fillna("-")) == ["-", "-", "all"]


def _store_one_value(store, dataset, method) -> None:
    from normxlogit.bench.store import CellKey, StoredEvaluation

    cell = CellKey("minilm-blimp", dataset.key, method.key, 0)
    evaluation = StoredEvaluation(0, "evidence_ap", "{}", 0.1, [("layer", 6.0, 0.5, None)])
    store.add_unit(cell, [], [evaluation])


# ------------------------------------------------------------------ loading


@pytest.mark.parametrize("family, head", [("bert", "classification"), ("llama", "causal_lm")])
def test_a_model_without_layers_is_refused_in_one_line(family, head):
    import normxlogit
    from normxlogit.common.errors import UnsupportedModelError

    from .conftest import fresh_tokenizer

    model = _layerless(family, head)
    with pytest.raises(UnsupportedModelError, match="0 transformer layers.*at least one layer"):
        normxlogit.load((model, fresh_tokenizer()))


def _layerless(family: str, head: str):
    import transformers

    from .conftest import DECODERS, ENCODERS, tokenizer

    make_config, prefix = {**ENCODERS, **DECODERS}[family]
    config = make_config(len(tokenizer()))
    config.num_hidden_layers = 0
    name = prefix + ("ForSequenceClassification" if head == "classification" else "ForCausalLM")
    return getattr(transformers, name)(config).eval()


# ------------------------------------------------------------------ the page's bench entries


def test_serve_refuses_a_store_given_as_the_config_at_start(tmp_path):
    from normxlogit.common.errors import InvalidInputError
    from normxlogit.serve.browse import BenchEntry

    store = tmp_path / "run.sqlite"
    sqlite3.connect(store).execute("create table t (x)").connection.commit()
    refused = r"results store, not a bench config.*=.*run\.sqlite"
    with pytest.raises(InvalidInputError, match=refused):
        BenchEntry.parse(str(store))
    config = tmp_path / "c.toml"
    config.write_text("this is = not [toml")
    with pytest.raises(Exception, match="c.toml") as refused:
        BenchEntry.parse(f"{config}={store}")
    assert "Traceback" not in str(refused.value)
    (tmp_path / "notes.txt").write_text("hello")
    good = Path(__file__).parents[1] / "experiments" / "sanity.toml"
    with pytest.raises(InvalidInputError, match="is not a normxlogit results store"):
        BenchEntry.parse(f"{good}={tmp_path / 'notes.txt'}")


# ------------------------------------------------------------------ file messages


def test_a_file_error_names_the_files_line(tmp_path):
    """The third line of a CSV (its second row) was called "row 1"."""
    from .cli.test_bad_inputs_cli import assert_refused, run

    data = tmp_path / "ev.csv"
    data.write_text('text,label,evidence\n"a fine film",positive,1\n"a dull film",negative,\n')
    result = run("evaluate", str(data), "--model", "minilm-sst2", "--metric", "token_f1")
    assert_refused(result, "ev.csv, line 3: no evidence")


@pytest.mark.parametrize("name", ["./nope", "../nope/x", "/no/such/folder", "nope/x/y", "nope/"])
def test_a_missing_local_folder_is_named_as_one(name):
    """A path that does not exist got the hub's repo-id rules ("Repo id must use
    alphanumeric chars...")."""
    import normxlogit
    from normxlogit.common.errors import UnknownModelError
    from normxlogit.loading import load_tokenizer

    for loader in (normxlogit.load, load_tokenizer):
        with pytest.raises(UnknownModelError, match=r"no folder .*check the path") as refused:
            loader(name)
        assert "Repo id" not in str(refused.value)


# ------------------------------------------------------------------ Granite


def _granite_beside_llama(**multipliers):
    import torch
    import transformers

    from .conftest import DECODER, tokenizer

    llama = transformers.LlamaForCausalLM(
        transformers.LlamaConfig(vocab_size=len(tokenizer()), pad_token_id=0, **DECODER)
    ).eval()
    granite = transformers.GraniteForCausalLM(
        transformers.GraniteConfig(
            vocab_size=len(tokenizer()),
            pad_token_id=0,
            attention_multiplier=(DECODER["hidden_size"] // DECODER["num_attention_heads"]) ** -0.5,
            **multipliers,
            **DECODER,
        )
    ).eval()
    granite.load_state_dict(llama.state_dict())
    with torch.no_grad():
        ids = torch.tensor([[101, 2023, 2143, 2001]])
        assert torch.allclose(
            granite(ids).logits * multipliers.get("logits_scaling", 1.0),
            llama(ids).logits,
            atol=1e-5,
        )
    return granite, llama


@pytest.mark.parametrize("method", ["normxlogit", "attnlrp", "gradient_x_input"])
def test_granite_loads_and_scales_its_logits(method):
    """methods.md lists Granite for AttnLRP, but a Granite model could not be loaded (its
    logits are divided by logits_scaling, which the LLaMA head did not do)."""
    import numpy as np

    import normxlogit

    from .conftest import fresh_tokenizer

    granite, llama = _granite_beside_llama(logits_scaling=4.0)
    ours = normxlogit.load((granite, fresh_tokenizer()))
    theirs = normxlogit.load((llama, fresh_tokenizer()))
    assert ours.family.name == "granite"
    a = ours.explain("a fine film", method=method, target=2143)
    b = theirs.explain("a fine film", method=method, target=2143)
    if method == "gradient_x_input":  # the gradient of a probability: not a plain scale
        assert np.corrcoef(a.scores, b.scores)[0, 1] > 0.99
    else:
        np.testing.assert_allclose(a.scores * 4.0, b.scores, rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------ evidence past the end


@pytest.mark.parametrize("family, head", [("bert", "classification"), ("llama", "causal_lm")])
def test_evidence_on_a_truncated_text_scores_the_part_the_model_read(family, head):
    """Any text longer than the model reads was refused ("must be 512 zeros and ones; got
    shape (702,)"), even with evidence on word 0."""
    import warnings

    from normxlogit.common.errors import InvalidInputError, NormXLogitWarning
    from normxlogit.workflows import evidence_over_tokens

    from .conftest import explainable

    model = explainable(family, head)
    long = " ".join(["good"] * 300 + ["film"] * 400)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (vector,) = evidence_over_tokens(model, [long], [[0, 1, 650]])
    assert len(vector) == model.encoder.max_length and sum(vector) == 2
    said = [str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)]
    assert any("1 evidence word lies past" in m and "text 0: 1 of 3" in m for m in said)
    with pytest.raises(InvalidInputError, match="index 700 is out of range.*700 words"):
        evidence_over_tokens(model, [long], [[700]])


# ------------------------------------------------------------------ saved generations


def test_a_saved_generation_with_bad_or_missing_step_scores(tmp_path):
    """Step scores holding strings raised a ValueError on load; a null (a NaN saved)
    raised a TypeError."""
    import json

    import numpy as np

    import normxlogit
    from normxlogit.common.errors import InvalidInputError

    from .conftest import explainable

    model = explainable("llama", "causal_lm")
    made = model.explain("the film was", continuation=[2143, 1998, 2009])
    data = made.to_dict()
    data["step_scores"] = {**data["step_scores"], "mine": [0.5, None, 1.0]}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    (loaded,) = normxlogit.load_explanations(path)
    assert np.isnan(loaded.step_scores["mine"][1]) and loaded.step_scores["mine"][2] == 1.0
    data["step_scores"]["mine"] = ["high", "low", "low"]
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidInputError, match="'step_scores' must be an object of lists of"):
        normxlogit.load_explanations(path)


# ---- round-four re-probe
# Variants of the round's kinds, probed again through other entry points and types.


def _tiny_causal_lm_folder(root: Path) -> Path:
    from .conftest import build_model, fresh_tokenizer

    folder = root / "tiny-gpt2"
    build_model("gpt2", "causal_lm").save_pretrained(folder)
    fresh_tokenizer().save_pretrained(folder)
    return folder


def test_a_contrast_input_read_as_the_text_itself_is_refused():
    """A contrast input equal to its text (or differing only in case for an uncased
    tokenizer, or in spacing) aligned every token with itself: all-zero scores, no word."""
    from normxlogit.common.errors import InvalidInputError

    from .conftest import explainable

    model = explainable("bert", "classification")
    same = "reads as the same tokens as the text"
    with pytest.raises(InvalidInputError, match=rf"^contrast_input \('A  GRIPPING film'\) {same}"):
        model.explain("a gripping film", contrast_input="A  GRIPPING film")
    with pytest.raises(InvalidInputError, match=rf"^contrast_input\[1\] .*{same}"):
        model.explain(["a fine film", "a dull film"], contrast_input=["a good film", "a dull film"])
    with pytest.raises(InvalidInputError, match=same):
        model.explain(("a fine film", "it is"), contrast_input=("a fine film", "it  is"))
    assert model.explain(("a fine film", "it is"), contrast_input=("a fine film", "it was"))
    lm = explainable("llama", "causal_lm")
    with pytest.raises(InvalidInputError, match="reads as the same tokens as the prompt"):
        lm.explain("the film was", continuation=[2143, 1998], contrast_input="the film was")


def test_the_command_line_explains_a_continuation_under_a_contrast_prompt(tmp_path):
    """``explain --continuation ... --contrast-input ...`` was refused for every input ("1
    texts but contrast_input is one text"); an unchanged one is named by its flag."""
    import json

    from typer.testing import CliRunner

    from normxlogit.cli import app

    folder = _tiny_causal_lm_folder(tmp_path)
    base = ["explain", "the film was", "-m", str(folder), "--continuation", " a b", "-f", "json"]
    made = CliRunner().invoke(app, [*base, "--contrast-input", "the movie was"])
    assert made.exit_code == 0, made.output
    data = json.loads(made.stdout)
    assert data["settings"]["contrast_input"] == "the movie was"
    assert "kl_divergence" in data["step_scores"]
    same = CliRunner().invoke(app, [*base, "--contrast-input", "the film was"])
    assert same.exit_code == 2
    assert "error: --contrast-input ('the film was') reads as the same tokens" in same.output


def test_the_page_refuses_an_unchanged_contrast_input_once():
    pytest.importorskip("fastapi")
    import time

    from fastapi.testclient import TestClient

    from normxlogit.serve import build_app

    from .conftest import explainable

    app = build_app([], loaded={"tiny": explainable("bert", "classification")}, builtins=False)
    with TestClient(app) as client:
        body = {"model": "tiny", "text": "a fine film", "methods": ["normxlogit", "logat"]}
        job = client.post("/api/explain", json={**body, "contrast_input": "A fine film"}).json()
        while job["state"] in ("queued", "running"):
            time.sleep(0.05)
            job = client.get(f"/api/jobs/{job['id']}").json()
    assert job["state"] == "failed"
    assert job["error"].startswith("the contrast input (against the input) ('A fine film') reads")
    assert job["error"].count("reads as the same tokens") == 1  # once, not once per method


@pytest.mark.parametrize("where", ["evaluate", "evaluate_texts", "parameter", "data"])
def test_a_model_name_where_a_loaded_model_belongs_is_refused_in_one_line(where):
    """``evaluate("minilm-sst2", ...)`` and ``parameter_randomization("minilm-sst2", ...)``
    raised AttributeError ('str' object has no attribute 'task' / 'blocks')."""
    import normxlogit
    from normxlogit.common.errors import InvalidInputError
    from normxlogit.sanity import data_randomization, parameter_randomization
    from normxlogit.workflows import evaluate_texts

    from .conftest import explainable

    model = explainable("bert", "classification")
    made = model.explain(["a fine film", "a dull film"])
    calls = {
        "evaluate": lambda: normxlogit.evaluate("minilm-sst2", made, ["comp_cd"]),
        "evaluate_texts": lambda: evaluate_texts("minilm-sst2", {"n": made}, ["token_f1"]),
        "parameter": lambda: parameter_randomization("minilm-sst2", ["a fine film"]),
        "data": lambda: data_randomization("minilm-sst2", model, ["a fine film"]),
    }
    with pytest.raises(
        InvalidInputError, match=r"model is a str.*normxlogit\.load\('minilm-sst2'\)"
    ):
        calls[where]()


def test_evaluate_refuses_a_layer_the_explanations_do_not_have():
    """``evaluate(layer=9)`` on explanations of 3 layers raised IndexError; a layer asked
    of explanations with no per-layer scores was silently the final layer's."""
    import normxlogit
    from normxlogit.common.errors import InvalidInputError

    from .conftest import explainable

    model = explainable("bert", "classification")
    texts = ["a fine film indeed", "a dull film indeed"]
    layered = model.explain(texts, layer="all")
    with pytest.raises(InvalidInputError, match=r"layer=9 is out of range.*3 layers \(0 to 2"):
        normxlogit.evaluate(model, layered, ["comp_cd"], layer=9)
    with pytest.raises(InvalidInputError, match="layer=1.0 is a float"):
        normxlogit.evaluate(model, layered, ["comp_cd"], layer=1.0)
    assert len(normxlogit.evaluate(model, layered, ["comp_cd"], layer=-3).frame)
    with pytest.raises(InvalidInputError, match="layer=0 picks a layer.*one set of scores"):
        normxlogit.evaluate(model, model.explain(texts), ["comp_cd"], layer=0)


def test_an_undefined_top_k_overlap_gives_its_own_reason():
    """sanity_top_k's n/a warning gave the Spearman reason (one token, equal scores) for a
    text of k tokens or fewer."""
    import normxlogit
    from normxlogit.common.errors import NormXLogitWarning

    from .conftest import explainable

    model = explainable("bert", "classification")
    with pytest.warns(NormXLogitWarning) as caught:
        normxlogit.evaluate(model, model.explain(["a fine film"]), ["sanity_top_k"])
    (said,) = [str(w.message) for w in caught if "sanity_top_k" in str(w.message)]
    assert "the top-5 overlap is undefined for a text of 5 tokens compared or fewer" in said
    assert "rank correlation" not in said


def test_a_format_that_contradicts_the_outputs_suffix_is_refused(tiny_classifier, tmp_path):
    """``bench export -o y.csv -f parquet`` wrote Parquet bytes into y.csv (and ``explain
    -o e.html -f json`` JSON into e.html); a suffix that names no format still takes any."""
    from typer.testing import CliRunner

    from normxlogit.cli import app
    from normxlogit.cli.bench import EXPORT_SUFFIXES, ExportFormat
    from normxlogit.common.errors import OutputPathError
    from normxlogit.common.outputs import output_format

    with pytest.raises(OutputPathError, match=r"y\.csv names the csv format but --format is parq"):
        output_format(Path("y.csv"), ExportFormat.parquet, EXPORT_SUFFIXES)
    assert output_format(Path("y.out"), ExportFormat.parquet, EXPORT_SUFFIXES).value == "parquet"
    page = tmp_path / "e.html"
    args = ["explain", "a film", "-m", str(tiny_classifier), "-o", str(page), "-f", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "end the name in .json" in result.output
    assert not page.exists()


def test_a_json_list_in_a_table_cell_is_read_as_evidence(tmp_path):
    """A .tsv cell "[1, 2]" was refused with "give whole numbers, e.g. ... [0, 3]"."""
    from normxlogit.data import read_examples

    data = tmp_path / "ev.tsv"
    data.write_text("text\tlabel\tevidence\na gripping film\t1\t[1, 2]\na dull film\t0\t[]\n")
    assert [e.evidence for e in read_examples(data)] == [(1, 2), ()]


def test_files_that_are_no_data_are_refused_before_any_work(tmp_path):
    """A .json file was explained line by line as texts (its braces and keys), a results
    store given to ``serve --data`` started and failed every request as "not UTF-8"."""
    from normxlogit.cli.app import read_texts
    from normxlogit.common.errors import InvalidFileError
    from normxlogit.data import read_examples
    from normxlogit.serve.examples import ExampleSources

    document = tmp_path / "rows.json"
    document.write_text('[{"text": "a fine film", "label": 1}]\n')
    store = tmp_path / "run.sqlite"
    sqlite3.connect(store).execute("create table t (x)").connection.commit()
    lines = tmp_path / "rows.jsonl"
    lines.write_text('{"text": "a fine film"}\n')
    with pytest.raises(InvalidFileError, match=r"one JSON document.*jq -c '\.\[\]' \S*rows\.json"):
        read_examples(document)
    with pytest.raises(InvalidFileError, match="run.sqlite is a results store"):
        read_examples(store)
    with pytest.raises(InvalidFileError, match="^--data .*results store"):
        ExampleSources([store])
    with pytest.raises(InvalidFileError, match=r"^--input .*lines are JSON, not texts"):
        read_texts(None, lines)
    assert [e.text for e in read_examples(lines)] == ["a fine film"]


def test_load_names_a_file_or_an_object_it_cannot_take(tmp_path):
    """A file's path was called "the folder"; ``load(nn.Linear)`` and ``load(None)`` were
    "unknown model 'Linear(...)'"."""
    import torch

    import normxlogit
    from normxlogit.common.errors import UnknownModelError

    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    with pytest.raises(UnknownModelError, match="is a file; a local model is the folder"):
        normxlogit.load(str(notes))
    for wrong, named in ((torch.nn.Linear(2, 2), "a Linear"), (None, "None"), (3, "an int")):
        with pytest.raises(
            UnknownModelError, match=f"or a \\(model, tokenizer\\) pair; got {named}$"
        ):
            normxlogit.load(wrong)


@pytest.mark.parametrize("words", ["1,2", {"a": [1]}])
def test_evidence_words_given_as_one_string_or_a_dict_are_refused(words):
    """``evidence_words="1,2"`` said "3 evidence entries for 2 texts"."""
    from normxlogit.common.errors import InvalidInputError
    from normxlogit.workflows import evidence_over_tokens

    from .conftest import explainable

    model = explainable("bert", "classification")
    with pytest.raises(InvalidInputError, match="evidence_words is a .*one list of word indices"):
        evidence_over_tokens(model, ["a fine film", "a dull film"], words)
