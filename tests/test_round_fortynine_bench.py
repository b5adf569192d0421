"""Round forty-nine of probes (prober B: bench, page, files on disk): a float64 model's
metrics reduced in float64, a regressor's gold score on the page, ``serve --bench`` with a
config's name that starts with a blank, a model name that starts with one, gold labels no
metric reads, ``path =`` beside a data file, and the noted items (merge advice onto a
folder, a compressed store's free name, an invisible character in ``path``)."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest

from .conftest import invoke_in


def _said(result) -> str:
    return " ".join(result.output.split())


def test_float64_model_metrics_differ_from_float32_by_rounding_only(tiny_classifier):
    import normxlogit as nx

    m32 = nx.load(str(tiny_classifier))
    m64 = nx.load(str(tiny_classifier), dtype="float64")
    explanation = m32.explain("fine acting here and a good movie overall", method="normxlogit")
    for metric in ("comp_cd", "suff_cd"):
        a = nx.evaluate(m64, [explanation], metrics=[metric]).frame.value.to_numpy()
        b = nx.evaluate(m32, [explanation], metrics=[metric]).frame.value.to_numpy()
        assert not np.array_equal(a, b), metric  # not the float32 numbers widened
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
        # some value is no float32 number at all: it was reduced in float64
        assert any(float(np.float32(x)) != x for x in a if not math.isnan(x)), metric


# ------------------------------------------------------------------ 2
def test_the_page_shows_a_regressors_gold_score_as_the_number(tmp_path):
    """transformers writes a regressor's config.json with ``problem_type = "regression"``
    and a one-entry ``id2label``, no ``num_labels``: its gold score 0 was "LABEL_0"."""
    import json

    from normxlogit.bench import ResultStore, load_config, run_bench
    from normxlogit.bench.config import _classifier_labels
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    from .conftest import saved_tiny

    model = saved_tiny(tmp_path / "reg", "bert", "regression")
    assert "num_labels" not in json.loads((model / "config.json").read_text())
    assert _classifier_labels(str(model), None) == []
    (tmp_path / "r.tsv").write_text("sentence\tscore\ngood movie\t0\nbad film\t3\nok\t1\n")
    (tmp_path / "g.toml").write_text(
        'seeds = [0]\nmetrics = ["comp_acc"]\nmethods = ["random"]\n[protocol]\nratios = [0.5]\n'
        f'[[experiments]]\nmodel = "{model}"\ndataset = "r.tsv"\n'
    )
    config = load_config(tmp_path / "g.toml")
    with ResultStore(tmp_path / "g.sqlite") as store:
        run_bench(config, store)
    browser = BenchBrowser([BenchEntry.parse(f"{tmp_path / 'g.toml'}={tmp_path / 'g.sqlite'}")])
    name = config.experiments[0].name
    golds = [browser.explanation(0, name, "random", i)["label"] for i in range(3)]
    assert golds == [0, 3, 1], golds


# ------------------------------------------------------------------ 3
@pytest.mark.parametrize(
    ("name", "where"),
    [(" g.toml", "begins with a space or tab"), ("\u2060k.toml", "begins with U+2060")],
)
def test_serve_bench_refuses_a_config_named_with_an_unseen_edge(
    tmp_path, tiny_classifier, name, where
):
    from normxlogit.common.errors import InvalidInputError
    from normxlogit.serve.browse import BenchEntry

    body = (
        'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "d.tsv"\n'
    )
    (tmp_path / "d.tsv").write_text("sentence\tlabel\ngood movie\t1\n")
    (tmp_path / "g.toml").write_text(body)
    (tmp_path / "g.sqlite").write_bytes(b"")
    (tmp_path / name).write_text(body)
    with pytest.raises(InvalidInputError) as caught:
        BenchEntry.parse(tmp_path / name)
    said = str(caught.value)
    assert said.startswith(f"--bench {str(tmp_path / name)!r}: the config's name {where}"), said
    assert said.endswith("or pass --bench CONFIG=STORE"), said
    assert "no results store" not in said and "=g.sqlite" not in said and "the blank" not in said


# ------------------------------------------------------------------ 4
@pytest.mark.parametrize(
    ("lead", "said"),
    [
        (" ", "a space or tab"),
        ("\u200b", "U+200B (ZERO WIDTH SPACE)"),
        ("\u00a0", "U+00A0 (NO-BREAK SPACE)"),
        ("\u2060", "U+2060 (WORD JOINER)"),
    ],
)
def test_a_model_name_starting_with_an_unseen_character_is_no_hub_id(
    tmp_path, tiny_classifier, lead, said
):
    """It passed the config check as a hub id and failed mid-run with transformers'
    "Repo id must use alphanumeric chars"."""
    from normxlogit.bench import load_config
    from normxlogit.common.errors import NormXLogitError

    (tmp_path / "d.tsv").write_text("sentence\tlabel\ngood movie\t1\n")
    shutil.copytree(tiny_classifier, tmp_path / "m")
    config = tmp_path / "e.toml"
    for model in (f"{lead}m/", f"{lead}{tmp_path / 'm'}"):
        config.write_text(
            'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
            f'[[experiments]]\nmodel = "{model}"\ndataset = "d.tsv"\n'
        )
        with pytest.raises(NormXLogitError) as caught:
            load_config(config)
        message = str(caught.value)
        assert f"(its name starts with {said}; " in message and "m exists)" in message, message


# ------------------------------------------------------------------ 5
@pytest.mark.parametrize(
    ("rows", "said"),
    [
        (
            "good movie\t1\nbad film\tpos\n",
            "gives the gold labels both as indices (line 2: 1) and as names (line 3: pos)",
        ),
        ("good movie\t1\nbad film\t5\n", "label index 5 (the gold label of d.tsv line 3"),
    ],
)
def test_gold_labels_no_metric_reads_are_left_alone(tmp_path, tiny_classifier, rows, said):
    """comp_cd reads no gold label: the mix (or an index the model lacks) was refused at
    the experiment's turn, after earlier experiments ran, with no line. Now it is left
    alone, as bench.md says; a metric that reads them is refused before any cell."""
    (tmp_path / "d.tsv").write_text("sentence\tlabel\n" + rows)
    body = (
        'seeds = [0]\nmethods = ["random"]\n[protocol]\nratios = [0.5]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "d.tsv"\n'
    )
    (tmp_path / "c.toml").write_text('metrics = ["comp_cd"]\n' + body)
    result = invoke_in(tmp_path, "bench", "run", "c.toml")
    assert result.exit_code == 0, result.output
    (tmp_path / "a.toml").write_text('metrics = ["comp_acc"]\n' + body)
    for command in (("status", "a.toml", "--store", "c.sqlite"), ("run", "a.toml")):
        result = invoke_in(tmp_path, "bench", *command)
        assert result.exit_code != 0 and said in _said(result), result.output
    assert not (tmp_path / "a.sqlite").exists()


# ------------------------------------------------------------------ 6
@pytest.mark.parametrize("path", ["d.tsv", "fold"])
def test_path_beside_a_data_file_is_refused_in_the_configs_words(tmp_path, tiny_classifier, path):
    (tmp_path / "d.tsv").write_text("sentence\tlabel\ngood movie\t1\n")
    (tmp_path / "fold").mkdir()
    (tmp_path / "p.toml").write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "d.tsv"\npath = "{path}"\n'
    )
    result = invoke_in(tmp_path, "bench", "run", "p.toml")
    said = _said(result)
    assert result.exit_code != 0, said
    assert f'p.toml: experiment 1 path = "{path}" applies to a registered data set' in said
    assert 'dataset = "d.tsv" is already a file: leave path out' in said, said
    assert "splits or options" not in said and "load_dataset" not in said
    assert not (tmp_path / "p.sqlite").exists()


# ------------------------------------------------------------------ noted
def test_noted_an_invisible_character_in_path_is_written_as_its_escape(tmp_path, tiny_classifier):
    from normxlogit.bench import load_config
    from normxlogit.common.errors import InvalidInputError

    (tmp_path / "d.tsv").write_text("sentence\tlabel\ngood movie\t1\n")
    config = tmp_path / "p.toml"
    config.write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "sst2"\n'
        'path = "d.tsv\\u200b"\n'
    )
    with pytest.raises(InvalidInputError) as caught:
        load_config(config)
    said = str(caught.value)
    assert 'path = "d.tsv\\u200b" is no file or folder' in said, said
    assert "\u200b" not in said, said


def test_noted_no_merge_advice_into_a_folder_beside_a_compressed_store(tmp_path):
    import lzma

    from normxlogit.bench import ResultStore
    from normxlogit.cli.bench import _check_writable_store
    from normxlogit.common.errors import InvalidInputError

    with ResultStore(tmp_path / "src.sqlite"):  # a results store: run reads it before advising
        pass
    packed = tmp_path / "y.sqlite.xz"
    packed.write_bytes(lzma.compress((tmp_path / "src.sqlite").read_bytes()))
    (tmp_path / "y.sqlite").mkdir()
    with pytest.raises(InvalidInputError) as refused:
        _check_writable_store(packed)
    said = str(refused.value)
    assert "merge into that store" not in said and f"--into {tmp_path / 'y.sqlite'}" not in said
    assert f"--into {tmp_path / 'plain-y.sqlite'}) and run with --store" in said, said


def test_noted_a_misnamed_compressed_stores_free_name_is_not_plain(tmp_path):
    import gzip

    from normxlogit.bench.archive import misnamed_content

    raw = gzip.compress(b"SQLite format 3\0" + b"\0" * 84)
    (tmp_path / "gx.sqlite.gz").write_bytes(raw)
    (tmp_path / "gx.sqlite.xz").write_bytes(raw)
    said = misnamed_content(tmp_path / "gx.sqlite.xz")
    assert said is not None and said.endswith(f"rename it to {tmp_path / 'gx-2.sqlite.gz'}"), said
    assert "plain-" not in said
