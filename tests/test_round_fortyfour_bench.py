"""Round 44 (b) findings: bench, page, saved files.

- P01: a model folder whose tokenizer has ids past the model's embedding rows (a token
  added without ``resize_token_embeddings``, a vocab.txt with a repeated entry) failed
  with torch's IndexError mid-run. It is now refused at load, naming both numbers and
  the fix, from every entry point.
- P02: the report's figures drew a method done on part of its instances beside complete
  ones with no mark; they now mark it † in the legend (tick labels) with the tables'
  note under the panels. The page draws every method on the shared instances: no mark.
- P03: a sentence pair on a decoder whose tokenizer has no pair template was read glued
  together, silently; it is now warned of once, naming how to set a separator.
- P04: ``serve --bench CONFIG=CONFIG`` advised --store, which serve does not take.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch
import transformers as T

from normxlogit.common.errors import InvalidInputError, NormXLogitWarning, UnsupportedModelError

from .bench.helpers import _save_tiny, run_cli, with_a_seed_not_started, write_config
from .conftest import DECODER, SMALL, fresh_tokenizer


# ------------------------------------------------------------------ P01
def _unresized(folder: Path) -> Path:
    """A tiny BERT folder whose tokenizer had a word added without resizing the model."""
    tokenizer = fresh_tokenizer()
    rows = len(tokenizer)
    tokenizer.add_tokens(["zzqword"])
    torch.manual_seed(0)
    config = T.BertConfig(vocab_size=rows, num_labels=2, **SMALL)
    T.BertForSequenceClassification(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_p01_load_refuses_a_tokenizer_past_the_embedding_rows(tmp_path):
    import normxlogit as nx

    folder = _unresized(tmp_path / "m")
    rows = len(fresh_tokenizer())
    with pytest.raises(UnsupportedModelError) as caught:
        nx.load(str(folder))
    message = str(caught.value)
    assert "\n" not in message
    assert f"ids up to {rows}, past the model's {rows} embedding rows" in message
    assert f"model.resize_token_embeddings({rows + 1})" in message


def test_p01_a_loaded_pair_is_refused_too():
    import normxlogit as nx

    tokenizer = fresh_tokenizer()
    config = T.BertConfig(vocab_size=len(tokenizer) - 10, num_labels=2, **SMALL)
    with pytest.raises(UnsupportedModelError, match="resize_token_embeddings"):
        nx.load((T.BertForSequenceClassification(config).eval(), tokenizer))


def test_p01_a_tokenizer_smaller_than_the_table_loads():
    """A padded vocabulary (more embedding rows than tokens) is normal."""
    import normxlogit as nx

    tokenizer = fresh_tokenizer()
    config = T.BertConfig(vocab_size=len(tokenizer) + 64, num_labels=2, **SMALL)
    nx.load((T.BertForSequenceClassification(config).eval(), tokenizer))


def test_p01_explain_and_bench_run_refuse_it_in_one_line(tmp_path):
    folder = _unresized(tmp_path / "m")
    explained = run_cli("explain", "--model", str(folder), "a zzqword film")
    assert explained.returncode == 2
    assert "resize_token_embeddings" in explained.stderr
    assert "Traceback" not in explained.stderr and "IndexError" not in explained.stderr
    config = write_config(tmp_path, folder, limit=2, methods='["random"]', metrics='["comp_cd"]')
    ran = run_cli("bench", "run", str(config))
    assert ran.returncode == 2 and "resize_token_embeddings" in ran.stderr
    assert "IndexError" not in ran.stderr


# ------------------------------------------------------------------ P02
@pytest.fixture(scope="module")
def partial_store(tmp_path_factory):
    """random on every instance of seeds 0 and 1; normxlogit on seed 0 alone (its seed 1
    not started): the report's tables mark normxlogit †."""
    root = tmp_path_factory.mktemp("partial_plot")
    model = _save_tiny(root / "m", seed=0)
    config = write_config(root, model, limit=3, methods='["normxlogit", "random"]')
    return config, with_a_seed_not_started(config)


def _figures(config: Path, store: Path, monkeypatch, common: bool = False) -> dict:
    """Each figure the report draws: its legend and tick labels, and its texts."""
    pytest.importorskip("matplotlib")
    from normxlogit.bench import ResultStore, load_config, plots
    from normxlogit.bench.report import draw_plot
    from normxlogit.bench.results import experiment_results
    from normxlogit.bench.spec import PlotSpec

    drawn = {}

    def keep(plt, figure, path):
        labels = [
            t.get_text() for a in figure.axes if a.get_legend() for t in a.get_legend().get_texts()
        ]
        labels += [t.get_text() for a in figure.axes for t in a.get_xticklabels()]
        drawn[path.name] = (labels, [t.get_text() for t in figure.texts])
        plt.close(figure)

    monkeypatch.setattr(plots, "_save", keep)
    loaded = load_config(config)
    with ResultStore(store, create=False) as opened:
        results = experiment_results(loaded, opened)
        if common:
            results = [r.common() for r in results]
        for kind in ("curve", "summary"):
            spec = PlotSpec(metric="comp_cd", name=f"{kind}-comp_cd", kind=kind)
            draw_plot(spec, loaded, opened, results, Path(f"{kind}.png"))
    return drawn


def test_p02_the_report_figures_mark_a_partial_method(partial_store, monkeypatch):
    drawn = _figures(*partial_store, monkeypatch)
    assert set(drawn) == {"curve.png", "summary.png"}
    for name, (labels, texts) in drawn.items():
        assert "normxlogit†" in labels, (name, labels)
        assert "random" in labels and "random†" not in labels, (name, labels)
        note = " ".join(texts).replace("\n", " ")
        assert "†: not every instance is done yet" in note, (name, texts)
        assert "normxlogit / " in note and "0/3 (seed 1 not started)" in note, (name, note)


def test_p02_the_page_figures_on_shared_instances_have_no_mark(partial_store, monkeypatch):
    """The page draws on the instances all methods share: nothing there is partial."""
    drawn = _figures(*partial_store, monkeypatch, common=True)
    for name, (labels, texts) in drawn.items():
        assert not any("†" in label for label in labels), (name, labels)
        assert not any("†" in text for text in texts), (name, texts)


def test_p02_the_layers_figure_marks_a_partial_method(monkeypatch, tmp_path):
    """A per-layer metric: "a" on 3 instances, "b" on 1 of 3."""
    pytest.importorskip("matplotlib")
    from types import SimpleNamespace

    import pandas as pd

    from normxlogit.bench import plots
    from normxlogit.bench.results import ExperimentResults

    rows = [(m, i, x) for m, n in (("a", 3), ("b", 1)) for i in range(n) for x in (0, 1, 2)]
    frame = pd.DataFrame(
        {
            "instance": [i for _, i, _ in rows],
            "method": [m for m, _, _ in rows],
            "metric": "evidence_dot",
            "axis": "layer",
            "x": [float(x) for _, _, x in rows],
            "value": 0.5,
            "gold": None,
            "seed": 0,
        }
    )
    methods = [SimpleNamespace(display=m, layer=None) for m in ("a", "b")]
    experiment = SimpleNamespace(name="e", metrics=["evidence_dot"], methods=methods)
    result = ExperimentResults(experiment, frame, {}, 3, seeds=(0,))
    kept = {}

    def keep(plt, figure, path):
        kept["labels"] = [t.get_text() for a in figure.axes for t in a.get_legend().get_texts()]
        kept["texts"] = [t.get_text().replace("\n", " ") for t in figure.texts]
        plt.close(figure)

    monkeypatch.setattr(plots, "_save", keep)
    assert plots.plot_layers([result], "evidence_dot", tmp_path / "l.png")
    assert kept["labels"] == ["a", "b†"]
    assert "instances done: b / e 1/3" in " ".join(kept["texts"])


# ------------------------------------------------------------------ P03
def _glued_decoder():
    """A tiny GPT-2 classifier whose tokenizer (byte-level BPE) has no pair template."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocabulary = {chr(c): i for i, c in enumerate(range(32, 127))}
    vocabulary["<|endoftext|>"] = len(vocabulary)
    backend = Tokenizer(models.WordLevel(vocabulary, unk_token="<|endoftext|>"))
    backend.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tokenizer = T.PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|endoftext|>", unk_token="<|endoftext|>"
    )
    config = T.GPT2Config(vocab_size=len(vocabulary), num_labels=2, pad_token_id=95, **DECODER)
    torch.manual_seed(0)
    return T.GPT2ForSequenceClassification(config).eval(), tokenizer


def _warned(model, text) -> list[str]:
    import normxlogit as nx

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nx.explain(model, text, "random")
    return [str(w.message) for w in caught if issubclass(w.category, NormXLogitWarning)]


def test_p03_a_pair_read_glued_together_is_warned_of():
    import normxlogit as nx

    pair = _glued_decoder()
    assert pair[1].num_special_tokens_to_add(pair=True) == 0  # no pair template
    model = nx.load(pair)
    said = [m for m in _warned(model, ("A man is playing.", "A man plays.")) if "pair" in m]
    assert said, "no warning of the glued pair"
    assert len(set(said)) == 1 and "\n" not in said[0]
    assert "no pair template" in said[0] and '"first <|endoftext|> second"' in said[0]
    assert not any("pair template" in m for m in _warned(model, "A man is playing."))


def test_p03_a_tokenizer_with_a_pair_template_is_not_warned_of():
    import normxlogit as nx

    model = nx.load(
        (
            T.BertForSequenceClassification(
                T.BertConfig(vocab_size=len(fresh_tokenizer()), num_labels=2, **SMALL)
            ).eval(),
            fresh_tokenizer(),
        )
    )
    assert not any("pair template" in m for m in _warned(model, ("a man", "a woman")))


def test_p03_the_builtin_decoder_classifiers_have_a_separator():
    """The SmolLM2 classifiers' tokenizer gets a pair template: nothing to warn of."""
    from normxlogit.builtin.smollm2 import classifier_tokenizer
    from normxlogit.model.inputs import glues_pairs

    _, tokenizer = _glued_decoder()
    assert glues_pairs(tokenizer)
    assert not glues_pairs(classifier_tokenizer(tokenizer))


# ------------------------------------------------------------------ P04
def test_p04_serve_calls_a_config_as_store_by_its_own_flag(tmp_path):
    from normxlogit.serve.browse import BenchEntry

    model = _save_tiny(tmp_path / "m", seed=0)
    config = write_config(tmp_path, model, limit=2)
    with pytest.raises(InvalidInputError) as caught:
        BenchEntry.parse(f"{config}={config}")
    message = str(caught.value)
    assert "\n" not in message
    assert "--store" not in message
    assert "the STORE of --bench CONFIG=STORE names a bench config, not a store" in message
    assert str(config.with_suffix(".sqlite")) in message


def test_p04_a_config_under_a_store_name_is_said_without_store_too(tmp_path):
    from normxlogit.serve.browse import BenchEntry

    model = _save_tiny(tmp_path / "m", seed=0)
    config = write_config(tmp_path, model, limit=2)
    named = tmp_path / "grid-copy.sqlite"
    named.write_text(config.read_text())
    with pytest.raises(InvalidInputError) as caught:
        BenchEntry.parse(f"{config}={named}")
    message = str(caught.value)
    assert "--store" not in message and "--bench CONFIG=STORE" in message


def test_p04_the_cli_still_names_store(tmp_path):
    model = _save_tiny(tmp_path / "m", seed=0)
    config = write_config(tmp_path, model, limit=2)
    said = run_cli("bench", "status", str(config), "--store", str(config))
    assert said.returncode != 0
    assert "--store names a bench config, not a store" in said.stderr
