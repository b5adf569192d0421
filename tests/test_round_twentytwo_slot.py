"""Round twenty-two of new-user probes, probe a: ``scripts/gpu/estimate`` priced every
slot at 450 s of compute whatever the queue's ``deadline`` (540, 120 and 55 s gave the same
slot counts; P04); a queue ``deadline = 55``, the minimum ``pack`` took, left no time for
the slot's own start, so no entry ever started, and at 56 s the slot said "30 s left ...
an entry needs 30 s" (P05). Tiny models, a 4-text data file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from normxlogit.bench import slot as slot_module
from normxlogit.bench.estimate import main as estimate_main
from normxlogit.bench.estimate import slot_compute
from normxlogit.bench.queue import GpuQueue, load_queue
from normxlogit.bench.slot import (
    EXPORT_RESERVE,
    GRACE,
    MINIMUM_DEADLINE,
    MINIMUM_ENTRY,
    START_RESERVE,
    STOP_WAIT,
    Clock,
    compute_seconds,
)
from normxlogit.bench.slot import main as slot_main
from normxlogit.common.errors import InvalidFileError, InvalidInputError

from .test_round_twentyone_pack import _repository


class _Clock(Clock):
    """A slot's clock that has run ``spent`` seconds, moved on by hand."""

    def __init__(self, seconds: float, spent: float = 0.0):
        super().__init__(seconds)
        self.spent = spent

    def elapsed(self) -> float:
        return self.spent


def _queue(deadline: float) -> GpuQueue:
    return GpuQueue(path=Path("q.toml"), title="q", entries=(), deadline=deadline)


# ------------------------------------------------------------------ P04
def test_p04_a_slots_compute_follows_the_queues_deadline():
    """Every deadline was priced at 450 s; now its own less start, export and grace."""
    seen = {d: slot_compute(_queue(d), None)[0] for d in (540.0, 120.0, MINIMUM_DEADLINE)}
    assert seen == {d: d - START_RESERVE - EXPORT_RESERVE - GRACE for d in seen}
    assert seen[540.0] == compute_seconds(540.0) == 490.0 and seen[120.0] == 70.0
    assert seen[MINIMUM_DEADLINE] > 0
    said = slot_compute(_queue(120.0), None)[1]
    assert said.startswith("a slot computes 70 s (the queue's 120 s deadline less its start")
    assert "calibration takes up to 150 s of its first slot, not counted" in said


def test_p04_slot_seconds_overrides_within_the_deadline_and_is_refused_past_it():
    assert slot_compute(_queue(540.0), 450.0)[1].startswith("a slot computes 450 s (--slot-")
    assert slot_compute(_queue(120.0), 70.0)[0] == 70.0
    with pytest.raises(InvalidInputError) as caught:
        slot_compute(_queue(120.0), 450.0)
    message = str(caught.value)
    assert message.startswith("--slot-seconds 450 is more than the 70 s a slot of q.toml's")
    assert message.endswith("give at most 70, or leave it out") and "\n" not in message


def _slots_now(out: str) -> float:
    row = next(line for line in out.splitlines() if line.startswith("| e1 |"))
    return float(row.split("|")[8])


def test_p04_estimate_counts_more_slots_for_a_shorter_deadline(tmp_path, tiny_classifier, capsys):
    """540 s and 120 s queues gave the same slots; now in the ratio of their compute."""
    slots = {}
    for deadline in (540, 120):
        root = _repository(tmp_path / str(deadline), tiny_classifier, deadline=deadline)
        queue = str(root / "mine" / "q.toml")
        assert estimate_main(["--queue", queue, "--rate-today", "0.001"]) == 0
        out = capsys.readouterr().out
        assert f"a slot computes {compute_seconds(deadline):g} s (the queue's {deadline} s" in out
        slots[deadline] = _slots_now(out)
    assert slots[120] == pytest.approx(slots[540] * 490 / 70, rel=0.05)
    code = estimate_main(["--queue", queue, "--rate-today", "0.001", "--slot-seconds", "450"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("error: --slot-seconds 450 is more than the 70 s a slot of")


# ------------------------------------------------------------------ P05
def test_p05_the_minimum_deadline_keeps_the_slots_start():
    assert START_RESERVE > 0
    assert MINIMUM_DEADLINE == START_RESERVE + MINIMUM_ENTRY + EXPORT_RESERVE == 65.0


@pytest.mark.parametrize("deadline", ["55", "64.5"])
def test_p05_a_queue_deadline_without_the_start_is_refused(tmp_path, deadline):
    """55 s was taken, and no entry started in it."""
    queue = tmp_path / "q.toml"
    queue.write_text(f'deadline = {deadline}\n[[entries]]\nname = "a"\nconfig = "g.toml"\n')
    with pytest.raises(InvalidFileError, match=f"deadline = {deadline} is under the 65 s"):
        load_queue(queue)


def test_p05_slot_run_takes_the_same_minimum(tmp_path, capsys):
    out = tmp_path / "out"
    code = slot_main(["run", str(tmp_path / "no-part"), "--out", str(out), "--deadline", "56"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [
        "error: --deadline 56: a slot needs at least 65 s (its start's 10 s, one entry's 30 s "
        "and the export's 25 s); give more seconds, or leave it out for the queue's"
    ]


@pytest.mark.parametrize(("left", "shown"), [(29.96, "29.9"), (29.4, "29.4"), (-3.0, "0.0")])
def test_p05_not_started_never_reads_as_the_minimum(left, shown):
    """ "30 s left ... and an entry needs 30 s": 29.6 s rounded to the minimum."""
    logfile = io.StringIO()
    slot_module._not_started("e1", left, _Clock(56.0, 56.0 - EXPORT_RESERVE - left), logfile)
    line = logfile.getvalue().strip()
    assert line.startswith(f"entry e1: not started (deadline): {shown} s left before the export")
    assert "of the 56 s deadline" in line and "an entry needs 30 s" in line


def test_p05_a_calibration_leaves_the_first_entry_its_time(tmp_path, monkeypatch):
    """A calibration stopped at its budget takes STOP_WAIT more: the budget keeps it."""
    clock = _Clock(540.0, 540.0 - EXPORT_RESERVE - MINIMUM_ENTRY - STOP_WAIT - 30.0)
    budgets = []

    def child(command, env, seconds, logfile, cwd):
        budgets.append(seconds)
        clock.spent += seconds + STOP_WAIT  # stopped at its budget, after the wait
        return -15, seconds + STOP_WAIT

    monkeypatch.setattr(slot_module, "run_child", child)
    results = slot_module.calibrate(tmp_path, {}, "cpu", clock, tmp_path, io.StringIO(), tmp_path)
    assert budgets == [30.0] and list(results) == ["agreement"]
    assert clock.left() - EXPORT_RESERVE >= MINIMUM_ENTRY
    # three skipped for time: nothing cached, so the machine's next slot calibrates them
    assert not (tmp_path / "calibration.json").exists()
    budgets.clear()
    slot_module.calibrate(
        tmp_path, {}, "cpu", _Clock(MINIMUM_DEADLINE, 1.0), tmp_path, io.StringIO(), tmp_path
    )
    assert budgets == []  # no calibration at the minimum deadline: the entry comes first


def test_p05_a_slot_at_the_minimum_deadline_runs_its_entry(
    tmp_path, tiny_classifier, monkeypatch, capsys
):
    """At the former minimum (55 s) the entry was "not started". The slot's torch check
    (a fresh Python importing torch) is timed out of it: it took 11 s on a 2-core CPU
    running the suite's other worker, past the start's 10 s reserve, and the slot then
    rightly started no entry (test_p07_a_slot_that_starts_no_entry_says_why_in_its_log).
    The check itself runs in the other slot tests."""
    from normxlogit.bench.pack import build_pack

    root = _repository(tmp_path, tiny_classifier, deadline=f"{MINIMUM_DEADLINE:g}")
    pack = build_pack(load_queue(root / "mine" / "q.toml"), root, root / ".slot")
    out = tmp_path / "out"
    cpu = ("--home", str(tmp_path / "home"), "--device", "cpu", "--no-calibrate")
    monkeypatch.chdir(root)
    monkeypatch.setattr(slot_module, "check_torch", lambda env: "torch: admitted (not timed)")
    code = slot_main(["run", pack.parts[-1].relative_to(root).as_posix(), *cpu, "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    report = json.loads((out / "slot-report.json").read_text())
    assert report["deadline"] == MINIMUM_DEADLINE and report["entries"][0]["state"] == "done"


def test_estimate_total_row_adds_the_rows_as_precisely_as_they_are_shown(
    tmp_path, tiny_classifier, capsys
):
    """The total row printed whole slots (143 beside rows of tenths): now each column as
    its rows show it, and the pairs left of all pairs."""
    root = _repository(tmp_path / "q", tiny_classifier, deadline=540)
    assert estimate_main(["--queue", str(root / "mine" / "q.toml"), "--rate-today", "0.001"]) == 0
    lines = capsys.readouterr().out.splitlines()
    entry = next(line for line in lines if line.startswith("| e1 |")).split("|")
    total = next(line for line in lines if line.startswith("| all |")).split("|")
    assert total[2] == entry[2]  # "N of M" pairs: one entry, the same
    for column in (5, 6, 7, 8, 9, 10):  # minutes and slots: today, now, bfloat16
        assert total[column] == entry[column]
    assert "." in total[6] and "." in total[8] and "." in total[10]
