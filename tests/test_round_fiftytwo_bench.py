"""Round fifty-two of probes (prober B: bench, page, files on disk): ``bench run
--store`` reading a compressed file's content before it advises a merge, the TOML
"list beside tables" fix naming the dotted key and offering tables only where the config
takes them, a hub id ending in .git, ``serve --data`` refusing undecodable files at
start, ``--dtype`` named in progress lines, capitalised column names, a dangling link as
the report folder, the queue's store-name check by content, and the page's instance
range."""

from __future__ import annotations

import gzip
import lzma

import pytest

from .conftest import invoke_in


def _said(result) -> str:
    return " ".join(result.output.split())


def _grid(folder, model, name: str = "g.toml", body: str = ""):
    """``folder/name``: random on a two-row d.tsv."""
    (folder / "d.tsv").write_text("sentence\tlabel\ngood movie\t1\nbad film\t0\n")
    (folder / name).write_text(
        f'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n{body}'
        f'[[experiments]]\nmodel = "{model}"\ndataset = "d.tsv"\n'
    )
    return folder / name


# ------------------------------------------------------------------ 1
@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("txt.sqlite.xz", b"hello\n", "holds neither xz nor gzip data"),
        ("empty.sqlite.xz", b"", "is an empty file, not a results store"),
        ("cut.sqlite.xz", lzma.compress(b"SQLite format 3\x00" + b"x" * 4000)[:60], "cut short"),
        (
            "tsv.sqlite.gz",
            gzip.compress(b"sentence\tlabel\ngood\t1\n", mtime=0),
            "not a normxlogit",
        ),
    ],
    ids=["text", "empty", "cut-short", "gzip-of-a-tsv"],  # the same names in every xdist worker
)
def test_run_reads_a_compressed_store_before_advising_a_merge(
    tmp_path, tiny_classifier, name, content, said
):
    _grid(tmp_path, tiny_classifier)
    (tmp_path / name).write_bytes(content)
    run = invoke_in(tmp_path, "bench", "run", "g.toml", "--store", name)
    status = invoke_in(tmp_path, "bench", "status", "g.toml", "--store", name)
    assert run.exit_code != 0 and said in _said(run), run.output
    assert "bench merge" not in _said(run), run.output
    assert _said(run) == _said(status), (run.output, status.output)  # the same refusal


def test_run_still_advises_unpacking_a_real_compressed_store(tmp_path, tiny_classifier):
    from normxlogit.bench import ResultStore
    from normxlogit.bench.archive import compress_store

    _grid(tmp_path, tiny_classifier)
    with ResultStore(tmp_path / "made.sqlite"):
        pass
    compress_store(tmp_path / "made.sqlite", tmp_path / "k.sqlite.xz")
    run = invoke_in(tmp_path, "bench", "run", "g.toml", "--store", "k.sqlite.xz")
    assert "unpack it first (normxlogit bench merge k.sqlite.xz --into k.sqlite)" in _said(run)


# ------------------------------------------------------------------ 2, 3
def _toml_refusal(tmp_path, text: str) -> str:
    from normxlogit.bench import load_config
    from normxlogit.common.errors import InvalidFileError

    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(InvalidFileError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_list_beside_experiment_method_tables_names_the_dotted_key(tmp_path, tiny_classifier):
    from normxlogit.bench import load_config

    head = (
        'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["normxlogit"]\n[[experiments]]\n'
        f'model = "{tiny_classifier}"\ndataset = "sst2"\n'
    )
    message = _toml_refusal(
        tmp_path,
        head + 'methods = ["random"]\n[[experiments.methods]]\nname = "gradient_x_input"\n',
    )
    assert (
        "an experiment's methods is given both as a list (methods = [...]) and as "
        "[[experiments.methods]] tables: write them all one way (all in the list, or each "
        "as a [[experiments.methods]] table)"
    ) in message, message
    assert "experiments is given" not in message
    # the advised tables alone are read
    (tmp_path / "fixed.toml").write_text(
        head + '[[experiments.methods]]\nname = "random"\n'
        '[[experiments.methods]]\nname = "gradient_x_input"\n'
    )
    assert len(load_config(tmp_path / "fixed.toml").experiments[0].methods) == 2


@pytest.mark.parametrize(
    ("text", "key", "dotted"),
    [
        (
            'metrics = ["comp_cd"]\n[[metrics]]\nname = "suff_cd"\n',
            "metrics is given both as a list (metrics = [...])",
            "metrics",
        ),
        ("seeds = [0]\n[[seeds]]\nx = 1\n", "seeds is given both as a list", "seeds"),
        (
            '[[experiments]]\nmodel = "m"\nmetrics = ["comp_cd"]\n[[experiments.metrics]]\n'
            'name = "suff_cd"\n',
            "an experiment's metrics is given both as a list (metrics = [...])",
            "experiments.metrics",
        ),
    ],
)
def test_a_list_beside_tables_offers_no_table_the_config_lacks(tmp_path, text, key, dotted):
    message = _toml_refusal(tmp_path, text)
    assert key in message, message
    assert f"[[{dotted}]] is no table the config has: give them all in the list" in message
    assert "each as a" not in message


def test_the_list_beside_tables_keeps_its_advice_for_top_level_methods(tmp_path):
    message = _toml_refusal(
        tmp_path, 'methods = ["random"]\n[[methods]]\nname = "gradient_x_input"\n'
    )
    assert "or each as a [[methods]] table)" in message, message


def test_a_queue_list_beside_entry_tables_is_advised(tmp_path):
    from normxlogit.bench.queue import load_queue
    from normxlogit.common.errors import InvalidFileError

    queue = tmp_path / "q.toml"
    queue.write_text('deadline = 120\nentries = []\n[[entries]]\nname = "a"\n')
    with pytest.raises(InvalidFileError) as caught:
        load_queue(queue)
    assert "each as a [[entries]] table" in str(caught.value), caught.value


# ------------------------------------------------------------------ 4
def test_a_hub_id_ending_in_git_is_refused_for_that(tmp_path, tiny_classifier):
    from normxlogit.bench import load_config
    from normxlogit.common.errors import InvalidInputError

    config = _grid(tmp_path, "org/m.git", "h.toml")
    with pytest.raises(InvalidInputError) as caught:
        load_config(config)
    message = str(caught.value)
    assert "model 'org/m.git' is no hub id: it ends in '.git'" in message, message
    assert "letters, digits" not in message


# ------------------------------------------------------------------ noted: serve --data
@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("png.csv", b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "is a PNG image, not text"),
        ("nul.csv", b"sentence,label\ngo\x00od,1\n", "holds a NUL byte"),
        ("latin1.csv", "sentence,label\ncaf\u00e9,1\n".encode("latin-1"), "is not UTF-8"),
    ],
)
def test_serve_refuses_an_unreadable_data_file_at_start(tmp_path, name, content, said):
    from normxlogit.common.errors import InvalidFileError
    from normxlogit.serve.examples import ExampleSources

    (tmp_path / name).write_bytes(content)
    with pytest.raises(InvalidFileError) as caught:
        ExampleSources([tmp_path / name])
    message = str(caught.value)
    assert message.startswith(f"--data {tmp_path / name}") and said in message, message
    (tmp_path / "ok.csv").write_text("sentence,label\ngood,1\n")
    assert ExampleSources([tmp_path / "ok.csv"]).examples("ok.csv", 5)["examples"]


# ------------------------------------------------------------------ noted: --dtype shown
def test_run_dtype_names_the_precision_the_cells_are_stored_under(tmp_path, tiny_classifier):
    from normxlogit.bench import load_config

    config = _grid(tmp_path, tiny_classifier, body='dtype = "Float16"\n')
    moved = load_config(config).with_dtype("bfloat16").experiments[0]
    assert moved.model.endswith("@bfloat16") and moved.name.startswith(moved.model + ":")
    run = invoke_in(tmp_path, "bench", "run", "g.toml", "--dtype", "bf16", "--store", "s.sqlite")
    assert run.exit_code == 0, run.output
    assert "@bfloat16:d.tsv random seed 0" in _said(run), run.output
    assert "@float16" not in run.output
    # --experiment names the config's own experiments
    name = load_config(config).experiments[0].name
    again = invoke_in(
        tmp_path, "bench", "run", "g.toml", "--dtype", "bf16", "--experiment", name,
        "--store", "s.sqlite",
    )  # fmt: skip
    assert again.exit_code == 0, again.output


# ------------------------------------------------------------------ noted: column names' case
@pytest.mark.parametrize(
    ("name", "text", "where", "rename"),
    [
        ("c.tsv", "Sentence\tlabel\ngood\t1\n", "line 1 (the header)", "'Sentence' to 'sentence'"),
        ("c.csv", "Text,label\ngood,1\n", "line 1 (the header)", "'Text' to 'text'"),
        ("c.jsonl", '{"Review": "good", "label": 1}\n', "line 1", "'Review' to 'review'"),
    ],
)
def test_a_capitalised_text_column_is_named_at_the_header(tmp_path, name, text, where, rename):
    from normxlogit.common.errors import InvalidFileError
    from normxlogit.data.files import read_examples

    (tmp_path / name).write_text(text)
    with pytest.raises(InvalidFileError) as caught:
        read_examples(tmp_path / name)
    message = str(caught.value)
    assert f"{name}, {where}: no text column" in message, message
    assert f"column names are lower-case: rename {rename}" in message, message


def test_a_capitalised_label_column_is_named_when_labels_are_needed(tmp_path, tiny_classifier):
    (tmp_path / "d.tsv").write_text("sentence\tLabel\ngood movie\t1\n")
    (tmp_path / "g.toml").write_text(
        'seeds = [0]\nmetrics = ["comp_acc"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "d.tsv"\n'
    )
    run = invoke_in(tmp_path, "bench", "run", "g.toml", "--store", "s.sqlite")
    assert "column names are lower-case: rename 'Label' to 'label'" in _said(run), run.output


# ------------------------------------------------------------------ noted: dangling link
def test_a_dangling_link_as_the_report_folder_is_said_to_be_one(tmp_path):
    from normxlogit.common.errors import OutputPathError
    from normxlogit.common.outputs import check_output_folder

    (tmp_path / "r").symlink_to(tmp_path / "nowhere")
    with pytest.raises(OutputPathError) as caught:
        check_output_folder(tmp_path / "r", "--output")
    message = str(caught.value)
    assert "is a link to nowhere (its target" in message and "does not exist)" in message
    assert "File exists" not in message


def test_a_dangling_default_report_folder_is_refused_in_one_line(tmp_path, tiny_classifier):
    from normxlogit.bench import ResultStore

    _grid(tmp_path, tiny_classifier)
    with ResultStore(tmp_path / "g.sqlite"):
        pass
    (tmp_path / "g-report").symlink_to("nowhere")
    result = invoke_in(tmp_path, "bench", "report", "g.toml")
    said = _said(result)
    assert "g-report is a link to nowhere (its target nowhere does not exist)" in said, said
    assert "File exists" not in said and "pass --output FOLDER" in said


# ------------------------------------------------------------------ noted: queue store name
def _queue(tmp_path, model, store: str):
    _grid(tmp_path, model, "grid.toml")
    queue = tmp_path / "q.toml"
    queue.write_text(
        f'deadline = 120\n[[entries]]\nname = "a"\nconfig = "grid.toml"\nstore = "{store}"\n'
    )
    return queue


def test_a_queue_store_misnamed_with_gzip_data_is_advised_by_content(
    tmp_path, tiny_classifier, monkeypatch
):
    from normxlogit.bench import ResultStore
    from normxlogit.bench.queue import load_queue
    from normxlogit.common.errors import InvalidFileError

    with ResultStore(tmp_path / "made.sqlite"):
        pass
    (tmp_path / "gz.sqlite.GZ").write_bytes(gzip.compress((tmp_path / "made.sqlite").read_bytes()))
    queue = _queue(tmp_path, tiny_classifier, "gz.sqlite.GZ")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidFileError) as caught:
        load_queue(queue)
    message = str(caught.value)
    assert "gz.sqlite.GZ is gzip-compressed: rename it to" in message, message
    assert "recompress it as xz (normxlogit bench merge" in message
    assert message.endswith('write store = "gz.sqlite.xz"'), message
    # the advice works: rename, recompress, then the queue takes it
    (tmp_path / "gz.sqlite.GZ").rename(tmp_path / "gz.sqlite.gz")
    merged = invoke_in(tmp_path, "bench", "merge", "gz.sqlite.gz", "--into", "gz.sqlite.xz")
    assert merged.exit_code == 0, merged.output
    load_queue(_queue(tmp_path, tiny_classifier, "gz.sqlite.xz"))


def test_a_queue_store_misnamed_holding_no_store_is_said_to_be_none(tmp_path, tiny_classifier):
    from normxlogit.bench.queue import load_queue
    from normxlogit.common.errors import InvalidFileError

    (tmp_path / "t.sqlite.XZ").write_text("hello\n")
    with pytest.raises(InvalidFileError) as caught:
        load_queue(_queue(tmp_path, tiny_classifier, "t.sqlite.XZ"))
    assert "is not a results store" in str(caught.value), caught.value


# ------------------------------------------------------------------ noted: page instance range
def test_the_page_says_which_instances_an_experiment_has(tmp_path, tiny_classifier):
    from normxlogit.bench import ResultStore, load_config, run_bench
    from normxlogit.common.errors import InvalidInputError
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    config = load_config(_grid(tmp_path, tiny_classifier))
    with ResultStore(tmp_path / "g.sqlite") as store:
        run_bench(config, store)
    browser = BenchBrowser([BenchEntry.parse(f"{tmp_path / 'g.toml'}={tmp_path / 'g.sqlite'}")])
    name = config.experiments[0].name
    assert browser.explanation(0, name, "random", 1)["instance"] == 1
    with pytest.raises(InvalidInputError) as caught:
        browser.explanation(0, name, "random", 2)
    assert "its instances run 0 to 1" in str(caught.value), caught.value
