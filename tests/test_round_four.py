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
    with pytest.raises(InvalidInputError, match="is not a results store"):
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
    assert any("1 evidence word lies past" in m and "text 1: 1 of 3" in m for m in said)
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
