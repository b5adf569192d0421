"""Round twenty of new-user probes, probe a (reliability): ``train -o .`` refused before
training (P01), a slot home's damaged manifest (P02) and a wrong ``slot run --out`` (P03),
a queue's fields of the wrong type (P04), titles that show nothing, reverse or hold
control characters (P05) or cover the plot (P06), relative paths keyed the same from any
folder (P07), a relative path naming two files (P08), a config or queue reached through a
link (P09) and a lock file that is a folder (P10). Tiny models, a 4-text data file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from normxlogit.bench import load_config
from normxlogit.bench.queue import load_queue
from normxlogit.bench.slot import main as slot_main
from normxlogit.common.errors import InvalidFileError, OutputPathError
from normxlogit.training import writing

from .bench.helpers import config_refusal, good_manifest
from .conftest import invoke_in

TEXTS = ["Good fun here.", "Bad end there.", "A fine day.", "Dull and slow."]


def _config(folder: Path, model: str, head: str = 'title = "t"', tail: str = "") -> Path:
    """One experiment of ``model`` on d.jsonl beside the config (paths as written)."""
    (folder / "d.jsonl").write_text(
        "".join(json.dumps({"text": t, "label": i % 3}) + "\n" for i, t in enumerate(TEXTS))
    )
    path = folder / "grid.toml"
    path.write_text(
        f'{head}\nseeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n[[experiments]]\n'
        f'model = "{model}"\ndataset = "d.jsonl"\nlimit = 2\n{tail}'
    )
    return path


_refused = config_refusal


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize("output", [".", "./", "..", "{here}"])
def test_p01_train_refuses_the_current_folder_before_training(tmp_path, monkeypatch, output):
    """It trained, then failed "could not replace . (Device or resource busy)", leaving a
    ..partial-* and a ..old-* folder that made the next `train -o .` refuse."""
    here = tmp_path / "adapter"
    here.mkdir()
    monkeypatch.chdir(here)
    with pytest.raises(OutputPathError, match="which training cannot replace") as caught:
        writing.check_output("sst2", output.format(here=here), False)
    real = Path(os.path.realpath(output.format(here=here)))
    assert "current" in str(caught.value) and f"cd {real.parent} &&" in str(caught.value)
    assert list(here.iterdir()) == []
    monkeypatch.chdir(tmp_path)
    assert writing.check_output("sst2", "adapter", False) == Path("adapter")


class _Adapter:
    def save_pretrained(self, folder: Path, save_embedding_layers: bool) -> None:
        (Path(folder) / "adapter_model.safetensors").write_bytes(b"new")


def test_p01_a_failed_swap_leaves_no_empty_old_folder(tmp_path, monkeypatch):
    """An output folder that cannot be renamed (immutable, a mount) left .X.old-* beside it."""
    target = tmp_path / "out"
    target.mkdir()
    (target / "adapter_model.safetensors").write_bytes(b"old")
    real_replace = os.replace

    def replace(source, destination):
        if Path(source) == target:
            raise OSError(16, "Device or resource busy")
        real_replace(source, destination)

    monkeypatch.setattr(writing.os, "replace", replace)
    with pytest.raises(OutputPathError, match="could not replace"):
        writing.write_adapter(_Adapter(), {"task": "x"}, target)
    assert not [p for p in tmp_path.iterdir() if ".old-" in p.name]
    assert (target / "adapter_model.safetensors").read_bytes() == b"old"


# ------------------------------------------------------------------ P02, P03
GOOD = good_manifest()


@pytest.mark.parametrize("damage", [b'{"format": 1, "parts": 1, "queue_sh', b"\xff\xfe", b"[1]"])
def test_p02_a_damaged_home_manifest_is_started_over_in_one_line(tmp_path, capsys, damage):
    """A receive stopped while writing it left it cut: JSONDecodeError, UnicodeDecodeError
    and AttributeError tracebacks in the next receive."""
    part = tmp_path / "part-1"
    part.mkdir()
    (part / "manifest.json").write_text(json.dumps(GOOD))
    home = tmp_path / "home"
    assert slot_main(["receive", str(part), "--home", str(home)]) == 0
    (home / "manifest.json").write_bytes(damage)
    capsys.readouterr()
    assert slot_main(["receive", str(part), "--home", str(home)]) == 0
    said = capsys.readouterr().out
    assert f"{home / 'manifest.json'}, kept by an earlier receive, is damaged" in said
    assert json.loads((home / "manifest.json").read_text())["files"] == []
    assert not [p.name for p in home.iterdir() if p.name.startswith(".manifest")]


@pytest.mark.parametrize(
    ("out", "says"),
    [
        ("file.jsonl", "--out {out} is a file; give a folder"),
        ("file.jsonl/x", "--out {out}: {out.parent} is a file, not a folder"),
    ],
)
def test_p03_slot_run_checks_out_before_receiving(tmp_path, capsys, out, says):
    """A file was a FileExistsError traceback after the part was received."""
    (tmp_path / "file.jsonl").write_text("{}\n")
    out = tmp_path / out
    home = tmp_path / "home"
    code = slot_main(["run", str(tmp_path / "no-part"), "--home", str(home), "--out", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {says.format(out=out)}") and len(err.splitlines()) == 1
    assert not home.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a 0555 folder")
def test_p03_slot_run_refuses_an_unwritable_out(tmp_path, capsys):
    shut = tmp_path / "ro"
    shut.mkdir(mode=0o555)
    code = slot_main(["run", str(tmp_path / "no-part"), "--out", str(shut)])
    assert code == 2 and "cannot create a file in" in capsys.readouterr().err


# ------------------------------------------------------------------ P04
@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("continuations = 5", "continuations = 5 must be the path of a store"),
        ("dtype = 5", "dtype = 5 must be a precision's name"),
        ('dtype = "fp8"', "dtype 'fp8' is not one of"),
        ("title = 5", "title = 5 must be a text"),
    ],
)
def test_p04_a_queue_field_of_the_wrong_type_names_the_file(tmp_path, line, says):
    """continuations = 5 was a TypeError traceback in estimate and pack; dtype = 5 named no
    file."""
    queue = tmp_path / "queue.toml"
    queue.write_text(
        f'{line}\n[[entries]]\nname = "a"\nconfig = "grid.toml"\nstore = "s.sqlite.xz"\n'
    )
    with pytest.raises(InvalidFileError) as caught:
        load_queue(queue)
    assert str(caught.value).startswith(f"{queue}: {says}")


# ------------------------------------------------------------------ P05, P06
@pytest.mark.parametrize(
    ("title", "says"),
    [
        ('"\\u200b"', "shows nothing"),
        ('"\\u2800"', "shows nothing"),
        ('"\\u202etop"', "U+202E"),
        ('"a\\u0007b\\u001bc"', "U+0007"),
        ('"x\\ty"', "U+0009"),
    ],
)
@pytest.mark.parametrize("where", ["the config", "table 1", "plot 1"])
def test_p05_a_title_is_held_to_the_labels_rule(tmp_path, tiny_classifier, title, says, where):
    """They were accepted: an empty heading, a line shown reversed, boxes, a raw tab."""
    tail = {
        "the config": "",
        "table 1": f'[[tables]]\nmetric = "comp_cd"\ntitle = {title}\n',
        "plot 1": f'[[plots]]\nmetric = "comp_cd"\ntitle = {title}\n',
    }[where]
    head = f"title = {title}" if where == "the config" else 'title = "t"'
    path = _config(tmp_path, str(tiny_classifier), head, tail)
    _refused(path, f"{where} title", says)


def test_p06_a_title_longer_than_a_figure_holds_is_refused(tmp_path, tiny_classifier):
    """A 5000-character plot title was drawn over the whole plot."""
    long = "w" * 5000
    tail = f'[[plots]]\nmetric = "comp_cd"\ntitle = "{long}"\n'
    _refused(_config(tmp_path, str(tiny_classifier), tail=tail), "plot 1 title", "5000 characters")
    tail = f'[[plots]]\nmetric = "comp_cd"\ntitle = "{"w" * 200}"\n'
    assert load_config(_config(tmp_path, str(tiny_classifier), tail=tail)).plots[0].title


# ------------------------------------------------------------------ P07
def _keys(store: Path) -> set[tuple[str, str]]:
    import sqlite3

    with sqlite3.connect(store) as connection:
        return set(connection.execute("SELECT DISTINCT model, dataset FROM explanations"))


def test_p07_relative_paths_key_the_cells_the_same_from_any_folder(tmp_path, tiny_classifier):
    """A relative model folder or data file was stored as the current folder found it
    ("m" from the config's folder, "x/m" from its parent), so a run from another folder
    computed every cell again under new keys."""
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "m").symlink_to(tiny_classifier)
    config = _config(folder, "m")
    store = folder / "grid.sqlite"
    first = invoke_in(folder, "bench", "run", "grid.toml")
    assert first.exit_code == 0, first.output
    keys = _keys(store)
    assert {model for model, _ in keys} == {"m"}
    assert all(json.loads(dataset)["name"] == "d.jsonl" for _, dataset in keys)
    other = tmp_path / "y"
    other.mkdir()
    for where, path in ((tmp_path, "x/grid.toml"), (other, "../x/grid.toml")):
        assert load_config(folder / "grid.toml").experiments == load_config(config).experiments
        again = invoke_in(where, "bench", "run", path, "--store", str(store))
        assert again.exit_code == 0, again.output
        assert _keys(store) == keys


def test_p07_the_loaded_paths_are_where_the_files_are(tmp_path, monkeypatch, tiny_classifier):
    """The key is the path from the config's folder; the model and the data are read
    where they were found."""
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "m").symlink_to(tiny_classifier)
    monkeypatch.chdir(tmp_path)
    experiment = load_config(Path("x") / _config(folder, "m").name).experiments[0]
    assert experiment.model == "m" and experiment.dataset.name == "d.jsonl"
    assert experiment.model_to_load == str(folder / "m")
    assert experiment.dataset.located("d.jsonl") == str(folder / "d.jsonl")


# ------------------------------------------------------------------ P08
def test_p08_a_relative_path_naming_two_files_is_refused(tmp_path, tiny_classifier):
    """A d.jsonl in the current folder was read instead of the one beside the config, and
    the guard said only that "the data changed". Now that a file is keyed by its path from
    the config's folder, the two would be two data sets: the name is refused as ambiguous,
    naming both files."""
    folder = tmp_path / "x"
    folder.mkdir()
    config = _config(folder, str(tiny_classifier))
    other = tmp_path / "y"
    other.mkdir()
    (other / "d.jsonl").write_text(
        "".join(json.dumps({"text": t, "label": 0}) + "\n" for t in reversed(TEXTS))
    )
    again = invoke_in(other, "bench", "run", str(config), "--store", str(folder / "s.sqlite"))
    said = " ".join(again.output.split())
    assert again.exit_code != 0
    assert f"{str(other / 'd.jsonl')!r} from the current folder" in said
    assert f"{str(folder / 'd.jsonl')!r} beside the config" in said
    assert "run from the config's folder" in said
    assert not (folder / "s.sqlite").exists()
    same = invoke_in(folder, "bench", "run", "grid.toml")  # one file, seen from both
    assert same.exit_code == 0, same.output


# ------------------------------------------------------------------ P09
def test_p09_a_linked_config_reads_its_paths_beside_its_target(
    tmp_path, monkeypatch, tiny_classifier
):
    """They were looked for beside the link: "model 'm' is neither a built-in nor an
    existing folder", naming no path tried."""
    folder = tmp_path / "a"
    folder.mkdir()
    (folder / "m").symlink_to(tiny_classifier)
    config = _config(folder, "m")
    elsewhere = tmp_path / "b"
    elsewhere.mkdir()
    (elsewhere / "link.toml").symlink_to(config)
    monkeypatch.chdir(tmp_path)
    loaded = load_config(Path("b/link.toml"))
    assert loaded.experiments[0].model == "m"  # its path from the config's folder
    assert Path(loaded.experiments[0].model_to_load) == folder / "m"
    (elsewhere / "lost.toml").write_text(config.read_text().replace('"m"', '"gone"'))
    _refused(elsewhere / "lost.toml", "'gone' (from the current folder) or", "(beside the")


def test_p09_a_linked_queue_reads_its_configs_beside_its_target(tmp_path, tiny_classifier):
    """It advised "put the queue beside its configs", which it was; only the link was not."""
    folder = tmp_path / "q"
    folder.mkdir()
    _config(folder, str(tiny_classifier))
    (folder / "queue.toml").write_text(
        '[[entries]]\nname = "a"\nconfig = "grid.toml"\nstore = "s.sqlite.xz"\n'
    )
    link = tmp_path / "link.toml"
    link.symlink_to(folder / "queue.toml")
    queue = load_queue(link)
    assert queue.entries[0].config.resolve() == (folder / "grid.toml").resolve()
    assert queue.entries[0].store.resolve() == (folder / "s.sqlite.xz").resolve()


# ------------------------------------------------------------------ P10
def test_p10_a_lock_file_that_is_a_folder_says_so(tmp_path, tiny_classifier):
    """It said "write the store to a folder you can write to", of a writable folder."""
    folder = tmp_path / "m"
    folder.mkdir()
    assert (
        invoke_in(folder, "bench", "run", str(_config(folder, str(tiny_classifier)))).exit_code == 0
    )
    (folder / ".t.sqlite.xz.lock").mkdir()
    result = invoke_in(folder, "bench", "merge", "grid.sqlite", "--into", "t.sqlite.xz")
    said = " ".join(result.output.split())
    assert result.exit_code != 0
    assert "is a folder, not a lock file; remove it" in said
    assert "a folder you can write to" not in said
