"""Round eighteen of new-user probes (a), outputs and stores: ``train -o`` onto an adapter
folder beside the user's files or through a link, ``bench export`` onto model weights,
compressed store names (``merge --into X.csv.xz``, a first run into ``X.sqlite.xz``), two
runs' counts on one store, damaged weights files, and a pack's ``--out`` as a link."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import normxlogit
from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench import runner as bench_runner
from normxlogit.bench.pack import MANIFEST as PACK_MANIFEST
from normxlogit.bench.pack import _check_out
from normxlogit.bench.runner import BenchReport
from normxlogit.builtin.adapters import MANIFEST
from normxlogit.cli.bench import _raced
from normxlogit.common.errors import OutputPathError, UnknownModelError
from normxlogit.training.writing import ADAPTER_FILES, check_output, write_adapter

from .conftest import invoke_in

TEXTS = ["Good fun here.", "Bad end there.", "A fine day.", "Dull and slow."]


def _adapter(folder: Path, content: str = "old") -> Path:
    """A folder as ``train`` leaves it (its three files), holding ``content``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ADAPTER_FILES:
        (folder / name).write_text(content)
    return folder


class _FakeAdapter:
    """Saves an adapter's files as peft would (``write_adapter`` needs nothing more)."""

    def save_pretrained(self, folder, save_embedding_layers=False):
        for name in ("adapter_config.json", "adapter_model.safetensors"):
            (Path(folder) / name).write_text("new")


# ------------------------------------------------------------------ P01
def test_train_refuses_an_adapter_folder_holding_the_users_files(tmp_path):
    """P01: ``train -o`` onto an earlier adapter deleted the README.md and explanation.json
    the user had put beside it."""
    folder = _adapter(tmp_path / "p01")
    (folder / "README.md").write_text("my notes")
    (folder / "explanation.json").write_text("{}")
    with pytest.raises(OutputPathError) as refused:
        check_output("sst2", folder, False)
    message = str(refused.value)
    assert "README.md, explanation.json" in message and "choose another --output" in message
    assert (folder / "README.md").read_text() == "my notes"
    (folder / "README.md").unlink()  # an adapter folder of train's files alone: replaced
    (folder / "explanation.json").unlink()
    assert check_output("sst2", folder, False) == folder
    write_adapter(_FakeAdapter(), {"name": "x"}, folder)
    assert {p.name for p in folder.iterdir()} == ADAPTER_FILES
    assert json.loads((folder / MANIFEST).read_text()) == {"name": "x"}


def test_train_writes_through_a_link_to_an_adapter_folder(tmp_path):
    """Noted 4: ``train -o LINK`` replaced the link with a real folder."""
    real = _adapter(tmp_path / "real")
    link = tmp_path / "link"
    link.symlink_to(real)
    assert check_output("sst2", link, False) == link
    write_adapter(_FakeAdapter(), {"name": "x"}, link)
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert (real / "adapter_model.safetensors").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]  # no leftovers


# ------------------------------------------------------------------ P02
def _model_copy(tmp_path: Path, tiny_classifier: Path) -> Path:
    model = tmp_path / "m"
    shutil.copytree(tiny_classifier, model)
    return model


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_refuses_a_models_weights_file(tmp_path, tiny_classifier, fmt):
    """P02: ``bench export -f csv -o MODEL/model.safetensors`` replaced the weights."""
    model = _model_copy(tmp_path, tiny_classifier)
    weights = (model / "model.safetensors").read_bytes()
    ResultStore(tmp_path / "s.sqlite").close()
    (model / "notes.txt").write_text("kept")  # any existing file of the model folder
    for output in ("m/model.safetensors", "m/notes.txt"):
        result = invoke_in(
            tmp_path, "bench", "export", "--store", "s.sqlite", "-f", fmt, "-o", output
        )
        assert result.exit_code != 0
        assert f"--output {output} is a file of the model m; write elsewhere" in result.output
    assert (model / "model.safetensors").read_bytes() == weights
    assert (model / "notes.txt").read_text() == "kept"


@pytest.mark.parametrize("name", ["w.safetensors", "pytorch_model.bin", "m.gguf", "x.PT"])
def test_export_refuses_a_weights_name_anywhere(tmp_path, name):
    """P02: the weights' suffixes were free names for a CSV or Parquet export."""
    ResultStore(tmp_path / "s.sqlite").close()
    result = invoke_in(tmp_path, "bench", "export", "--store", "s.sqlite", "-f", "csv", "-o", name)
    assert result.exit_code != 0
    assert "but --format csv writes none; end the name in .csv" in result.output
    assert not (tmp_path / name).exists()
    with pytest.raises(OutputPathError, match="that name says .*, and a store is SQLite"):
        ResultStore(tmp_path / f"new-{name}")


# ------------------------------------------------------------------ P07, P08
@pytest.mark.parametrize(
    ("into", "fixed"),
    [
        ("p07.csv.xz", "p07.sqlite.xz"),
        ("p07.toml.gz", "p07.sqlite.gz"),
        ("p.tar.gz", "p.sqlite.gz"),
    ],
)
def test_merge_into_a_compressed_misnamed_store_names_the_users_path(tmp_path, into, fixed):
    """P07: the refusal named a temporary path and advised renaming to another."""
    ResultStore(tmp_path / "s.sqlite").close()
    result = invoke_in(tmp_path, "bench", "merge", "s.sqlite", "--into", into)
    assert result.exit_code != 0
    assert f"--into {into}:" in result.output and f"name it {fixed}" in result.output
    assert "normxlogit-store-" not in result.output and not (tmp_path / into).exists()


def _data(folder: Path) -> Path:
    path = folder / "d.jsonl"
    path.write_text(
        "".join(json.dumps({"text": t, "label": i % 3}) + "\n" for i, t in enumerate(TEXTS))
    )
    return path


def _grid(folder: Path, model: Path) -> Path:
    data = _data(folder)
    path = folder / "g.toml"
    path.write_text(
        'title = "t"\nseeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'chunk_size = 1\n[[experiments]]\nmodel = "{model}"\ndataset = "{data}"\nlimit = 3\n'
    )
    return path


def test_a_first_run_into_a_new_compressed_store_gets_advice_that_works(tmp_path, tiny_classifier):
    """P08: a missing X.sqlite.xz was to be unpacked with a merge that then failed."""
    _grid(tmp_path, tiny_classifier)
    result = invoke_in(tmp_path, "bench", "run", "g.toml", "--store", "new.sqlite.xz")
    assert result.exit_code != 0
    assert "--store new.sqlite.xz does not exist yet" in result.output
    assert "run with --store new.sqlite" in result.output
    assert "normxlogit bench merge new.sqlite --into new.sqlite.xz" in result.output
    ResultStore(tmp_path / "new.sqlite").close()  # as the run would leave it
    merged = invoke_in(tmp_path, "bench", "merge", "new.sqlite", "--into", "new.sqlite.xz")
    assert merged.exit_code == 0, merged.output
    assert (tmp_path / "new.sqlite.xz").is_file()


# ------------------------------------------------------------------ P10
def test_a_run_counts_only_the_units_it_stored_itself(tmp_path, tiny_classifier, monkeypatch):
    """P10: two runs on one store said 72 and 32 units stored for a grid of 72."""
    config = load_config(_grid(tmp_path, tiny_classifier))
    with ResultStore(tmp_path / "s.sqlite") as store:
        assert run_bench(config, store).units == 3
    # a second run planned before the first stored anything: it computes every unit again
    real_plan = bench_runner.plan
    with ResultStore(tmp_path / "empty.sqlite") as empty:
        monkeypatch.setattr(
            bench_runner, "plan", lambda config, store, *a, **k: real_plan(config, empty, *a, **k)
        )
        with ResultStore(tmp_path / "s.sqlite") as store:
            report = run_bench(config, store)
            assert store.counts()["explanations"] == 3
    assert (report.units, report.stored_elsewhere) == (0, 3)
    said = _raced(report, "unit(s)")
    assert "another run on this store had stored 3 unit(s) computed here first" in said
    assert _raced(BenchReport(units=3), "unit(s)") == ""


# ------------------------------------------------------------------ P13
@pytest.mark.parametrize("damage", ["text", "cut"])
def test_a_damaged_weights_file_is_named_in_one_line(tmp_path, tiny_classifier, damage):
    """P13: a model.safetensors that is text, or cut short, gave a SafetensorError
    traceback."""
    model = _model_copy(tmp_path, tiny_classifier)
    weights = model / "model.safetensors"
    if damage == "text":
        weights.write_text("not weights")
    else:
        weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(UnknownModelError, match="its weights file model.safetensors cannot be"):
        normxlogit.load(model)
    result = invoke_in(tmp_path, "explain", "nice", "-m", "m")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "model 'm': its weights file model.safetensors cannot be read" in result.output
    assert "download or save it again" in result.output


def test_a_damaged_pytorch_weights_file_is_named(tmp_path, tiny_classifier):
    model = _model_copy(tmp_path, tiny_classifier)
    (model / "model.safetensors").unlink()
    (model / "pytorch_model.bin").write_bytes(b"\x80\x02garbage")
    with pytest.raises(UnknownModelError, match="its weights file pytorch_model.bin cannot be"):
        normxlogit.load(model)


# ------------------------------------------------------------------ noted 6
def test_pack_refuses_a_link_as_out(tmp_path):
    """Noted 6: a --out that links to a pack reached ``shutil.rmtree`` on the link."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text(".slot/\n")
    pack = tmp_path / ".slot" / "pack"
    (pack / "part-1").mkdir(parents=True)
    (pack / "part-1" / PACK_MANIFEST).write_text("{}")
    _check_out(pack, tmp_path)  # the pack itself is fine
    link = tmp_path / ".slot" / "link"
    link.symlink_to(pack)
    with pytest.raises(OutputPathError, match=r"is a link .*give the folder itself"):
        _check_out(link, tmp_path)
