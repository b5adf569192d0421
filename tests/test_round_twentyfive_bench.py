"""Round twenty-five of new-user probes, probe a: a slot whose agreement check gave no value
(skipped for time, failed for want of SST-2, cached as done, or --no-calibrate) ran its
entries with no word (P01); a table with no method axis showed one of an experiment's
methods unlabelled (P02); a queue ``store`` that ``bench merge --into`` refuses was
packed and run (P03); ``merge:`` lines reached stdout only (P04); a queue's ``methods =
[]`` ran every method (P05); an empty method or experiment name vanished from its
refusal (P06). Tiny models."""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path

import pytest

from normxlogit.bench import load_config
from normxlogit.bench import slot as slot_module
from normxlogit.bench.pack import AGREEMENT_DATA, build_pack
from normxlogit.bench.queue import load_queue
from normxlogit.common.errors import InvalidFileError, InvalidInputError

from .bench.helpers import run_cli, write_config
from .test_round_twentyone_pack import _repository

AGREES = {"variants": {"device as it comes, 1024 rows a pass": {"largest": 2e-6}}}


# ------------------------------------------------------------------ P01
def test_p01_the_pack_carries_the_agreement_checks_sst2_rows(tmp_path, tiny_classifier):
    """A queue that reads no SST-2 (here a data file beside the config) carried none, so
    bench_agreement failed on the device; its two dev sentences now always travel."""
    root = _repository(tmp_path, tiny_classifier)
    pack = build_pack(load_queue(root / "mine" / "q.toml"), root, root / ".slot")
    data = next(f for f in pack.manifest["files"] if f["path"] == "data.tar.xz")
    assert data["size"] < 64 * 1024
    stash = tmp_path / "stash.tar.xz"
    with open(stash, "wb") as out:
        for chunk in data["chunks"]:
            out.write((root / ".slot" / f"part-{chunk['part']}" / chunk["name"]).read_bytes())
    with tarfile.open(stash) as packed:
        assert "sst2/dev.tsv" in packed.getnames()
    # the rows the benchmark reads: its TEXTS
    script = (Path(slot_module.PACKAGE_ROOT) / "benchmarks" / "bench_agreement.py").read_text()
    assert re.search(r"^TEXTS = (\d+)$", script, re.MULTILINE).group(1) == str(AGREEMENT_DATA[2])


def _slot(monkeypatch, tmp_path, calibration, *extra, entries=None, exported=()):
    """The slot's main in this process, with ``calibration`` its calibrate's result; the
    entries it ran (or None where run_queue was not called)."""
    ran = []

    def run_queue(*args, **kwargs):
        ran.append(True)
        return entries if entries is not None else [{"entry": "e", "state": "done", "added": {}}]

    monkeypatch.setattr(slot_module, "receive", lambda part, home: {"deadline": 100})
    for name in ("assemble", "install", "environment", "check_torch"):
        monkeypatch.setattr(slot_module, name, lambda *a, **k: "")
    monkeypatch.setattr(slot_module, "export", lambda *a: list(exported))
    monkeypatch.setattr(slot_module, "calibrate", lambda *a: calibration)
    monkeypatch.setattr(slot_module, "run_queue", run_queue)
    out = tmp_path / "out"
    code = slot_module.main(["run", "p", "--out", str(out), "--home", str(tmp_path), *extra])
    return code, out, bool(ran)


@pytest.mark.parametrize(
    ("calibration", "extra", "reason"),
    [
        ({"gpu": {}}, (), "skipped, too little time left"),
        ({"agreement": {"failed": 1, "seconds": 37.0}}, (), "bench_agreement stopped (1)"),
        ({"agreement": {"variants": {}}}, (), "bench_agreement gave no value of this device"),
        ({}, ("--no-calibrate",), "--no-calibrate skips it"),
    ],
)
def test_p01_an_unchecked_slot_runs_and_says_so(
    tmp_path, capsys, monkeypatch, calibration, extra, reason
):
    code, out, ran = _slot(monkeypatch, tmp_path, calibration, *extra)
    assert code == 0 and ran  # the minimum deadline leaves no calibration time: it runs
    warning = f"warning: the agreement check did not run ({reason}"
    err = capsys.readouterr().err
    assert warning in err and "this slot's cells are not checked against the CPU's" in err
    assert warning in (out / "slot-log.txt").read_text()
    report = json.loads((out / "slot-report.json").read_text())
    assert report["agreement"].startswith(f"not checked: {reason}")


@pytest.mark.parametrize(
    ("calibration", "extra"),
    [({"agreement": AGREES}, ()), ({}, ("--no-calibrate", "--device", "cpu"))],
)
def test_p01_a_checked_or_cpu_slot_gives_no_warning(
    tmp_path, capsys, monkeypatch, calibration, extra
):
    code, out, ran = _slot(monkeypatch, tmp_path, calibration, *extra)
    assert code == 0 and ran
    assert "agreement check" not in capsys.readouterr().err
    report = json.loads((out / "slot-report.json").read_text())
    if calibration:
        assert report["agreement"].startswith("checked: largest difference 2e-06")
    else:
        assert "agreement" not in report


def test_p01_a_failed_calibration_is_not_cached(tmp_path, monkeypatch):
    """``{"agreement": {"failed": 1}}`` was written to calibration.json once all four had a
    result, and every later slot on the machine skipped the check."""
    home, out = tmp_path / "home", tmp_path / "out"
    home.mkdir()
    out.mkdir()
    calls = []

    def child(command, env, seconds, logfile, cwd):
        name = Path(command[1]).stem.removeprefix("bench_")
        calls.append(name)
        target = Path(command[command.index("--json") + 1])
        if name == "agreement" and calls.count("agreement") == 1:
            return 1, 3.0  # no file: failed
        target.write_text(json.dumps(AGREES if name == "agreement" else {"ok": name}))
        return 0, 3.0

    monkeypatch.setattr(slot_module, "run_child", child)
    clock = slot_module.Clock(500)
    first = slot_module.calibrate(tmp_path, {}, "cuda", clock, home, None, out)
    assert first["agreement"]["failed"] == 1
    cached = json.loads((home / "calibration.json").read_text())
    assert "agreement" not in cached and set(cached) == {"gpu"}
    second = slot_module.calibrate(tmp_path, {}, "cuda", clock, home, None, out)
    assert calls[2:] == ["agreement"]  # only the one that failed runs again
    assert slot_module.unchecked(second, "cuda") is None
    assert set(json.loads((home / "calibration.json").read_text())) == set(slot_module.CALIBRATIONS)
    # a file an earlier version wrote with the failure in it: the check runs again
    (home / "calibration.json").write_text(
        json.dumps({**cached, "agreement": {"failed": 1, "seconds": 37.0}})
    )
    calls.clear()
    slot_module.calibrate(tmp_path, {}, "cuda", clock, home, None, out)
    assert calls == ["agreement"]


def test_p01_the_help_names_every_calibration_no_calibrate_skips(capsys):
    with pytest.raises(SystemExit):
        slot_module.main(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    for name in slot_module.CALIBRATIONS:
        assert f"bench_{name}" in help_text


# ------------------------------------------------------------------ P02
@pytest.mark.parametrize(
    "axes",
    [
        'rows = "dataset"\ncolumns = "model"\ngroups = "none"',
        'rows = "experiment"\ncolumns = "dataset"\ngroups = "model"',
    ],
)
def test_p02_a_table_with_no_method_axis_over_two_methods_is_refused(
    tmp_path, tiny_classifier, axes
):
    body = f'name = "A"\n[[tables]]\nmetric = "comp_cd"\n{axes}\n'
    config = write_config(
        tmp_path, tiny_classifier, body, methods='["random", "normxlogit"]', metrics='["comp_cd"]'
    )
    with pytest.raises(InvalidInputError) as caught:
        load_config(config)
    message = str(caught.value)
    assert (
        "table 1: methods 'random' and 'normxlogit' of one experiment fall in one cell" in message
    )
    assert 'set rows = "method"' in message and "one method" in message
    # one method per experiment: nothing hides
    config = write_config(
        tmp_path, tiny_classifier, body, methods='["random"]', metrics='["comp_cd"]'
    )
    assert load_config(config).tables[0].rows != "method"


# ------------------------------------------------------------------ P03, P05, P06
def _queue(tmp_path, tiny_classifier, entry: str) -> Path:
    write_config(tmp_path, tiny_classifier, 'name = "t"\n', methods='["random", "normxlogit"]')
    queue = tmp_path / "q.toml"
    queue.write_text(
        'deadline = 120\n[[entries]]\nname = "a"\nconfig = "grid.toml"\nstore = "a.sqlite.xz"\n'
        f'[[entries]]\nname = "f"\nconfig = "grid.toml"\n{entry}\n'
    )
    return queue


@pytest.mark.parametrize(
    ("store", "example"),
    [
        (".sqlite.xz", "results.sqlite.xz"),
        ("g.csv", "g.sqlite.xz"),
        ("r.sqlite.XZ", "r.sqlite.xz"),
        ("s/g.sqlite", "s/g.sqlite.xz"),
    ],
)
def test_p03_a_store_merge_would_refuse_is_refused_at_load(
    tmp_path, tiny_classifier, store, example
):
    queue = _queue(tmp_path, tiny_classifier, f'store = "{store}"')
    with pytest.raises(InvalidFileError) as caught:
        load_queue(queue)
    message = str(caught.value)
    assert message.startswith(f"{queue}, entry 2 (f): store = {store!r}")
    assert f'store = "{example}"' in message and ".sqlite.xz" in message


def test_p03_the_merge_into_a_queue_store_is_accepted(tmp_path, tiny_classifier):
    """What the queue now takes, ``bench merge --into`` takes."""
    load_queue(_queue(tmp_path, tiny_classifier, 'store = "s/g.v2.sqlite.xz"'))


@pytest.mark.parametrize("key", ["methods", "experiments"])
def test_p05_an_empty_list_is_refused(tmp_path, tiny_classifier, key):
    queue = _queue(tmp_path, tiny_classifier, f'store = "f.sqlite.xz"\n{key} = []')
    with pytest.raises(InvalidFileError) as caught:
        load_queue(queue)
    message = str(caught.value)
    assert message.startswith(f"{queue}, entry 2 (f): {key} = [] runs no {key[:-1]}")
    assert "leave the key out to run all" in message


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('methods = [""]', "methods[0] is empty; give a method label of "),
        ('methods = ["random", " "]', "methods[1] is empty; give a method label of "),
        ('experiments = [""]', "experiments[0] is empty; give an experiment name of "),
        ('methods = ["Random"]', "no method shown as Random in "),
    ],
)
def test_p06_an_empty_or_unknown_queue_name_names_the_entry(tmp_path, tiny_classifier, line, says):
    queue = _queue(tmp_path, tiny_classifier, f'store = "f.sqlite.xz"\n{line}')
    with pytest.raises(InvalidFileError) as caught:
        load_queue(queue)
    message = str(caught.value)
    assert message.startswith(f"{queue}, entry 2 (f): {says}")
    known = "(t)" if line.startswith("experiments") else "random, normxlogit"
    assert "grid.toml" in message and known in message


@pytest.mark.parametrize(
    ("flag", "says"),
    [
        ("--method", "--method is empty; give a method label of "),
        ("--experiment", "--experiment is empty; give an experiment name of "),
    ],
)
def test_p06_an_empty_bench_run_name_is_said_to_be_empty(tmp_path, tiny_classifier, flag, says):
    config = write_config(tmp_path, tiny_classifier, 'name = "t"\n', methods='["random"]')
    ran = run_cli("bench", "run", str(config), flag, "", "--store", str(tmp_path / "s.sqlite"))
    assert ran.returncode != 0
    assert says in ran.stderr and "grid.toml" in ran.stderr and "  in" not in ran.stderr


# ------------------------------------------------------------------ P04
def test_p04_merge_and_refusal_lines_reach_the_slot_log(tmp_path, capsys, monkeypatch):
    """bench.md: "slot-log.txt as merge: lines"; they reached stdout only, as did the
    agreement refusal's "no entry runs"."""
    written = [(tmp_path / "g.slot.sqlite.xz", "mine/g.sqlite.xz")]
    code, out, _ = _slot(monkeypatch, tmp_path, {"agreement": AGREES}, exported=written)
    assert code == 0
    log = (out / "slot-log.txt").read_text()
    assert "merge: normxlogit bench merge OUT/g.slot.sqlite.xz --into mine/g.sqlite.xz" in log
    far = {"variants": {"device as it comes, 1024 rows a pass": {"largest": 0.04}}}
    (tmp_path / "x").mkdir()
    code, out, ran = _slot(monkeypatch, tmp_path / "x", {"agreement": far})
    assert code == 3 and not ran
    assert "no entry runs: this device does not compute" in (out / "slot-log.txt").read_text()
    assert json.loads((out / "slot-report.json").read_text())["agreement"].startswith("refused")
