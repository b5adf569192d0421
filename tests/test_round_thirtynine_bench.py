"""Round thirty-nine of new-user probes, probe b: a method labelled "Avg" was taken for a
table's Avg row (never ranked; with ``average = true`` its number replaced by the
column mean) (P01); a data file's ``segments`` column edited after a run went unrecorded,
and the stored explanations and segment metrics kept the old segmentation (P02); a BLiMP
source none of whose pairs the masked LM can ask gave a 0-instance experiment marked done
(P03); ``--versus best`` left a method N/A in an experiment out without the "N/A here"
line (P05); a method labelled "best" could never be compared against, as ``--versus best``
switches to the best-per-metric mode (P06)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.runner import plan
from normxlogit.common.errors import (
    InvalidInputError,
    NormXLogitError,
    NormXLogitWarning,
    StaleResultsError,
)

from .bench.helpers import COMPLETE, _save_tiny, all_done, stale_refusals
from .conftest import fresh_tokenizer, invoke_in


@pytest.fixture(scope="module")
def sentiment_model(tmp_path_factory) -> Path:
    """A saved tiny BERT with SST-2's labels (negative, positive)."""
    return _save_tiny(tmp_path_factory.mktemp("tiny-sentiment-39"), seed=0)


def _config(folder: Path, body: str, data: str = "d.tsv") -> Path:
    (folder / "d.tsv").write_text("sentence\tlabel\na good film\t1\na bad film\t0\n")
    config = folder / "c.toml"
    config.write_text(
        f'seeds = [0]\nmetrics = ["comp_cd"]\n{body}\n'
        f'[[experiments]]\nmodel = "minilm-sst2"\ndataset = "{folder / data}"\n'
    )
    return config


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize(
    ("label", "says"),
    [
        ("Avg", ["average = true", 'give it another label = "..."']),  # P01
        ("best", ["--versus best", "(or leave label out for 'random')"]),  # P06
    ],
)
def test_p01_p06_a_method_labelled_as_a_reserved_row_is_refused_when_read(tmp_path, label, says):
    config = _config(
        tmp_path,
        f'[[methods]]\nname = "normxlogit"\n[[methods]]\nname = "random"\nlabel = "{label}"',
    )
    with pytest.raises(NormXLogitError) as caught:
        load_config(config)
    message = str(caught.value)
    assert f"method 'random' label = '{label}'" in message
    for part in says:
        assert part in message


def test_p01_an_experiment_own_method_labelled_avg_is_refused(tmp_path):
    config = _config(tmp_path, 'methods = ["random"]')
    config.write_text(
        config.read_text() + '[[experiments.methods]]\nname = "normxlogit"\nlabel = "Avg"\n'
    )
    with pytest.raises(NormXLogitError, match="label = 'Avg'"):
        load_config(config)


def test_p01_an_experiment_row_named_avg_in_an_averaged_table_is_refused(tmp_path):
    config = _config(tmp_path, 'methods = ["random"]')
    config.write_text(
        config.read_text()
        + 'name = "Avg"\n[[tables]]\ntitle = "t"\nmetric = "comp_cd"\nrows = "experiment"\n'
        'columns = "method"\ngroups = "none"\naverage = true\n'
    )
    with pytest.raises(NormXLogitError) as caught:
        load_config(config)
    message = str(caught.value)
    assert "table 1 has average = true and a row 'Avg'" in message
    assert 'give the experiment another name = "..."' in message
    config.write_text(config.read_text().replace("average = true", "average = false"))
    assert load_config(config).experiments[0].name == "Avg"  # no Avg row: no clash


def test_p01_labels_the_table_does_not_read_as_its_rows_are_kept(tmp_path):
    config = _config(
        tmp_path,
        '[[methods]]\nname = "normxlogit"\nlabel = "avg"\n'
        '[[methods]]\nname = "random"\nlabel = "Best"',
    )
    labels = [m.display for m in load_config(config).experiments[0].methods]
    assert labels == ["avg", "Best"]


# ------------------------------------------------------------------ P02
def _segment_bench(
    folder: Path, model: Path, second: list[str], segments: str = "data", metric="segment_hit_1"
) -> Path:
    rows = [
        {
            "text": "The film is good. The acting is bad. I liked it.",
            "label": 1,
            "segments": ["The film is good.", "The acting is bad.", "I liked it."],
            "evidence_segments": [0, 2],
        },
        {
            "text": "It was dull. Nothing happened. Avoid it.",
            "label": 0,
            "segments": second,
            "evidence_segments": [0],
        },
    ]
    data = folder / "s.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    config = folder / "s.toml"
    config.write_text(
        f'seeds = [0]\nsegments = "{segments}"\nmetrics = ["{metric}"]\n'
        f'methods = ["random"]\n[[experiments]]\nmodel = "{model}"\ndataset = "{data}"\n'
    )
    return config


THREE = ["It was dull.", "Nothing happened.", "Avoid it."]
TWO = ["It was dull. Nothing happened.", "Avoid it."]


def test_p02_edited_segments_are_refused_by_run_and_status(tmp_path, sentiment_model):
    config = _segment_bench(tmp_path, sentiment_model, THREE)
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_bench(load_config(config), store)
    _segment_bench(tmp_path, sentiment_model, TWO)  # the segmentation corrected
    for message in stale_refusals(config, tmp_path / "s.sqlite"):
        assert "gives instance 1 other segments than" in message
        assert f"(segments {json.dumps(TWO)}, stored {json.dumps(THREE)})" in message
        assert "--store NEW.sqlite" in message
    _segment_bench(tmp_path, sentiment_model, THREE)  # the data the store was filled from
    assert all_done(config, tmp_path / "s.sqlite")


def test_p02_segments_no_value_reads_are_not_compared(tmp_path, sentiment_model):
    """With segments = "sentences" the data's segments column is read by nothing."""
    config = _segment_bench(tmp_path, sentiment_model, THREE, "sentences", "comp_cd")
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_bench(load_config(config), store)
    _segment_bench(tmp_path, sentiment_model, TWO, "sentences", "comp_cd")
    with ResultStore(tmp_path / "s.sqlite", create=False) as store:
        assert all(cell.done == cell.total for cell in plan(load_config(config), store))


def test_p02_a_store_recorded_without_segments_reads_as_before(tmp_path, sentiment_model):
    """A store whose records lack the segments (an earlier normxlogit's) is read as before,
    and the next run records the segments it reads."""
    import sqlite3

    config = _segment_bench(tmp_path, sentiment_model, THREE)
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_bench(load_config(config), store)
    with sqlite3.connect(tmp_path / "s.sqlite") as conn:
        for dataset, instance, gold in conn.execute("SELECT * FROM annotations").fetchall():
            older = {k: v for k, v in json.loads(gold).items() if k != "segments"}
            conn.execute(
                "UPDATE annotations SET gold=? WHERE dataset=? AND instance=?",
                (json.dumps(older, sort_keys=True), dataset, instance),
            )
    _segment_bench(tmp_path, sentiment_model, TWO)
    with ResultStore(tmp_path / "s.sqlite", create=False) as store:
        assert all(
            cell.done == cell.total for cell in plan(load_config(config), store, with_units=False)
        )
        run_bench(load_config(config), store)  # records the segments it read
    _segment_bench(tmp_path, sentiment_model, THREE)
    store = ResultStore(tmp_path / "s.sqlite", create=False)
    with store, pytest.raises(StaleResultsError, match="other segments"):
        run_bench(load_config(config), store)


def test_p02_stores_filled_from_other_segments_do_not_merge(tmp_path, sentiment_model):
    for name, second in (("a", THREE), ("b", TWO)):
        config = _segment_bench(tmp_path, sentiment_model, second)
        with ResultStore(tmp_path / f"{name}.sqlite") as store:
            run_bench(load_config(config), store)
    store = ResultStore(tmp_path / "a.sqlite", create=False)
    with store, pytest.raises(NormXLogitError) as caught:
        store.merge_from(tmp_path / "b.sqlite")
    assert "other segments for instance 1" in str(caught.value)


# ------------------------------------------------------------------ P03
def _pairs(*words: tuple[str, str]):
    from normxlogit.data.blimp import BlimpPair

    return [
        BlimpPair(
            paradigm="anaphor_number_agreement",
            pair_id=index,
            good=f"the cat saw {good} here",
            bad=f"the cat saw {bad} here",
            target=3,
            target_word=good,
            foil_word=bad,
            evidence=(1,),
            source="rule",
        )
        for index, (good, bad) in enumerate(words)
    ]


@pytest.fixture
def unaskable_blimp(monkeypatch, tmp_path):
    """A BLiMP folder whose pairs the test tokenizer cannot ask: one not one token apart,
    one whose word reads as [UNK] (the spaCy parse is not needed to tell)."""
    from normxlogit.data import masked_pairs

    tokenizer = fresh_tokenizer()
    known = next(w for w in ("cat", "dog", "film", "good") if w in tokenizer.get_vocab())
    assert tokenizer.tokenize("☃") == [tokenizer.unk_token]
    pairs = _pairs(("qzherself", "qzthemselves"), (known, "☃"))
    monkeypatch.setattr(masked_pairs, "read_blimp", lambda *args, **kwargs: pairs)
    (tmp_path / "bu").mkdir()
    (tmp_path / "bu" / "anaphor_number_agreement.jsonl").write_text("{}\n")
    return tmp_path / "bu"


def test_p03_blimp_with_no_pair_left_is_refused_naming_why(unaskable_blimp):
    from normxlogit.data.masked_pairs import read_blimp_masked

    with pytest.raises(InvalidInputError) as caught:
        read_blimp_masked("all", tokenizer=fresh_tokenizer(), path=str(unaskable_blimp))
    message = str(caught.value)
    assert "none of the 2 BLiMP pairs" in message
    assert "1 not one token apart for this tokenizer" in message
    assert "1 whose word the vocabulary lacks" in message
    assert "use a masked LM whose tokenizer reads" in message


def test_p03_a_split_with_no_pair_is_refused(monkeypatch, unaskable_blimp):
    from normxlogit.data import masked_pairs

    monkeypatch.setattr(masked_pairs, "read_blimp", lambda *args, **kwargs: _pairs(("a", "b")))
    with pytest.raises(InvalidInputError, match="holds no pair in split 'heldout'"):
        masked_pairs.read_blimp_masked(
            "heldout", tokenizer=fresh_tokenizer(), path=str(unaskable_blimp)
        )


def test_p03_a_pair_kept_is_read_with_the_warning(monkeypatch, unaskable_blimp):
    from normxlogit.data import masked_pairs

    tokenizer = fresh_tokenizer()
    known = [w for w in ("cat", "dog", "film", "good", "bad") if w in tokenizer.get_vocab()]
    pairs = _pairs(("qzherself", "qzthemselves"), (known[0], known[1]))
    monkeypatch.setattr(masked_pairs, "read_blimp", lambda *args, **kwargs: pairs)
    with pytest.warns(NormXLogitWarning, match="1 BLiMP pairs left out"):
        kept = masked_pairs.read_blimp_masked("all", tokenizer=tokenizer, path=str(unaskable_blimp))
    assert len(kept) == 1


def test_p03_bench_status_and_run_refuse_before_any_run(tmp_path, unaskable_blimp, tiny_masked_lm):
    config = tmp_path / "u.toml"
    config.write_text(
        'seeds = [0]\nmetrics = ["evidence_ap"]\n[[methods]]\nname = "normxlogit"\n'
        f'target = "label"\n[[experiments]]\nmodel = "{tiny_masked_lm}"\ndataset = "blimp"\n'
        f'path = "{unaskable_blimp}"\nsplit = "all"\n'
    )
    with ResultStore(tmp_path / "u.sqlite"):  # a store other experiments filled
        pass
    for command in (("status", str(config), "--store", "u.sqlite"), (str(config),)):
        said = invoke_in(tmp_path, "bench", *command)
        assert said.exit_code != 0, said.output
        assert "none of the 2 BLiMP pairs" in said.output
    assert _stored_units(tmp_path / "u.sqlite") == 0


def _stored_units(path: Path) -> int:
    import sqlite3

    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT COUNT(*) FROM explanations").fetchone()[0]


# ------------------------------------------------------------------ P05
def test_p05_versus_best_names_a_method_na_in_the_experiment():
    from normxlogit.bench.report import paired_table

    index = pd.MultiIndex.from_product([["normxlogit", "random"], [0, 1, 2]])
    index = index.set_names(["method", "instance"])
    summaries = pd.DataFrame({"comp_cd": [0.3, 0.2, 0.4, 0.1, 0.0, 0.1]}, index=index)
    result = SimpleNamespace(
        experiment=SimpleNamespace(
            name="tb2:d.jsonl",
            methods=[SimpleNamespace(display=m) for m in ("normxlogit", "random", "grad_ellm")],
        ),
        skipped={"grad_ellm": "grad_ellm explains decoder-only models."},
        instance_summaries=lambda: summaries,
        **COMPLETE,
    )
    table = paired_table(result, "best")
    assert table is not None and "| normxlogit | best |" in table
    assert "grad_ellm: N/A here, left out: grad_ellm explains decoder-only models." in table


# ------------------------------------------------------------------ P06
def test_p06_the_cli_refuses_it_before_any_run(tmp_path):
    config = _config(tmp_path, '[[methods]]\nname = "random"\nlabel = "best"')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        said = invoke_in(tmp_path, "bench", "status", str(config))
    assert said.exit_code != 0
    assert "label = 'best'" in said.output
