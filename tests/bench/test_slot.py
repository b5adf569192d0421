"""The GPU slot's pipeline on the CPU: compressed stores, deadlines, the queue, the pack
(parts within a command's limit), the slot (receive, assemble, run until the deadline,
new rows back) and the merge, ending with exactly what a plain run stores."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from normxlogit.bench import ResultStore, load_config, plan, run_bench
from normxlogit.bench.archive import compress_store, readable_store
from normxlogit.bench.engines import LocalEngine
from normxlogit.bench.pack import MANIFEST, build_pack, tree_bytes
from normxlogit.bench.queue import load_queue
from normxlogit.bench.runner import Deadline
from normxlogit.bench.slot import SlotError, _compressed_pieces, assemble, receive
from normxlogit.common.errors import InvalidFileError, InvalidInputError, OutputPathError

from .helpers import EXPERIMENTS, run_cli, run_slot, stored, write_config

ROOT = Path(__file__).resolve().parents[2]
VALUES = ["model", "dataset", "instance", "method", "seed", "metric", "protocol", "axis", "x"]


def _values(path: Path):
    """A store's metric values without the seconds (which differ run to run)."""
    frame = stored(path)
    return frame[[*VALUES, "value"]].reset_index(drop=True)


def _tiny_grid(folder: Path, model: Path, limit: int = 4) -> Path:
    return write_config(
        folder,
        model,
        metrics='["comp_cd", "pi_soft_nc"]',
        methods='["normxlogit", "random"]',
        limit=limit,
        chunk_size=2,
    )


# ------------------------------------------------------------------ compressed stores
def test_a_compressed_store_is_read_merged_into_and_refused_as_a_run_target(
    tmp_path, sentiment_model
):
    config = _tiny_grid(tmp_path, sentiment_model)
    plain = tmp_path / "grid.sqlite"
    assert run_cli("bench", str(config), "--store", str(plain)).returncode == 0
    packed = compress_store(plain, tmp_path / "grid.sqlite.xz")
    assert packed.stat().st_size < plain.stat().st_size
    plain_csv = run_cli("bench", "export", "--store", str(plain)).stdout
    assert run_cli("bench", "export", "--store", str(packed)).stdout == plain_csv
    # merged into a new compressed store: the same values
    merged = run_cli("bench", "merge", str(packed), "--into", str(tmp_path / "m.sqlite.gz"))
    assert merged.returncode == 0, merged.stderr
    with readable_store(tmp_path / "m.sqlite.gz") as readable:
        assert _values(readable).equals(_values(plain))
    report = run_cli(
        "bench", "report", str(config), "--store", str(packed), "-o", str(tmp_path / "r")
    )
    assert report.returncode == 0, report.stderr
    refused = run_cli("bench", str(config), "--store", str(packed))
    assert refused.returncode != 0 and "is compressed" in refused.stderr
    assert "Traceback" not in refused.stderr
    broken = tmp_path / "broken.sqlite.xz"
    broken.write_bytes(packed.read_bytes()[:100])
    cut = run_cli("bench", "export", "--store", str(broken))
    assert cut.returncode != 0 and "cut short" in cut.stderr


# ------------------------------------------------------------------ deadlines
class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_deadline_predicts_a_unit_from_its_cell_then_its_experiment(tmp_path, sentiment_model):
    config = load_config(_tiny_grid(tmp_path, sentiment_model, limit=6))
    with ResultStore(tmp_path / "s.sqlite") as store:
        cells = plan(config, store)
    first, second = cells[0].units[0], cells[1].units[0]
    clock = _Clock()
    deadline = Deadline(10.0, clock=clock)
    assert deadline.predict(first) is None and deadline.fits(first)  # nothing known: trusted
    deadline.record(first, 4.0)  # 2 instances: 2 s each
    assert deadline.predict(cells[0].units[1]) == 4.0
    assert deadline.predict(second) == 8.0  # another method: twice its experiment's slowest
    clock.now = 5.0
    assert deadline.fits(cells[0].units[1]) and not deadline.fits(second)
    clock.now = 10.0
    assert not deadline.fits(cells[0].units[1])


def test_a_run_with_a_deadline_goes_chunk_by_chunk_and_defers_the_rest(tmp_path, sentiment_model):
    config = load_config(_tiny_grid(tmp_path, sentiment_model, limit=6))
    order = []

    class Recording(LocalEngine):
        def run(self, units, deliver):
            def watched():
                for unit in units:
                    order.append((unit.method.name, unit.instances))
                    yield unit

            super().run(watched(), deliver)

    with ResultStore(tmp_path / "s.sqlite") as store:
        report = run_bench(config, store, Recording(), deadline=Deadline(3600))
        assert report.deferred == 0
    # chunk by chunk across methods, not method by method
    assert [m for m, _ in order[:4]] == ["normxlogit", "random", "normxlogit", "random"]
    assert order[0][1] == order[1][1]
    with ResultStore(tmp_path / "late.sqlite") as store:
        late = run_bench(config, store, deadline=Deadline(1e-9))
        assert late.units == 0 and late.deferred == 6 and store.counts()["explanations"] == 0
    again = run_cli("bench", str(_tiny_grid(tmp_path, sentiment_model)), "--deadline", "0")
    assert again.returncode != 0 and "--deadline 0: must be" in again.stderr
    ray = run_cli(
        "bench", str(_tiny_grid(tmp_path, sentiment_model)), "--engine", "ray", "--deadline", "60"
    )
    assert ray.returncode != 0 and "for the local engine" in ray.stderr


# ------------------------------------------------------------------ the queue
def test_the_committed_queue_reads_and_names_what_exists():
    queue = load_queue(EXPERIMENTS / "gpu-queue.toml")
    assert queue.entries[0].name == "sst2" and queue.deadline == 540
    assert all(e.store.parent == EXPERIMENTS / "stores" for e in queue.entries)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("", "no [[entries]]"),
        (
            '[[entries]]\nname = "a"\nconfig = "grid.toml"\nstore = "s.sqlite.xz"\nlimit = 0\n',
            "limit",
        ),
        ('[[entries]]\nname = "a"\nconfig = "grid.toml"\n', "store must be given"),
        ('colour = 1\n[[entries]]\nname = "a"\n', "unknown key(s) colour"),
        (
            '[[entries]]\nname = "a"\nconfig = "grid.toml"\nstore = "s.sqlite.xz"\n'
            'methods = ["nope"]\n',
            "no method shown as nope",
        ),
    ],
)
def test_a_wrong_queue_is_refused_in_one_line(tmp_path, sentiment_model, body, says):
    _tiny_grid(tmp_path, sentiment_model)
    path = tmp_path / "queue.toml"
    path.write_text(body)
    with pytest.raises((InvalidFileError, InvalidInputError), match=None) as caught:
        load_queue(path)
    assert says in str(caught.value)


# ------------------------------------------------------------------ pack, slot, merge
def _repository(tmp_path: Path, model: Path, limit: int = 4) -> Path:
    """A git repository holding a tiny grid, its model and a queue of it (what a device
    receives: a model outside the repository is refused by the pack)."""
    root = tmp_path / "repo"
    (root / "experiments" / "stores").mkdir(parents=True)
    shutil.copytree(model, root / "experiments" / "tiny")
    _tiny_grid(root / "experiments", Path("tiny"), limit=limit)
    (root / "experiments" / "gpu-queue.toml").write_text(
        'title = "tiny"\ndeadline = 120\n\n[[entries]]\nname = "tiny"\nconfig = "grid.toml"\n'
        'store = "stores/grid.sqlite.xz"\n'
    )
    (root / ".gitignore").write_text("/.slot/\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    return root


def test_the_slot_runs_on_the_cpu_and_merges_to_what_a_plain_run_stores(tmp_path, sentiment_model):
    root = _repository(tmp_path, sentiment_model)
    queue = load_queue(root / "experiments" / "gpu-queue.toml")
    tree = tree_bytes(root)
    # a command takes the tree and 20 kB more: the data and the seed travel in chunks
    room = 20_000
    pack = build_pack(queue, root, root / ".slot", command_limit=tree + room, margin=0)
    assert len(pack.parts) >= 2
    for part, size in zip(pack.parts, pack.part_bytes, strict=True):
        on_disk = sum(p.stat().st_size for p in (part / "payload").rglob("*") if p.is_file())
        assert on_disk == size <= room and (part / MANIFEST).is_file()
    assert "slot run .slot/part-" in pack.describe()
    home, out = tmp_path / "home", tmp_path / "out"
    last = str(pack.parts[-1].relative_to(root))
    cpu = ("--home", str(home), "--out", str(out), "--device", "cpu", "--no-calibrate")
    early = run_slot(root, "run", last, *cpu)
    assert early.returncode == 2 and "have not arrived" in early.stderr
    for part in pack.parts[:-1]:
        received = run_slot(root, "receive", str(part.relative_to(root)), "--home", str(home))
        assert received.returncode == 0, received.stderr
    ran = run_slot(root, "run", last, *cpu, "--deadline", "120")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    report = json.loads((out / "slot-report.json").read_text())
    assert report["entries"][0]["state"] == "done", (out / "slot-log.txt").read_text()[-2000:]
    returned = sorted(out.glob("*.sqlite.xz"))
    assert [p.name for p in returned] == ["grid.slot.sqlite.xz"]
    home_store = root / "experiments" / "stores" / "grid.sqlite.xz"
    merged = run_cli("bench", "merge", *map(str, returned), "--into", str(home_store))
    assert merged.returncode == 0, merged.stderr
    plain = tmp_path / "plain.sqlite"
    direct = run_cli("bench", str(root / "experiments" / "grid.toml"), "--store", str(plain))
    assert direct.returncode == 0, direct.stderr
    with readable_store(home_store) as readable:
        assert _values(readable).equals(_values(plain))
        assert ResultStore(readable, create=False).counts()["explanations"] == 8
    # packed again, the seed says everything is done: a slot would compute nothing
    again = build_pack(queue, root, root / ".slot")
    seed = home / "again.sqlite"
    for item in again.manifest["files"]:
        if item["path"].startswith("seeds/"):
            chunk = item["chunks"][0]
            shutil.copyfile(again.parts[0] / chunk["name"], seed.with_suffix(".sqlite.xz"))
    config = load_config(root / "experiments" / "grid.toml")
    with readable_store(seed.with_suffix(".sqlite.xz")) as readable, ResultStore(readable) as s:
        assert sum(len(cell.units) for cell in plan(config, s)) == 0
        payloads = {
            row[0] for row in sqlite3.connect(readable).execute("SELECT payload FROM explanations")
        }
        assert payloads == {""}  # done instances travel as keys, not explanations


def test_a_part_is_checked_and_assembled_by_hash(tmp_path, sentiment_model):
    root = _repository(tmp_path, sentiment_model)
    queue = load_queue(root / "experiments" / "gpu-queue.toml")
    pack = build_pack(queue, root, root / ".slot")
    home = tmp_path / "home"
    manifest = receive(pack.parts[0], home)
    files = assemble(manifest, home)
    assert (files / "data" / "sst2" / "dev.tsv").is_file()
    chunk = next(home.joinpath("chunks").rglob("data.tar.xz.*"))
    chunk.write_bytes(b"x" * chunk.stat().st_size)  # same size, other bytes
    shutil.rmtree(files)
    with pytest.raises(SlotError, match="does not match its hash"):
        assemble(manifest, home)
    with pytest.raises(SlotError, match="no part of a pack"):
        receive(tmp_path, home)


def test_the_pack_refuses_what_cannot_travel(tmp_path, sentiment_model):
    root = _repository(tmp_path, sentiment_model)
    queue = load_queue(root / "experiments" / "gpu-queue.toml")
    with pytest.raises(OutputPathError, match="leaves no room"):
        build_pack(queue, root, root / ".slot", command_limit=10_000)
    with pytest.raises(OutputPathError, match="not ignored by git"):
        build_pack(queue, root, root / "parts")
    with pytest.raises(OutputPathError, match="outside the repository"):
        build_pack(queue, root, tmp_path / "elsewhere")


def test_a_large_return_is_split_by_method_and_merges_whole(tmp_path, sentiment_model):
    config = _tiny_grid(tmp_path, sentiment_model, limit=8)
    plain = tmp_path / "grid.sqlite"
    assert run_cli("bench", str(config), "--store", str(plain)).returncode == 0
    whole = _compressed_pieces(plain, tmp_path / "whole", limit=16 * 2**20)
    assert [p.name for p in whole] == ["whole.sqlite.xz"]
    limit = whole[0].stat().st_size - 1  # one byte too many: two pieces
    pieces = _compressed_pieces(plain, tmp_path / "piece", limit=limit)
    assert len(pieces) >= 2 and all(p.stat().st_size <= limit for p in pieces)
    merged = run_cli("bench", "merge", *map(str, pieces), "--into", str(tmp_path / "m.sqlite"))
    assert merged.returncode == 0, merged.stderr
    assert _values(tmp_path / "m.sqlite").equals(_values(plain))


def test_the_cost_model_counts_the_paper_protocol_and_what_a_store_lacks(tmp_path, sentiment_model):
    from normxlogit.bench.estimate import entry_cost, rows_per_instance

    paper = rows_per_instance(("pi_soft_ns", "pi_soft_nc", "deletion", "insertion"), {})
    assert paper == 2 * (15 * 19 + 1.5) + 2 * 20  # 613: the workload note's count
    assert rows_per_instance(("comp_cd", "suff_cd"), {}) == 2 * 9
    root = _repository(tmp_path, sentiment_model)
    queue = load_queue(root / "experiments" / "gpu-queue.toml")
    entry = queue.entries[0]
    name = load_config(entry.config).experiments[0].name
    with ResultStore(tmp_path / "empty.sqlite") as store:
        cost = entry_cost(
            queue,
            entry,
            store,
            {name: 50.0},
            {name: 1.5},
            rate_today=1000.0,
            rate_after=4000.0,
            slot_seconds=60.0,
        )
    assert cost.pairs_left == cost.pairs_total == 8  # 4 sentences x 2 methods
    rows = rows_per_instance(("comp_cd", "pi_soft_nc"), {"samples": 2, "pis": [0.25, 0.5, 0.75]})
    assert cost.tokens == pytest.approx(8 * rows * 50 + 4 * 1.0 * 50)  # random explains free
    assert cost.padded_tokens == pytest.approx(1.5 * cost.tokens)
    assert cost.minutes_today == pytest.approx(cost.padded_tokens / 1000 / 60)
    assert cost.slots_after == pytest.approx(cost.tokens / 4000 / 60)
    # now: the same work without padding, at the device's measured rate
    assert cost.tokens_now == pytest.approx(cost.tokens)
    assert cost.minutes_now == pytest.approx(cost.tokens / 1000 / 60)


def test_value_zeroing_costs_its_reading_row_now():
    from normxlogit.bench.estimate import explain_passes
    from normxlogit.bench.spec import MethodSpec

    reading = MethodSpec("value_zeroing", {"rollout": False})
    assert explain_passes(reading, 100.0) == 101.0  # before: a re-run per token
    assert explain_passes(reading, 100.0, now=True) == 3.0
    assert explain_passes(MethodSpec("value_zeroing"), 100.0, now=True) == 101.0  # rollout


def test_the_pack_checks_its_out_folder_before_downloading_wheels(
    tmp_path, sentiment_model, monkeypatch, capsys
):
    from normxlogit.bench import pack

    root = _repository(tmp_path, sentiment_model)

    def no_download(folder, python="3.12"):
        raise AssertionError("wheels were fetched before --out was checked")

    monkeypatch.setattr(pack, "download_wheels", no_download)
    code = pack.main(["--root", str(root), "--out", str(tmp_path / "elsewhere")])
    assert code == 2
    assert "outside the repository" in capsys.readouterr().err


def test_an_entry_its_deadline_stopped_is_not_reported_done(tmp_path, sentiment_model):
    """`bench run --deadline` exits 0 when it leaves units for the next run; the slot's
    report must say so rather than "done" (read from the run's own words)."""
    from normxlogit.bench.slot import entry_state

    late = run_cli("bench", str(_tiny_grid(tmp_path, sentiment_model)), "--deadline", "0.001")
    assert late.returncode == 0, late.stderr
    assert entry_state(late.returncode, late.stdout + late.stderr) == (
        "stopped (deadline): 4 unit(s) left"
    )
    whole = run_cli("bench", str(_tiny_grid(tmp_path, sentiment_model)))
    assert whole.returncode == 0 and entry_state(0, whole.stdout + whole.stderr) == "done"
    assert entry_state(-15, "") == "stopped (-15)"


def test_a_slot_calibrates_only_what_its_queue_needs(tmp_path, monkeypatch):
    """bench_dtype and bench_compile have their verdicts (keep float32, keep eager): a fresh
    machine no longer pays 42 + 75 s of its first slot for them."""
    from normxlogit.bench import slot as slot_module

    calls = []

    def child(command, env, seconds, logfile, cwd):
        calls.append(Path(command[1]).stem)
        return 1, 1.0

    monkeypatch.setattr(slot_module, "run_child", child)
    (tmp_path / "home").mkdir()
    slot_module.calibrate(
        tmp_path, {}, "cuda", slot_module.Clock(500), tmp_path / "home", None, tmp_path
    )
    assert calls == ["bench_agreement", "bench_gpu"]
