"""Segments in the bench (issue 42): ``segments`` / ``segment_reduce`` in a config,
segment methods, ``unit = "segment"`` and the segment plausibility metrics; stored
explanations keep their segment scores, the keys tell segment results from token results,
mistakes are refused before any model loads, and a run cut short resumes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import transformers as T

import normxlogit
from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.report import write_report
from normxlogit.bench.results import export_frame
from normxlogit.bench.spec import MethodSpec
from normxlogit.bench.store import CellKey
from normxlogit.common.errors import InvalidInputError
from normxlogit.data import load_dataset
from normxlogit.evaluation import Protocol

from ..conftest import SMALL, fresh_tokenizer, tokenizer
from ..datasets.test_boolq_sentences import eraser_folder
from .helpers import stored, table_counts, write_config

METRICS = ["pi_soft_nc", "pi_soft_ns", "segment_auprc", "segment_hit_1", "segment_hit_3"]
METHODS = """
[[methods]]
name = "normxlogit"

[[methods]]
name = "random"

[[methods]]
name = "leave_one_out"
label = "LOO"

[[methods]]
name = "shapley_sampling"
label = "Shapley"
options = { samples = 2 }

[[methods]]
name = "contextcite"
label = "CC 4"
options = { ablations = 4 }

[[methods]]
name = "contextcite"
label = "CC 8"
options = { ablations = 8 }
"""


@pytest.fixture(scope="module")
def boolq_model(tmp_path_factory) -> Path:
    """A saved tiny BERT with BoolQ's labels (false, true) whose outputs move when
    sentences go (a large initialisation)."""
    folder = tmp_path_factory.mktemp("tiny-boolq")
    torch.manual_seed(1)
    config = T.BertConfig(
        vocab_size=len(tokenizer()),
        initializer_range=0.5,
        num_labels=2,
        id2label={0: "false", 1: "true"},
        label2id={"false": 0, "true": 1},
        **SMALL,
    )
    T.BertForSequenceClassification(config).eval().save_pretrained(folder)
    fresh_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def eraser(tmp_path_factory) -> Path:
    return eraser_folder(tmp_path_factory.mktemp("eraser") / "boolq")


def context_config(
    folder: Path,
    model: Path,
    data: Path,
    *,
    metrics=METRICS,
    methods: str = METHODS,
    top: str = 'segments = "data"',
    options: str = 'passage = "sentences", context = 1',
    name: str = "context.toml",
) -> Path:
    path = folder / name
    path.write_text(
        f"""title = "tiny context"
seeds = [0]
chunk_size = 1
metrics = {json.dumps(list(metrics))}
{top}

[protocol]
unit = "segment"
samples = 2
pis = [0.25, 0.75]
{methods}
[[experiments]]
name = "boolq"
model = "{model}"
dataset = "boolq"
split = "val"
path = "{data}"
options = {{ {options} }}
"""
    )
    return path


def _cell(config, label: str) -> CellKey:
    (experiment,) = config.experiments
    method = next(m for m in experiment.methods if m.display == label)
    return CellKey(experiment.model, experiment.dataset.key, method.key, 0)


def test_a_segment_grid_stores_segment_scores_and_equals_the_api(
    tmp_path, boolq_model, eraser, monkeypatch
):
    config = load_config(context_config(tmp_path, boolq_model, eraser))
    methods = {m.display: m for m in config.experiments[0].methods}
    assert methods["normxlogit"].segments == "data"
    assert methods["normxlogit"].segment_reduce == "sum"  # the default, said in the key
    assert methods["LOO"].segment_reduce is None  # a segment method scores segments itself
    examples = load_dataset("boolq", "val", path=eraser, passage="sentences", context=1)
    with ResultStore(tmp_path / "s.sqlite") as store:
        report = run_bench(config, store)
        assert report.units == 2 * 6 and not report.skipped
        assert run_bench(config, store).units == 0  # nothing twice
        for label, how in (("normxlogit", "sum"), ("LOO", "native"), ("CC 8", "native")):
            payloads = store.explanations(_cell(config, label), [0, 1])
            for instance, example in enumerate(examples):
                segments = payloads[instance]["segments"]
                assert segments["texts"] == list(example.segments)
                assert segments["how"] == how
        frame = export_frame(store)
    assert set(frame["segments"]) == {"data"}
    reduce = frame.groupby("method")["segment_reduce"].first()
    assert reduce["normxlogit"] == "sum" and pd.isna(reduce["contextcite"])
    assert frame.groupby("method")["method_options"].nunique()["contextcite"] == 2
    soft = frame[frame["metric"] == "pi_soft_nc"]["protocol"]
    assert soft.map(lambda p: json.loads(p)["unit"] == "segment").all()
    assert set(frame["metric"]) == set(METRICS)

    # the stored values are what explain and evaluate give
    model = normxlogit.load(str(boolq_model))
    texts = [e.text for e in examples]
    protocol = Protocol(unit="segment", samples=2, pis=(0.25, 0.75), seed=0)
    for method in ("normxlogit", "leave_one_out"):
        made = model.explain(texts, method=method, segments=[list(e.segments) for e in examples])
        direct = normxlogit.evaluate(
            model, {method: made}, ["pi_soft_nc"], protocol=protocol, progress=False
        )
        ranked = normxlogit.evaluate(
            model,
            {method: made},
            ["segment_auprc", "segment_hit_1"],
            protocol=protocol,
            evidence=[list(e.evidence_segments) for e in examples],
            progress=False,
        )
        for result in (direct, ranked):
            for metric, rows in result.frame.groupby("metric"):
                mine = frame[(frame["method"] == method) & (frame["metric"] == metric)]
                np.testing.assert_allclose(
                    mine.sort_values(["instance", "x"])["value"],
                    rows.sort_values(["instance", "x"])["value"],
                    rtol=1e-5,
                    atol=1e-6,
                )
    # the report renders the segment tables
    with ResultStore(tmp_path / "s.sqlite", create=False) as store:
        written = write_report(config, store, tmp_path / "report")
    assert "segment_hit_3" in (tmp_path / "report" / "report.md").read_text()
    assert written
    # a distribution figure shows what the metrics ranked: segment scores, not tokens'
    from normxlogit.bench import plots, report
    from normxlogit.bench.spec import PlotSpec

    drawn = {}
    monkeypatch.setattr(plots, "plot_distribution", lambda *a: drawn.update(units=a[3]) or True)
    with ResultStore(tmp_path / "s.sqlite", create=False) as store:
        values = report.attribution_values(config, store)
        spec = PlotSpec(metric="", kind="distribution", name="d")
        assert report.draw_plot(spec, config, store, [], tmp_path / "d.png")
    assert drawn["units"] == {"boolq": "segments"}
    segments = sum(len(e.segments) for e in examples)
    for label, scores in values["boolq"].items():
        assert 0 < len(scores) <= segments, label  # one value a segment, not a token


def test_token_and_segment_results_are_kept_apart(tmp_path, sentiment_model):
    """The same method with and without segments, or with another reduction, are other
    cells (their explanations differ): stored side by side, exported apart."""
    assert (
        len(
            {
                MethodSpec("normxlogit").key,
                MethodSpec("normxlogit", segments="sentences", segment_reduce="sum").key,
                MethodSpec("normxlogit", segments="sentences", segment_reduce="mean").key,
                MethodSpec("normxlogit", segments="data", segment_reduce="sum").key,
            }
        )
        == 4
    )
    store = tmp_path / "s.sqlite"
    plain = write_config(tmp_path, sentiment_model, methods='["normxlogit"]', limit=3)
    plain = plain.rename(tmp_path / "plain.toml")
    sentences = write_config(
        tmp_path,
        sentiment_model,
        methods='["normxlogit", "leave_one_out"]',
        metrics='["comp_cd", "pi_soft_nc"]',
        limit=3,
        body='segments = "sentences"\nprotocol = { unit = "segment" }\n',
    )
    for path in (plain, sentences):
        with ResultStore(store) as results:
            run_bench(load_config(path), results)
    assert table_counts(store)["explanations"] == 3 * 3  # plain, and two with segments
    frame = stored(store)
    keys = ["method", "method_options", "segments", "segment_reduce", "seed", "instance"]
    keys += ["metric", "protocol", "x"]
    assert not frame.duplicated(keys).any()
    normxlogit_rows = frame[frame["method"] == "normxlogit"]
    assert set(normxlogit_rows["segments"].fillna("-")) == {"-", "sentences"}
    # another reduction is another cell: explained again, the plain cell untouched
    mean = sentences.read_text().replace(
        'segments = "sentences"', 'segments = "sentences"\nsegment_reduce = "mean"'
    )
    sentences.write_text(mean)
    with ResultStore(store) as results:
        report = run_bench(load_config(sentences), results)
    assert report.units == 1  # normxlogit again (one chunk); leave_one_out is stored
    assert table_counts(store)["explanations"] == 4 * 3


@pytest.mark.parametrize(
    "top, methods, metrics, protocol, wanted",
    [
        ("", METHODS, ["pi_soft_nc"], "", 'method LOO scores segments; add segments = "data"'),
        (
            "",
            '[[methods]]\nname = "normxlogit"',
            ["pi_soft_nc"],
            'unit = "segment"',
            'protocol unit = "segment" ranks segments',
        ),
        (
            "",
            '[[methods]]\nname = "normxlogit"',
            ["segment_auprc"],
            "",
            "metric segment_auprc reads each instance's evidence segments",
        ),
        (
            'segments = "sentences"',
            '[[methods]]\nname = "normxlogit"',
            ["segment_hit_1"],
            "",
            'set segments = "data"',
        ),
        (
            'segments = "paragraphs"',
            '[[methods]]\nname = "normxlogit"',
            ["comp_cd"],
            "",
            'choose "sentences"',
        ),
        (
            'segments = "data"\nsegment_reduce = "median"',
            '[[methods]]\nname = "normxlogit"',
            ["comp_cd"],
            "",
            "segment_reduce = 'median'; choose one of sum, mean, max, absmax",
        ),
        (
            'segment_reduce = "mean"',
            '[[methods]]\nname = "normxlogit"',
            ["comp_cd"],
            "",
            "segment_reduce goes with segments",
        ),
        (
            'segments = "data"',
            '[[methods]]\nname = "leave_one_out"\nsegment_reduce = "max"',
            ["comp_cd"],
            "",
            "scores segments itself; segment_reduce is for token methods",
        ),
    ],
)
def test_segment_mistakes_are_refused_when_the_config_is_read(
    tmp_path, boolq_model, eraser, top, methods, metrics, protocol, wanted
):
    path = context_config(tmp_path, boolq_model, eraser, metrics=metrics, methods=methods, top=top)
    if not protocol:
        path.write_text(path.read_text().replace('unit = "segment"\n', ""))
    with pytest.raises(InvalidInputError) as refused:
        load_config(path)
    message = str(refused.value)
    assert wanted in message and "\n" not in message


def test_segments_a_generation_does_not_take_are_refused(tmp_path):
    path = tmp_path / "gen.toml"
    path.write_text(
        'segments = "sentences"\nmetrics = ["pi_soft_nc"]\nmethods = ["random"]\n'
        '[[experiments]]\nmodel = "smollm2-135m-chat"\ndataset = "tellmewhy"\n'
    )
    with pytest.raises(InvalidInputError, match="segments apply to experiments on texts"):
        load_config(path)


def test_data_without_segments_is_refused_before_any_model_loads(
    tmp_path, boolq_model, eraser, sentiment_model, monkeypatch
):
    from normxlogit.bench.runner import LoadedDataset, check_segment_data
    from normxlogit.bench.work import Worker

    def no_model(self, name):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(Worker, "model", no_model)
    sst2 = write_config(
        tmp_path,
        sentiment_model,
        methods='["leave_one_out"]',
        metrics='["comp_cd"]',
        body='segments = "data"\n',
    )
    window = context_config(tmp_path, boolq_model, eraser, options='passage = "window"')
    for path, wanted in (
        (sst2, 'sst2 gives instance 0 none; read boolq with options = { passage = "sentences" }'),
        (window, "boolq gives instance 0 none"),
    ):
        with ResultStore(tmp_path / "s.sqlite") as store, pytest.raises(InvalidInputError) as no:
            run_bench(load_config(path), store)
        assert wanted in str(no.value) and "\n" not in str(no.value)
        assert table_counts(tmp_path / "s.sqlite")["explanations"] == 0
    # segments without evidence segments, for the segment plausibility metrics
    config = load_config(context_config(tmp_path, boolq_model, eraser))
    data = LoadedDataset({0: ("q", "A. B.")}, {0: 1}, {0: 0}, (), segments={0: ("A.", "B.")})
    with pytest.raises(InvalidInputError, match="needs each instance's evidence segments"):
        check_segment_data(config.experiments[0], data)


def test_a_segment_run_cut_short_resumes_to_the_uninterrupted_run(tmp_path, boolq_model, eraser):
    """A unit that fails half-way keeps nothing; the next run finishes the grid, and
    metrics added later read the stored segment explanations: the store equals one
    uninterrupted run's."""
    methods = METHODS.split('[[methods]]\nname = "shapley_sampling"')[0]  # 3 methods
    whole_config = load_config(context_config(tmp_path, boolq_model, eraser, methods=methods))
    with ResultStore(tmp_path / "whole.sqlite") as store:
        run_bench(whole_config, store)

    class FailingStore(ResultStore):
        writes = 0

        def add_unit(self, cell, explanations, evaluations, fingerprint=None):
            FailingStore.writes += 1
            if FailingStore.writes == 3:
                raise RuntimeError("killed")
            super().add_unit(cell, explanations, evaluations, fingerprint)

    first = load_config(
        context_config(
            tmp_path,
            boolq_model,
            eraser,
            methods=methods,
            metrics=["segment_hit_1"],
            name="first.toml",
        )
    )
    cut = tmp_path / "cut.sqlite"
    with FailingStore(cut) as store, pytest.raises(RuntimeError, match="killed"):
        run_bench(first, store)
    assert table_counts(cut)["explanations"] == 2  # two whole units
    with ResultStore(cut) as store:
        run_bench(first, store)
        report = run_bench(whole_config, store)  # the other metrics, on stored explanations
    assert report.units == 3 * 2 and table_counts(cut)["explanations"] == 3 * 2
    whole, finished = stored(tmp_path / "whole.sqlite"), stored(cut)
    pd.testing.assert_frame_equal(
        finished.drop(columns="value"), whole.drop(columns="value"), check_dtype=False
    )
    np.testing.assert_allclose(finished["value"], whole["value"], rtol=1e-5, atol=1e-6)


def test_a_pair_s_own_segments_are_found_in_its_passage():
    """A question that repeats a passage's sentence does not take that segment's place."""
    from normxlogit.data.files import segment_spec
    from normxlogit.model.segments import resolve_segments

    pair = ("The mat was red .", "CATS The mat was red .")
    found = segment_spec(pair, ("CATS", "The mat was red ."))
    assert found == [(1, 0, 4), (1, 5, 22)]
    assert resolve_segments(pair, found).texts(pair) == ["CATS", "The mat was red ."]
    assert segment_spec("One. Two.", ("One.", "Two.")) == ["One.", "Two."]


def test_a_users_data_file_gives_the_bench_its_segments_and_evidence(tmp_path, boolq_model):
    """``dataset = "<a .jsonl file>"`` with segments and evidence_segments columns runs
    a segment grid as BoolQ's sentences do; the stored values are evaluate's own."""
    rows = [
        {
            "question": "is the cast good?",
            "passage": "The cast is great. The plot is thin. I left happy.",
            "label": "true",
            "segments": ["The cast is great.", "The plot is thin.", "I left happy."],
            "evidence_segments": [0],
        },
        {
            "question": "is the plot thin?",
            "passage": "It opens well. The plot is thin.",
            "label": "true",
            "segments": ["It opens well.", "The plot is thin."],
            "evidence_segments": [1],
        },
    ]
    data = tmp_path / "mine.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    path = tmp_path / "mine.toml"
    path.write_text(
        f"""seeds = [0]
metrics = ["segment_hit_1", "segment_auprc"]
segments = "data"
methods = ["leave_one_out", "random"]

[[experiments]]
name = "mine"
model = "{boolq_model}"
dataset = "{data}"
"""
    )
    config = load_config(path)
    with ResultStore(tmp_path / "s.sqlite") as store:
        assert not run_bench(config, store).skipped
        frame = export_frame(store)
    model = normxlogit.load(str(boolq_model))
    texts = [(row["question"], row["passage"]) for row in rows]
    made = model.explain(texts, method="leave_one_out", segments=[r["segments"] for r in rows])
    direct = normxlogit.evaluate(
        model,
        {"leave_one_out": made},
        ["segment_hit_1", "segment_auprc"],
        evidence=[r["evidence_segments"] for r in rows],
        progress=False,
    )
    for metric, expected in direct.frame.groupby("metric"):
        mine = frame[(frame["method"] == "leave_one_out") & (frame["metric"] == metric)]
        np.testing.assert_allclose(
            mine.sort_values("instance")["value"], expected.sort_values("instance")["value"]
        )


def test_segment_checks_without_segments_are_refused_when_the_config_is_read(
    tmp_path, sentiment_model
):
    """segment_drop / segment_lds explained every instance, then asked for Python's
    segments=; the config's fix is named when it is read."""
    for metric in ("segment_drop", "segment_lds"):
        path = write_config(tmp_path, sentiment_model, metrics=f'["{metric}"]')
        with pytest.raises(
            InvalidInputError, match=f'{metric} reads each .*segments = "sentences"'
        ):
            load_config(path)
