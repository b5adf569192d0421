"""Round fifty-one of probes (prober B: bench, page, files on disk): run's advice for a
store named with an upper-case compression suffix, malformed hub ids refused at load,
every gold-label reader named at once, the default report folder that is a file, a
folder named as a compressed store, a misnamed file that holds no store, and the noted
list mixed with ``[[methods]]`` tables."""

from __future__ import annotations

import gzip
import lzma

import pytest

from .conftest import invoke_in


def _said(result) -> str:
    return " ".join(result.output.split())


def _grid(folder, model, name: str = "g.toml"):
    """``folder/name``: random on a one-row d.tsv."""
    (folder / "d.tsv").write_text("sentence\tlabel\ngood movie\t1\n")
    (folder / name).write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{model}"\ndataset = "d.tsv"\n'
    )
    return folder / name


@pytest.fixture
def store_bytes(tmp_path):
    from normxlogit.bench import ResultStore

    with ResultStore(tmp_path / "made.sqlite"):
        pass
    data = (tmp_path / "made.sqlite").read_bytes()
    (tmp_path / "made.sqlite").unlink()
    return data


# ------------------------------------------------------------------ 1
@pytest.mark.parametrize(
    ("name", "pack", "advised"),
    [
        ("x.sqlite.GZ", lzma.compress, "x.sqlite.xz"),
        ("z.sqlite.XZ", gzip.compress, "z.sqlite.gz"),
        ("z.sqlite.XZ.gz", gzip.compress, "z.sqlite.gz"),
    ],
)
def test_run_advises_a_misnamed_compressed_store_as_the_other_commands_do(
    tmp_path, tiny_classifier, store_bytes, name, pack, advised
):
    """run said "rename it to x.sqlite.GZ.xz" (status: x.sqlite.xz), and for
    z.sqlite.XZ.gz "merge ... --into z.sqlite.sqlite", a merge then refused."""
    _grid(tmp_path, tiny_classifier)
    (tmp_path / name).write_bytes(pack(store_bytes))
    said = _said(invoke_in(tmp_path, "bench", "run", "g.toml", "--store", name))
    plain = advised.rsplit(".", 1)[0]
    assert f"{advised}, then unpack it (normxlogit bench merge {advised} --into {plain}) and " in (
        said
    ), said
    assert said.endswith(f"run with --store {plain}"), said
    assert ".sqlite.sqlite" not in said and f"{name}.xz" not in said
    (tmp_path / name).rename(tmp_path / advised)  # the advice, followed
    assert invoke_in(tmp_path, "bench", "merge", advised, "--into", plain).exit_code == 0
    result = invoke_in(tmp_path, "bench", "status", "g.toml", "--store", plain)
    assert result.exit_code == 0, _said(result)


# ------------------------------------------------------------------ 2
@pytest.mark.parametrize(
    ("model", "said"),
    [
        ("org/m!x", "its owner and name are letters, digits"),
        ("org/--m", "it holds '--' or '..'"),
        ("org/m..x", "it holds '--' or '..'"),
    ],
)
def test_a_hub_id_the_hub_refuses_is_refused_at_load(tmp_path, tiny_classifier, model, said):
    """It was taken, and the run stopped after experiment 1, naming no experiment."""
    from normxlogit.bench import load_config
    from normxlogit.common.errors import InvalidInputError

    config = _grid(tmp_path, tiny_classifier, "h.toml")
    with config.open("a") as handle:
        handle.write(f'[[experiments]]\nmodel = "{model}"\ndataset = "d.tsv"\n')
    with pytest.raises(InvalidInputError) as caught:
        load_config(config)
    message = str(caught.value)
    assert f"h.toml: experiment 2: model {model!r} is no hub id: {said}" in message, message


@pytest.mark.parametrize("model", ["a/b/c", "org/"])
def test_a_path_like_model_that_is_nowhere_is_refused_at_load(tmp_path, tiny_classifier, model):
    from normxlogit.bench import load_config
    from normxlogit.common.errors import UnknownModelError

    config = _grid(tmp_path, tiny_classifier, "h.toml")
    with config.open("a") as handle:
        handle.write(f'[[experiments]]\nmodel = "{model}"\ndataset = "d.tsv"\n')
    with pytest.raises(UnknownModelError, match="experiment 2: model .* is neither a built-in"):
        load_config(config)


def test_a_valid_hub_id_is_still_taken(tmp_path):
    from normxlogit.bench.config import _model

    assert _model("org/m-x.v2_1", tmp_path, "experiment 1") == ("org/m-x.v2_1", None)


# ------------------------------------------------------------------ 3
def test_every_reader_of_the_gold_labels_is_named_at_once(tmp_path, tiny_classifier):
    """Each refusal advised only the first reader, naming no method or metric."""
    (tmp_path / "gl.tsv").write_text("sentence\tlabel\ngood movie\t1\nbad movie\t5\n")
    methods = (
        '[[methods]]\nname = "gradient_x_input"\nlabel = "GxI"\n'
        '[[methods]]\nname = "integrated_gradients"\nlabel = "IG"\ncontrast = "label"\n'
        '[[methods]]\nname = "normxlogit"\nlabel = "NX"\ntarget = "label"\n'
    )
    (tmp_path / "gg.toml").write_text(
        'seeds = [0]\nmetrics = ["comp_acc", "comp_cd"]\n'
        + methods
        + f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "gl.tsv"\n'
    )
    said = _said(invoke_in(tmp_path, "bench", "run", "gg.toml"))
    assert "label index 5" in said, said
    assert (
        "take contrast out of method IG (or contrast with a label name), set method NX "
        'target = "prediction" and take comp_acc out of the experiment\'s metrics' in said
    ), said


# ------------------------------------------------------------------ 4
def test_the_default_report_folder_that_is_a_file_names_no_output_given(tmp_path, tiny_classifier):
    _grid(tmp_path, tiny_classifier)
    (tmp_path / "g-report").touch()
    said = _said(invoke_in(tmp_path, "bench", "report", "g.toml"))
    assert said.endswith(
        "the config's default report folder g-report is a file, not a folder; pass --output FOLDER"
    ), said
    assert "--output g-report" not in said


# ------------------------------------------------------------------ 5
@pytest.mark.parametrize(
    "args",
    [
        ("status", "g.toml", "--store", "folder.sqlite.xz"),
        ("export", "--store", "folder.sqlite.xz"),
        ("merge", "folder.sqlite.xz", "--into", "m.sqlite"),
    ],
)
def test_a_folder_named_as_a_compressed_store_is_said_to_be_a_folder(
    tmp_path, tiny_classifier, args
):
    _grid(tmp_path, tiny_classifier)
    (tmp_path / "folder.sqlite.xz").mkdir()
    said = _said(invoke_in(tmp_path, "bench", *args))
    assert "store folder.sqlite.xz is a folder; " in said, said
    assert "no results store" not in said


# ------------------------------------------------------------------ 6
def test_a_misnamed_file_holding_no_store_is_said_to_hold_none(tmp_path, tiny_classifier):
    _grid(tmp_path, tiny_classifier)
    (tmp_path / "t.sqlite.XZ").write_text("hello\n")
    for command in ("status", "run"):
        said = _said(invoke_in(tmp_path, "bench", command, "g.toml", "--store", "t.sqlite.XZ"))
        assert "t.sqlite.XZ is not a results store: it holds neither SQLite nor xz or gzip" in (
            said
        ), said
        assert "name it t.sqlite" not in said


def test_run_advises_a_new_misnamed_store_only_its_plain_name(tmp_path, tiny_classifier):
    _grid(tmp_path, tiny_classifier)
    said = _said(invoke_in(tmp_path, "bench", "run", "g.toml", "--store", "new.sqlite.XZ"))
    assert said.endswith("; name it new.sqlite"), said
    assert not (tmp_path / "new.sqlite.XZ").exists()


# ------------------------------------------------------------------ noted
def test_a_list_mixed_with_tables_of_the_same_key_names_the_fix(tmp_path):
    from normxlogit.bench import load_config
    from normxlogit.common.errors import InvalidFileError

    path = tmp_path / "mm.toml"
    path.write_text('methods = ["random"]\n[[methods]]\nname = "normxlogit"\n')
    with pytest.raises(InvalidFileError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "methods is given both as a list (methods = [...]) and as [[methods]] tables" in (
        message
    ), message
    assert "\n" not in message
