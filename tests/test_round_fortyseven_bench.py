"""Round 47 (b): the bench, the page and files on disk.

- B01: a regressor's gold values (a string, a boolean, NaN, infinity) are refused by
  ``bench status`` and ``run`` before any cell, naming the line and instance in the
  config's terms, not when their chunk is scored.
- B02: the decompress and rename advice for a store never names an existing store.
- B03: the data files' ``plain-NAME`` advice never names an existing file either.
- B04: a queue entry's ``config`` and a config's ``path =`` with a blank at the name's
  edge are quoted, and the name without the blank is named.
- B06: a gold label index -1 is refused as an index that does not exist, naming the
  experiment.
"""

from __future__ import annotations

import bz2
import json
import sqlite3
from pathlib import Path

import pytest

from normxlogit.common.errors import InvalidFileError, InvalidInputError

from .conftest import invoke_in, saved_tiny


def _said(result) -> str:
    return " ".join(result.output.split())


def _config(folder: Path, model: Path, data: str, metrics: str = '["comp_acc"]', **more) -> Path:
    from normxlogit.bench import ResultStore

    method = more.get("method", '"random"')
    config = folder / "g.toml"
    config.write_text(
        f'title = "g"\nseeds = [0]\nmetrics = {metrics}\nmethods = [{method}]\n'
        f'[[experiments]]\nmodel = "{model}"\ndataset = "{data}"\n' + more.get("extra", "")
    )
    ResultStore(folder / "g.sqlite").close()
    return config


# ------------------------------------------------------------------ B01
@pytest.fixture(scope="module")
def tiny_regressor(tmp_path_factory) -> Path:
    return saved_tiny(tmp_path_factory.mktemp("tiny-regressor"), "bert", "regression")


@pytest.mark.parametrize(
    "value, said",
    [
        ('"high"', 'gives a string "high"'),
        ("true", "gives a boolean true"),
        ("NaN", "gives NaN, a missing value"),
        ("Infinity", "gives infinity"),
        ("-Infinity", "gives -infinity"),
    ],
)
def test_b01_regressor_gold_values_refused_before_any_cell(tmp_path, tiny_regressor, value, said):
    rows = [json.dumps({"text": f"text {i}", "label": float(i)}) for i in range(3)]
    rows.append(f'{{"text": "x y", "label": {value}}}')
    (tmp_path / "r.jsonl").write_text("\n".join(rows) + "\n")
    _config(tmp_path, tiny_regressor, "r.jsonl")
    for command in ("status", "run"):
        result = invoke_in(tmp_path, "bench", command, "g.toml")
        text = _said(result)
        assert result.exit_code != 0, text
        assert "r.jsonl, line 4, instance 3" in text and said in text, text
        assert "metric comp_acc" in text and "a regressor" in text, text
        assert "labels[" not in text and " a bool " not in text and " a str " not in text, text
    # the advised fix: a number there
    rows[-1] = json.dumps({"text": "x y", "label": 2.5})
    (tmp_path / "r.jsonl").write_text("\n".join(rows) + "\n")
    assert invoke_in(tmp_path, "bench", "status", "g.toml").exit_code == 0


# ------------------------------------------------------------------ B02
def _sqlite(path: Path) -> bytes:
    connection = sqlite3.connect(path)
    connection.execute("create table t (x)")
    connection.commit()
    connection.close()
    return path.read_bytes()


def test_b02_store_advice_never_names_an_existing_store(tmp_path):
    from normxlogit.bench.archive import misnamed_content

    plain = _sqlite(tmp_path / "h.sqlite")  # an existing store the advice must spare
    (tmp_path / "h.sqlite.bz2").write_bytes(bz2.compress(plain))
    said = misnamed_content(tmp_path / "h.sqlite.bz2")
    assert said is not None and f"> {tmp_path / 'plain-h.sqlite'})" in said, said
    assert f"> {tmp_path / 'h.sqlite'})" not in said, said
    _sqlite(tmp_path / "plain-h.sqlite")
    said = misnamed_content(tmp_path / "h.sqlite.bz2")
    assert f"> {tmp_path / 'plain-2-h.sqlite'})" in said, said

    (tmp_path / "hh.sqlite.xz").write_bytes(plain)  # plain SQLite named .xz
    _sqlite(tmp_path / "hh.sqlite")
    said = misnamed_content(tmp_path / "hh.sqlite.xz")
    assert said is not None and said.endswith(f"rename it to {tmp_path / 'plain-hh.sqlite'}")
    (tmp_path / "hh.sqlite").unlink()  # without a store there, the plain name
    said = misnamed_content(tmp_path / "hh.sqlite.xz")
    assert said.endswith(f"rename it to {tmp_path / 'hh.sqlite'}"), said


def test_b02_cli_store_advice_spares_the_existing_store(tmp_path, tiny_classifier):
    (tmp_path / "d.tsv").write_text("text\tlabel\ngood\t1\nbad\t0\n")
    _config(tmp_path, tiny_classifier, "d.tsv", metrics='["comp_cd"]')
    plain = (tmp_path / "g.sqlite").read_bytes()
    (tmp_path / "g.sqlite.bz2").write_bytes(bz2.compress(plain))
    result = invoke_in(tmp_path, "bench", "status", "g.toml", "--store", "g.sqlite.bz2")
    text = _said(result)
    assert result.exit_code != 0 and "> plain-g.sqlite)" in text, text
    # the advised fix works and leaves g.sqlite as it was
    (tmp_path / "plain-g.sqlite").write_bytes(
        bz2.decompress((tmp_path / "g.sqlite.bz2").read_bytes())
    )
    result = invoke_in(tmp_path, "bench", "status", "g.toml", "--store", "plain-g.sqlite")
    assert result.exit_code == 0, result.output


# ------------------------------------------------------------------ B03
def test_b03_plain_name_advice_never_names_an_existing_file(tmp_path):
    import gzip

    from normxlogit.data import load_dataset

    (tmp_path / "y.jsonl").write_text('{"text": "mine", "label": 0}\n')
    (tmp_path / "plain-y.jsonl").write_text('{"text": "mine too", "label": 0}\n')
    packed = gzip.compress(b'{"text": "a", "label": 1}\n')
    (tmp_path / "y.jsonl.gz").write_bytes(packed)
    with pytest.raises(InvalidFileError) as caught:
        load_dataset(str(tmp_path / "y.jsonl.gz"))
    assert f"> {tmp_path / 'plain-2-y.jsonl'}`" in str(caught.value), caught.value

    (tmp_path / "z.jsonl").write_bytes(packed)  # gzip named as plain
    (tmp_path / "plain-z.jsonl").write_text('{"text": "mine", "label": 0}\n')
    with pytest.raises(InvalidFileError) as caught:
        load_dataset(str(tmp_path / "z.jsonl"))
    assert f"then pass {tmp_path / 'plain-2-z.jsonl'}" in str(caught.value), caught.value


def test_b03_free_name():
    from normxlogit.common.input_paths import free_name

    assert free_name(Path("/nonexistent-47/x.tsv")) == Path("/nonexistent-47/x.tsv")


# ------------------------------------------------------------------ B04
def test_b04_queue_config_with_a_blank_is_quoted_and_the_real_one_named(tmp_path):
    from normxlogit.bench.queue import entry_config, load_queue

    (tmp_path / "g.toml").write_text("")
    for named in ("g.toml ", " g.toml"):
        (tmp_path / "q.toml").write_text(
            f'title = "q"\ndeadline = 300\n[[entries]]\nname = "one"\nconfig = "{named}"\n'
            'store = "g.sqlite.xz"\n'
        )
        with pytest.raises(InvalidFileError) as caught:
            queue = load_queue(tmp_path / "q.toml")
            entry_config(queue, queue.entries[0])
        said = str(caught.value)
        assert f"config {named!r} not found" in said and "g.toml exists" in said, said


def test_b04_config_path_with_a_blank_in_the_configs_terms(tmp_path, tiny_classifier):
    from normxlogit.bench import load_config

    (tmp_path / "d.tsv").write_text("text\tlabel\ngood\t1\nbad\t0\n")
    config = _config(
        tmp_path, tiny_classifier, "sst2", metrics='["comp_cd"]', extra='path = "d.tsv "\n'
    )
    with pytest.raises(InvalidInputError) as caught:
        load_config(config)
    said = str(caught.value)
    assert 'path = "d.tsv "' in said and "d.tsv exists" in said and "path=" not in said, said


# ------------------------------------------------------------------ B06
@pytest.mark.parametrize("target", ["label", None])
def test_b06_gold_index_minus_one_is_an_index_that_does_not_exist(
    tmp_path, tiny_classifier, target
):
    rows = [{"text": "a fine film", "label": -1}, {"text": "a dull mess", "label": 0}]
    (tmp_path / "n.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    metrics = '["comp_cd"]' if target else '["comp_acc"]'
    targeted = 'target = "label"' if target else ""
    config = tmp_path / "g.toml"
    config.write_text(
        f"seeds = [0]\nmetrics = {metrics}\n[protocol]\nratios = [0.5]\n"
        f'[[methods]]\nname = "random"\n{targeted}\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "n.jsonl"\n'
    )
    result = invoke_in(tmp_path, "bench", "run", "g.toml")
    said = _said(result)
    assert result.exit_code != 0, said
    # round 48: refused before any cell, naming the line too
    assert "label index -1 (the gold label of n.jsonl line 1, instance 0) does not" in said, said
    assert "experiment " in said and ":n.jsonl" in said and "are ints" not in said, said


# ------------------------------------------------------------------ B05
@pytest.mark.parametrize(
    "line, said",
    [
        ("batch_size = 1979-05-27", "not a date 1979-05-27"),
        ("limit = true", "not a boolean true"),
        ("name = 1979-05-27", "name is a date 1979-05-27"),
        ("segments = 1979-05-27", "segments is a date 1979-05-27"),
    ],
)
def test_b05_config_refusals_name_toml_types(tmp_path, tiny_classifier, line, said):
    from normxlogit.bench import load_config

    (tmp_path / "d.tsv").write_text("text\tlabel\ngood\t1\nbad\t0\n")
    config = _config(tmp_path, tiny_classifier, "d.tsv", metrics='["comp_cd"]', extra=line + "\n")
    with pytest.raises(InvalidInputError) as caught:
        load_config(config)
    assert said in str(caught.value) and "datetime" not in str(caught.value), caught.value


@pytest.mark.parametrize(
    "contrast, said", [("true", "not a boolean true"), ('["neg"]', "not an array")]
)
def test_b05_contrast_and_label_name_toml_types(tmp_path, tiny_classifier, contrast, said):
    from normxlogit.bench import load_config

    (tmp_path / "d.tsv").write_text("text\tlabel\ngood\t1\nbad\t0\n")
    config = _config(
        tmp_path,
        tiny_classifier,
        "d.tsv",
        metrics='["comp_cd"]',
        method=f'{{ name = "normxlogit", contrast = {contrast} }}',
    )
    with pytest.raises(InvalidInputError, match=said):
        load_config(config)
    config = _config(
        tmp_path,
        tiny_classifier,
        "d.tsv",
        metrics='["comp_cd"]',
        method='{ name = "random", label = 1979-05-27 }',
    )
    with pytest.raises(InvalidInputError, match="label is a date 1979-05-27"):
        load_config(config)


# ------------------------------------------------------------------ Noted
def test_noted_jsonl_row_with_a_repeated_key_is_refused(tmp_path):
    from normxlogit.data import load_dataset

    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "a", "label": 0}\n{"text": "b", "label": 1, "label": 0}\n')
    with pytest.raises(InvalidFileError, match=r'd\.jsonl, line 2: key "label" is given twice'):
        load_dataset(str(path))
    path.write_text('{"text": "a", "label": 0}\n{"text": "b", "label": 1}\n')
    assert len(load_dataset(str(path))) == 2


@pytest.mark.parametrize("value", ["٣٠٠", "1_000", "inf", "０.５"])
def test_noted_deadline_and_estimate_numbers_take_ascii_digits(tmp_path, value, capsys):
    from normxlogit.bench.estimate import main

    result = invoke_in(tmp_path, "bench", "run", "g.toml", "--deadline", value)
    assert (
        result.exit_code != 0 and "ASCII digits" in _said(result) or ("finite" in _said(result))
    ), _said(result)
    assert main(["--queue", str(tmp_path / "q.toml"), "--rate-today", value]) != 0
    said = capsys.readouterr().err
    assert "--rate-today" in said and ("ASCII digits" in said or "finite" in said), said
