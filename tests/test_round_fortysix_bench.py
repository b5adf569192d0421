"""Round 46 (b): the bench, the page and the scripts, and files on disk.

- B01: store names (status / export / merge sources, a compressed store, ``serve
  --bench CONFIG=STORE``), ``serve --model``, ``estimate --queue`` and a config's
  ``dataset`` / ``model`` with a blank at the name's edge are quoted, and the file without
  the blank is named (round 45's hint); the page advises the existing store, not a run.
- B02: an output name with a blank at either edge (``bench run --store``, ``merge
  --into``, ``report -o``, ``export -o``) is refused before any work, naming the existing
  file: it was a second store beside the one the user sees.
- B03: gold labels written as floats (``1.0``) under a label metric are refused by
  ``bench status`` and ``run`` in the config's terms, not the Python API's.
- Noted: a target list names ``all`` among what the bench takes; ``[tables.paper]``
  refusals name TOML's types; ``--rate-after inf`` is said not to be finite; the
  decompress advice does not overwrite a file beside it; the page's missing-store
  refusal does not repeat CONFIG=STORE; the page's explanation settings keep lists as
  JSON; float options take ASCII digits only; a generation's segments table fits 80
  columns.
"""

from __future__ import annotations

import gzip
import io
import json
import lzma
from pathlib import Path

import pytest

from normxlogit.common.errors import InvalidFileError, InvalidInputError, NormXLogitError

from .conftest import build_model, fresh_tokenizer, invoke_in

ROWS = "text\tlabel\ngood film\t1\nbad film\t0\n"


def _grid(folder: Path, model: Path, data: str = "d.tsv", **lines: str) -> Path:
    """A two-method config on ``data`` (written beside it) and an empty store g.sqlite."""
    from normxlogit.bench import ResultStore

    (folder / "d.tsv").write_text(ROWS)
    metrics = lines.get("metrics", '["comp_cd"]')
    config = folder / "g.toml"
    config.write_text(
        f'title = "g"\nseeds = [0]\nmetrics = {metrics}\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{model}"\ndataset = "{data}"\n'
    )
    ResultStore(folder / "g.sqlite").close()
    return config


def _said(result) -> str:
    return " ".join(result.output.split())


# ------------------------------------------------------------------ B01
def test_b01_store_readers_quote_a_blank_edged_store_and_name_the_real_one(
    tmp_path, tiny_classifier
):
    _grid(tmp_path, tiny_classifier)
    for args in (
        ("bench", "status", "g.toml", "--store", "g.sqlite "),
        ("bench", "export", "--store", "g.sqlite "),
        ("bench", "merge", "g.sqlite ", "--into", "h.sqlite"),
    ):
        result = invoke_in(tmp_path, *args)
        said = _said(result)
        assert result.exit_code != 0, said
        assert "'g.sqlite '" in said and "g.sqlite exists" in said, said
        assert "name it g.sqlite" in said, said
    assert not (tmp_path / "h.sqlite").exists()
    # the advised fix works
    assert invoke_in(tmp_path, "bench", "status", "g.toml", "--store", "g.sqlite").exit_code == 0


def test_b01_compressed_store_with_a_blank_names_the_blank_not_the_suffix(
    tmp_path, tiny_classifier
):
    _grid(tmp_path, tiny_classifier)
    (tmp_path / "g.sqlite.xz").write_bytes(lzma.compress((tmp_path / "g.sqlite").read_bytes()))
    result = invoke_in(tmp_path, "bench", "status", "g.toml", "--store", "g.sqlite.xz ")
    said = _said(result)
    assert result.exit_code != 0
    assert "'g.sqlite.xz '" in said and "g.sqlite.xz exists" in said, said
    assert "plain SQLite" not in said


def test_b01_page_bench_store_with_a_blank_advises_the_existing_store(
    tmp_path, tiny_classifier, monkeypatch
):
    from normxlogit.serve.browse import BenchEntry

    _grid(tmp_path, tiny_classifier)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInputError) as caught:
        BenchEntry.parse("g.toml=g.sqlite ")
    said = str(caught.value)
    assert "'g.sqlite '" in said and "g.sqlite exists" in said
    assert said.endswith("pass --bench g.toml=g.sqlite") and "bench run" not in said
    BenchEntry.parse("g.toml=g.sqlite")  # the advised fix works
    # a store named as CONFIG=STORE: the refusal does not ask for CONFIG=STORE again
    with pytest.raises(InvalidInputError) as caught:
        BenchEntry.parse("g.toml=none.sqlite")
    assert "CONFIG=STORE" not in str(caught.value)
    assert "bench run g.toml --store none.sqlite" in str(caught.value)


def test_b01_page_model_queue_and_config_paths_with_a_blank(tmp_path, tiny_classifier):
    from normxlogit.bench import load_config
    from normxlogit.bench.queue import load_queue
    from normxlogit.serve.models import ModelPool

    with pytest.raises(NormXLogitError) as caught:
        ModelPool.build([f"{tiny_classifier} "], builtins=False)
    assert f"'{tiny_classifier} '" in str(caught.value)
    assert f"{tiny_classifier} exists" in str(caught.value)

    (tmp_path / "q.toml").write_text("")
    with pytest.raises(InvalidFileError, match=r"'.*q\.toml ' \(its name ends .*q\.toml exists"):
        load_queue(tmp_path / "q.toml ")

    config = _grid(tmp_path, tiny_classifier, data="d.tsv ")
    with pytest.raises(InvalidInputError, match=r"after its suffix; .*d\.tsv exists"):
        load_config(config)
    config.write_text(config.read_text().replace(str(tiny_classifier), f"{tiny_classifier} "))
    config.write_text(config.read_text().replace('"d.tsv "', '"d.tsv"'))
    with pytest.raises(NormXLogitError, match=r"its name ends in a space or tab; .* exists"):
        load_config(config)


def test_b01_queue_store_with_a_blank_is_refused(tmp_path):
    from normxlogit.bench.queue import _check_store_name

    with pytest.raises(InvalidFileError, match='write store = "s/x.sqlite.xz"'):
        _check_store_name("s/x.sqlite.xz ", "entry 1")


# ------------------------------------------------------------------ B02
@pytest.mark.parametrize(
    "args, made",
    [
        (("bench", "run", "g.toml", "--store", "g.sqlite "), "g.sqlite "),
        (("bench", "merge", "g.sqlite", "--into", "m4.sqlite "), "m4.sqlite "),
        (("bench", "report", "g.toml", "-o", "rr "), "rr "),
        (("bench", "export", "--store", "g.sqlite", "-f", "csv", "-o", "e2.csv "), "e2.csv "),
    ],
)
def test_b02_outputs_with_a_blank_are_refused_before_any_work(
    tmp_path, tiny_classifier, args, made
):
    _grid(tmp_path, tiny_classifier)
    result = invoke_in(tmp_path, *args)
    said = _said(result)
    assert result.exit_code != 0, said
    assert f"{made!r}" in said and "which a terminal does not show" in said, said
    assert f"name it {made.strip()}" in said
    if made == "g.sqlite ":
        assert "(that file exists)" in said
    assert not (tmp_path / made).exists()


def test_b02_python_store_with_a_blank_is_not_created(tmp_path):
    from normxlogit.bench import ResultStore
    from normxlogit.common.errors import OutputPathError

    with pytest.raises(OutputPathError, match="which a terminal does not show"):
        ResultStore(tmp_path / "s.sqlite ")
    assert not (tmp_path / "s.sqlite ").exists()


# ------------------------------------------------------------------ B03
@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_b03_float_gold_labels_refused_by_status_in_the_configs_terms(
    tmp_path, tiny_classifier, kind
):
    if kind == "csv":
        (tmp_path / "f.csv").write_text("text,label\ngood,1.0\nbad,0.0\n")
    else:
        rows = [{"text": "good", "label": 1.0}, {"text": "bad", "label": 0.0}]
        (tmp_path / "f.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    _grid(tmp_path, tiny_classifier, data=f"f.{kind}", metrics='["comp_cd", "comp_acc"]')
    result = invoke_in(tmp_path, "bench", "status", "g.toml")
    said = _said(result)
    assert result.exit_code != 0, said
    assert "metric comp_acc" in said and "gives a float 1.0" in said, said
    assert "whole label indices" in said and "labels[" not in said and "int(" not in said
    result = invoke_in(tmp_path, "bench", "run", "g.toml")
    assert result.exit_code != 0 and "gives a float 1.0" in _said(result)
    # the advised fix: whole label indices
    (tmp_path / "f.csv").write_text("text,label\ngood,1\nbad,0\n")
    (tmp_path / "g.toml").write_text(
        (tmp_path / "g.toml").read_text().replace(f"f.{kind}", "f.csv")
    )
    assert invoke_in(tmp_path, "bench", "status", "g.toml").exit_code == 0


# ------------------------------------------------------------------ Noted
def test_noted_target_list_names_all(tmp_path, tiny_classifier):
    from normxlogit.bench import load_config

    config = _grid(tmp_path, tiny_classifier)
    config.write_text(
        config.read_text().replace('methods = ["random"]\n', "")
        + '[[experiments.methods]]\nname = "random"\ntarget = ["negative", "all"]\n'
    )
    with pytest.raises(InvalidInputError) as caught:
        load_config(config)
    said = str(caught.value)
    assert "prediction, label, foil, all or a label / token name" in said
    assert "got an array" in said


def test_noted_paper_refusals_name_toml_types():
    import datetime

    from normxlogit.bench.config import _paper

    for value, words in (
        (True, "a boolean true"),
        (datetime.date(1979, 5, 27), "a date 1979-05-27"),
        ({"x": 1}, "a table"),
    ):
        with pytest.raises(InvalidInputError) as caught:
            _paper({"m": {"a": value}}, "table t:")
        assert words in str(caught.value) and "datetime" not in str(caught.value)
    with pytest.raises(InvalidInputError, match="paper is an array"):
        _paper([1], "table t:")


def test_noted_estimate_rate_inf_is_not_finite(capsys):
    from normxlogit.bench.estimate import main

    assert main(["--rate-after", "inf"]) != 0
    assert "must be a finite number of tokens/s" in capsys.readouterr().err


def test_noted_decompress_advice_keeps_the_plain_file_beside(tmp_path):
    from normxlogit.common.input_paths import compressed_refusal

    packed = tmp_path / "n.ndjson.gz"
    packed.write_bytes(gzip.compress(b'{"text": "a"}\n'))
    assert f"> {tmp_path / 'n.ndjson'}`" in compressed_refusal(packed.read_bytes(), str(packed))
    (tmp_path / "n.ndjson").write_text("")
    said = compressed_refusal(packed.read_bytes(), str(packed))
    assert f"> {tmp_path / 'plain-n.ndjson'}`" in said


def test_noted_page_settings_keep_lists_as_json():
    import numpy as np

    from normxlogit.serve.payloads import plain_settings

    settings = plain_settings({"target": ["negative"], "steps": np.int64(3), "x": (1, None)})
    assert settings == {"target": ["negative"], "steps": 3, "x": [1, None]}
    json.dumps(settings)


def test_noted_float_options_take_ascii_digits_only():
    from normxlogit.common.errors import InvalidOptionError
    from normxlogit.methods import get_method

    assert get_method("lime", kernel_width="3.5") is not None
    for text in ("٣.5", "３.５", "1_0.5"):
        with pytest.raises((InvalidOptionError, InvalidInputError)):
            get_method("lime", kernel_width=text)


def test_noted_generation_segments_table_fits_80_columns():
    from rich.console import Console

    import normxlogit
    from normxlogit.render.generation import _segments_rich

    lm = normxlogit.load((build_model("llama", "causal_lm"), fresh_tokenizer()))
    made = lm.explain(
        "The film opens. Then it soars over the hills.",
        generate=True,
        max_new_tokens=6,
        segments="sentences",
    )
    console = Console(width=80, record=True, color_system=None, file=io.StringIO())
    console.print(_segments_rich(made))
    text = console.export_text()
    assert "…" not in text
    assert text.count("The film opens.") >= 2 and "part 1 of" in text  # each part names it
    assert "sum over steps" in text


def test_b02_pack_out_with_a_blank_is_refused(tmp_path):
    from normxlogit.bench.pack import _check_out
    from normxlogit.common.errors import OutputPathError

    (tmp_path / ".slot").mkdir()
    with pytest.raises(OutputPathError, match=r"--out '.*\.slot ': .* name it .*\.slot \(that"):
        _check_out(tmp_path / ".slot ", tmp_path)


def test_b03_run_refuses_float_labels_once_the_model_loads(tmp_path, tiny_classifier, monkeypatch):
    """A model whose head is known only once loaded (a hub model): the run's check."""
    from normxlogit.bench import runner

    monkeypatch.setattr(runner, "_check_label_kinds", lambda *args: None)
    (tmp_path / "f.csv").write_text("text,label\ngood,1.0\nbad,0.0\n")
    _grid(tmp_path, tiny_classifier, data="f.csv", metrics='["comp_cd", "comp_acc"]')
    result = invoke_in(tmp_path, "bench", "run", "g.toml")
    said = _said(result)
    assert result.exit_code != 0, said
    assert "metric comp_acc" in said and "gives a float 1.0 at instance" in said, said
    assert "labels[" not in said
