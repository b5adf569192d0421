"""Round twenty-one of new-user probes, probe a: ``scripts/gpu/pack`` refused a queue whose
config reads its own data file, taking it for a missing folder of the shared data (P06);
a user's file or model folder that no device command carries is refused naming the config,
the file and the fix; a queue ``deadline`` under the slot's minimum passed ``pack`` and
``estimate`` and the slot ran nothing, with an empty ``slot-log.txt`` (P07). Tiny models,
a 4-text data file."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from normxlogit.bench import slot as slot_module
from normxlogit.bench.pack import build_pack, carried_files
from normxlogit.bench.pack import main as pack_main
from normxlogit.bench.queue import load_queue
from normxlogit.bench.slot import MINIMUM_DEADLINE
from normxlogit.common.errors import InvalidFileError, InvalidInputError

from .bench.helpers import run_slot

TEXTS = ["Good fun here.", "Bad end there.", "A fine day.", "Dull and slow."]


def _repository(
    tmp_path: Path, model: Path, *, dataset: str = "d.jsonl", ignore: str = "", deadline=120
) -> Path:
    """A git repository whose ``mine/`` holds a config reading ``dataset`` (d.jsonl is
    written beside it) with the model folder ``tiny`` beside it, and a queue of it."""
    root = tmp_path / "repo"
    mine = root / "mine"
    (mine / "stores").mkdir(parents=True)
    shutil.copytree(model, mine / "tiny")
    (mine / "d.jsonl").write_text(
        "".join(json.dumps({"text": t, "label": i % 3}) + "\n" for i, t in enumerate(TEXTS))
    )
    (mine / "g.toml").write_text(
        'title = "g"\nseeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "tiny"\ndataset = "{dataset}"\nlimit = 2\n'
    )
    (mine / "q.toml").write_text(
        f'title = "q"\ndeadline = {deadline}\n[[entries]]\nname = "e1"\nconfig = "g.toml"\n'
        'store = "stores/g.sqlite.xz"\n'
    )
    (root / ".gitignore").write_text("/.slot/\n" + ignore)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    return root


# ------------------------------------------------------------------ P06
def test_p06_a_tracked_data_file_beside_the_config_reaches_the_device(tmp_path, tiny_classifier):
    """It was refused as "data set folder d.jsonl/, missing from .../shared/data"; now the
    tree carries it, and a slot run from a copy of the carried files only reads it."""
    root = _repository(tmp_path, tiny_classifier)
    pack = build_pack(load_queue(root / "mine" / "q.toml"), root, root / ".slot")
    assert [f["path"] for f in pack.manifest["files"] if "d.jsonl" in f["path"]] == []
    device = tmp_path / "device"  # what a device command receives: the carried files
    for name in carried_files(root) | {
        p.relative_to(root).as_posix() for p in (root / ".slot").rglob("*") if p.is_file()
    }:
        (device / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / name, device / name)
    home, out = tmp_path / "home", tmp_path / "out"
    last = pack.parts[-1].relative_to(root).as_posix()
    for part in pack.parts[:-1]:
        received = run_slot(
            device, "receive", part.relative_to(root).as_posix(), "--home", str(home)
        )
        assert received.returncode == 0, received.stderr
    cpu = ("--home", str(home), "--device", "cpu", "--no-calibrate")
    ran = run_slot(device, "run", last, *cpu, "--out", str(out))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    report = json.loads((out / "slot-report.json").read_text())
    assert report["entries"][0]["state"] == "done", (out / "slot-log.txt").read_text()[-2000:]
    assert report["entries"][0]["added"]["explanations"] == 2


@pytest.mark.parametrize(
    ("ignore", "dataset", "says"),
    [
        ("d.jsonl\n", "d.jsonl", "reads data file 'd.jsonl', but git ignores mine/d.jsonl"),
        ("*.safetensors\n", "d.jsonl", "model folder 'tiny', but git ignores mine/tiny/model."),
        ("", "../../outside.jsonl", "reads data file '../../outside.jsonl', outside the repo"),
        ("", "{root}/mine/d.jsonl", "/mine/d.jsonl' by its absolute path"),
    ],
)
def test_p06_a_user_file_no_device_command_carries_is_refused(
    tmp_path, tiny_classifier, capsys, monkeypatch, ignore, dataset, says
):
    """An ignored, outside or absolutely named file passed the pack and failed on the
    device; the refusal names the config, the experiment, the file and the fix."""
    (tmp_path / "outside.jsonl").write_text(json.dumps({"text": "Fine.", "label": 0}) + "\n")
    root = tmp_path / "repo"
    _repository(tmp_path, tiny_classifier, dataset=dataset.format(root=root), ignore=ignore)
    with pytest.raises(InvalidInputError) as caught:
        build_pack(load_queue(root / "mine" / "q.toml"), root, root / ".slot")
    message = str(caught.value)
    assert message.startswith("mine/g.toml: experiment 'tiny:") and says in message
    assert "\n" not in message and not (root / ".slot").exists()
    monkeypatch.setattr("normxlogit.bench.pack.download_wheels", _no_download)
    queue = str(root / "mine" / "q.toml")
    code = pack_main(["--queue", queue, "--root", str(root), "--out", str(root / ".slot")])
    assert code == 2 and says in capsys.readouterr().err


def _no_download(folder, python="3.12"):
    raise AssertionError("wheels were fetched before the queue's files were checked")


def test_p06_a_registered_data_set_is_still_packed_from_the_shared_data(tmp_path, tiny_classifier):
    root = _repository(tmp_path, tiny_classifier, dataset="sst2")
    (root / "mine" / "g.toml").write_text(
        (root / "mine" / "g.toml").read_text().replace("limit = 2", 'split = "dev"\nlimit = 2')
    )
    pack = build_pack(load_queue(root / "mine" / "q.toml"), root, root / ".slot")
    assert any(f["path"] == "data.tar.xz" and f["size"] > 1000 for f in pack.manifest["files"])


# ------------------------------------------------------------------ P07
@pytest.mark.parametrize("deadline", ["30", "54.5"])
def test_p07_a_queue_deadline_under_the_slots_minimum_is_refused(tmp_path, deadline):
    """`deadline = 30` passed pack and estimate; the slot then started no entry."""
    queue = tmp_path / "q.toml"
    queue.write_text(f'deadline = {deadline}\n[[entries]]\nname = "a"\nconfig = "g.toml"\n')
    with pytest.raises(InvalidFileError) as caught:
        load_queue(queue)
    assert str(caught.value) == (
        f"{queue}: deadline = {deadline} is under the {MINIMUM_DEADLINE:.0f} s a slot needs "
        "(its start's 10 s, one entry's 30 s and the export's 25 s); give at least "
        f"{MINIMUM_DEADLINE:.0f} (the default is 540)"
    )


def test_p07_the_minimum_deadline_is_taken(tmp_path, tiny_classifier):
    root = _repository(tmp_path, tiny_classifier, deadline=f"{MINIMUM_DEADLINE:g}")
    assert load_queue(root / "mine" / "q.toml").deadline == MINIMUM_DEADLINE


def test_p07_a_slot_that_starts_no_entry_says_why_in_its_log(
    tmp_path, tiny_classifier, monkeypatch, capsys
):
    """slot-log.txt was empty when the deadline left no time for an entry. (Since round
    twenty-two the minimum deadline starts an entry; a start slower than its reserve
    leaves none, so the slot's clock runs 20 s ahead here.)"""
    root = _repository(tmp_path, tiny_classifier)
    pack = build_pack(load_queue(root / "mine" / "q.toml"), root, root / ".slot")
    out = tmp_path / "out"
    cpu = ("--home", str(tmp_path / "home"), "--device", "cpu", "--no-calibrate")
    last = pack.parts[-1].relative_to(root).as_posix()

    class SlowStart(slot_module.Clock):
        def elapsed(self) -> float:
            return super().elapsed() + 20.0

    monkeypatch.setattr(slot_module, "Clock", SlowStart)
    monkeypatch.chdir(root)
    code = slot_module.main(
        ["run", last, *cpu, "--out", str(out), "--deadline", f"{MINIMUM_DEADLINE:g}"]
    )
    assert code == 3 and "e1: not started (deadline)" in capsys.readouterr().err
    logged = (out / "slot-log.txt").read_text()
    assert "entry e1: not started (deadline):" in logged and "longer deadline" in logged
