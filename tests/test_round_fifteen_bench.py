"""Round fifteen of new-user probes, P01 to P08 (the bench and the GPU scripts), and what
that round noted: a queue's deadline over a device command's limit, a slot's ``--out``
made before its part is refused, and ``--limit`` above an experiment's own ``limit``."""

from __future__ import annotations

import gzip
import json
import lzma
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.estimate import main as estimate_main
from normxlogit.bench.plots import plot_time
from normxlogit.bench.queue import load_queue
from normxlogit.bench.report import time_table, write_report
from normxlogit.bench.results import config_timings
from normxlogit.bench.runner import limits_below
from normxlogit.bench.slot import SlotError, read_manifest
from normxlogit.bench.slot import main as slot_main
from normxlogit.common.errors import InvalidFileError

from .bench.helpers import good_manifest
from .conftest import invoke_in

ROOT = Path(__file__).resolve().parents[1]
BODY = 'title = "{title}"\nmetrics = ["comp_cd"]\nmethods = ["normxlogit", "random"]\n'
TEXTS = ["Good fun here.", "Bad end there.", "A fine day.", "Dull and slow.", "Bright."]


def _config(folder: Path, model: Path, name: str, rows: int, limit: int | None = None) -> Path:
    """A config of one experiment on its own .jsonl file of ``rows`` texts."""
    data = folder / f"{name}.jsonl"
    data.write_text(
        "".join(json.dumps({"text": t, "label": i % 3}) + "\n" for i, t in enumerate(TEXTS[:rows]))
    )
    path = folder / f"{name}.toml"
    own = "" if limit is None else f"limit = {limit}\n"
    path.write_text(
        BODY.format(title=name) + f'[[experiments]]\nmodel = "{model}"\ndataset = "{data}"\n{own}'
    )
    return path


# ------------------------------------------------------------------ P01
def test_the_time_table_and_plot_count_only_the_configs_own_cells(tmp_path, tiny_classifier):
    """P01: the time table took every stored explanation of a method, other configs'
    (another data set, another model) included."""
    first = load_config(_config(tmp_path, tiny_classifier, "first", rows=4))
    second = load_config(_config(tmp_path, tiny_classifier, "second", rows=3))
    with ResultStore(tmp_path / "both.sqlite") as store:  # two experiments, one store
        run_bench(first, store)
        run_bench(second, store)
        timings = store.timings()
        assert len(timings) == 2 * (4 + 3)
        table = time_table(first, timings)
        assert table.count("| 4 |") == 2 and "| 7 |" not in table
        assert time_table(second, timings).count("| 3 |") == 2
        written = write_report(first, store, tmp_path / "report")
    assert any(p.name == "time-vs-length.png" for p in written)
    report = (tmp_path / "report" / "report.md").read_text()
    assert report.count("| 4 |") == 2 and "| 7 |" not in report
    # an experiment's own limit and the config's seeds bound its timings too
    capped = load_config(_config(tmp_path, tiny_classifier, "first", rows=4, limit=2))
    assert set(config_timings(capped, timings)["instance"]) == {0, 1}
    # a config with none of its cells in the store: no time table, no time plot
    third = load_config(_config(tmp_path, tiny_classifier, "third", rows=2))
    assert config_timings(third, timings).empty and time_table(third, timings) is None
    assert not plot_time(third, timings, tmp_path / "t.png")
    assert not (tmp_path / "t.png").exists()


# ------------------------------------------------------------------ P02, P03
def test_estimate_names_a_queue_error_in_one_line(tmp_path, capsys):
    """P02: every queue error was a traceback (pack says it in one line)."""
    assert estimate_main(["--queue", str(tmp_path / "nope.toml")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"error: no queue file at {tmp_path / 'nope.toml'}"


@pytest.mark.parametrize(
    ("option", "value", "unit"),
    [
        ("--rate-today", "0", "tokens/s"),
        ("--rate-today", "-1000", "tokens/s"),
        ("--rate-today", "nan", "tokens/s"),
        ("--rate-today", "inf", "tokens/s"),
        ("--rate-after", "0", "tokens/s"),
        ("--slot-seconds", "0", "seconds"),
        ("--slot-seconds", "-5", "seconds"),
    ],
)
def test_estimate_refuses_a_rate_or_slot_length_that_is_no_positive_number(
    tmp_path, capsys, option, value, unit
):
    """P03: 0 divided by zero in a traceback; -1000, nan and inf gave meaningless tables."""
    assert estimate_main([option, value, "--queue", str(tmp_path / "nope.toml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    finite = "finite " if value in ("nan", "inf") else ""  # nan and inf: not finite
    assert err == [f"error: {option} {float(value):g}: must be a {finite}number of {unit} above 0"]


# ------------------------------------------------------------------ P04
def _part(tmp_path: Path, manifest: str) -> Path:
    part = tmp_path / "part-1"
    part.mkdir(exist_ok=True)
    (part / "manifest.json").write_text(manifest)
    return part


GOOD = good_manifest()


@pytest.mark.parametrize(
    ("manifest", "says"),
    [
        ("{}", "no 'format'"),
        ("not json", "damaged, not a pack manifest"),
        ('{"this_part": "part-1", "format": 1}', "no 'parts'"),
        ("[1]", "not a pack manifest"),
        (json.dumps({**GOOD, "format": 2}), "pack format 2, and this slot reads format 1"),
        (json.dumps({**GOOD, "this_part": "p"}), "this_part 'p' is not part-N"),
        (json.dumps({**GOOD, "files": [{"path": "a"}]}), "no 'size' in a file"),
        (json.dumps({**GOOD, "entries": [{"name": "a"}]}), "no 'config' in an entry"),
    ],
)
def test_a_damaged_or_foreign_manifest_is_refused_in_one_line(tmp_path, manifest, says):
    """P04: {} was a KeyError, non-JSON a JSONDecodeError, in receive and in run."""
    part = _part(tmp_path, manifest)
    with pytest.raises(SlotError, match="scripts/gpu/pack") as caught:
        read_manifest(part)
    assert says in str(caught.value)
    out = tmp_path / "out"
    for verb in (["receive"], ["run", "--out", str(out)]):
        command = [verb[0], str(part), "--home", str(tmp_path / "home"), *verb[1:]]
        assert slot_main(command) == 2
    assert not out.exists()  # refused before the results' folder is made
    assert read_manifest(_part(tmp_path, json.dumps(GOOD)))["this_part"] == "part-1"


# ------------------------------------------------------------------ P05, P06
def test_merge_names_its_own_options_and_export_suggests_a_name_it_writes(tmp_path):
    """P05: merge's refusals said --store, which merge does not have. P06: export -o
    FOLDER suggested FOLDER/result.json, which export then refused."""
    ResultStore(tmp_path / "s.sqlite").close()
    (tmp_path / "c.toml").write_text("title = 'x'\n")
    result = invoke_in(tmp_path, "bench", "merge", "c.toml", "--into", "t.sqlite")
    assert result.exit_code == 2 and "--store" not in result.output
    assert "source c.toml is not a normxlogit results store" in result.output
    assert "name the stores to merge" in result.output
    assert not (tmp_path / "t.sqlite").exists()
    result = invoke_in(tmp_path, "bench", "merge", "s.sqlite", "--into", "new/x.sqlite")
    assert result.exit_code == 2 and "--into new/x.sqlite: the folder new" in result.output
    result = invoke_in(tmp_path, "bench", "merge", "s.sqlite", "--into", "c.toml")
    assert result.exit_code == 2 and "--store" not in result.output
    assert "--into c.toml is not a normxlogit results store" in result.output
    (tmp_path / "out").mkdir()
    result = invoke_in(tmp_path, "bench", "export", "--store", "s.sqlite", "-o", "out")
    assert result.exit_code == 2 and "e.g. out/values.csv" in result.output
    result = invoke_in(tmp_path, "bench", "export", "--store", "s.sqlite", "-o", "out/values.csv")
    assert result.exit_code == 0 and (tmp_path / "out" / "values.csv").is_file()


# ------------------------------------------------------------------ P07
@pytest.mark.parametrize(
    ("name", "pack", "says"),
    [
        (
            "plain.xz",
            None,
            "plain.xz is a plain SQLite file, which its name does not say: "
            "rename it to plain.sqlite",
        ),
        ("plain.sqlite.gz", None, "rename it to plain.sqlite"),
        (
            "packed.sqlite",
            lzma.compress,
            "packed.sqlite is xz-compressed, which its name does not say: "
            "rename it to packed.sqlite.xz",
        ),
        (
            "packed.sqlite.xz",
            gzip.compress,
            "is gzip-compressed, which its name does not say: rename it to packed.sqlite.gz",
        ),
        ("packed.db", gzip.compress, "rename it to packed.db.gz"),
    ],
)
def test_a_store_whose_name_belies_its_content_is_named_for_what_it_is(tmp_path, name, pack, says):
    """P07: a whole plain store named .xz was "cut short: fetch it again", an xz store
    named .sqlite "not a results store; move this file away"."""
    ResultStore(tmp_path / "s.sqlite").close()
    data = (tmp_path / "s.sqlite").read_bytes()
    (tmp_path / name).write_bytes(pack(data) if pack else data)
    for command in (
        ["bench", "export", "--store", name],
        ["bench", "merge", name, "--into", "t.sqlite"],
    ):
        result = invoke_in(tmp_path, *command)
        assert result.exit_code == 2 and says in result.output, result.output
        assert "fetch it again" not in result.output and "move this file" not in result.output
    assert not (tmp_path / "t.sqlite").exists()


def test_a_store_that_is_neither_still_gets_the_old_answers(tmp_path):
    (tmp_path / "junk.sqlite").write_bytes(b"junk" * 100)
    (tmp_path / "junk.sqlite.xz").write_bytes(b"junk" * 100)
    result = invoke_in(tmp_path, "bench", "export", "--store", "junk.sqlite")
    assert "is not a normxlogit results store" in result.output
    result = invoke_in(tmp_path, "bench", "export", "--store", "junk.sqlite.xz")
    assert "holds neither xz nor gzip data" in result.output  # fetching it again: no help


# ------------------------------------------------------------------ P08, the deadline
def _queue(folder: Path, head: str = "", config: str = "grid.toml") -> Path:
    path = folder / "queue.toml"
    path.write_text(
        f'{head}\n[[entries]]\nname = "first"\nconfig = "{config}"\nstore = "s.sqlite.xz"\n'
    )
    return path


def test_a_queue_beside_no_configs_names_the_entry_and_the_folder_read(tmp_path):
    """P08: "bench config x.toml does not exist; pass a bench config file", for a config
    that exists beside the queue the user copied."""
    with pytest.raises(InvalidFileError) as caught:
        load_queue(_queue(tmp_path))
    said = str(caught.value)
    assert "entry 1 (first): config grid.toml not found in" in said
    assert "read from the queue's folder" in said and str(tmp_path.resolve()) in said
    copied = tmp_path / "copy"
    copied.mkdir()
    shutil.copyfile(ROOT / "experiments" / "gpu-queue.toml", copied / "q.toml")
    ran = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu" / "estimate"), "--queue", "q.toml"],
        cwd=copied,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    assert ran.stderr.startswith("error: q.toml, entry 1 (sst2): config pisoft-classification")


@pytest.mark.parametrize("deadline", ["600", "100000", "inf", "nan"])
def test_a_deadline_past_a_device_command_is_refused(tmp_path, deadline):
    """Noted in round fifteen: `deadline = 100000` was packed, and the slot killed at the
    device's 600 s before it sent its rows back."""
    with pytest.raises(InvalidFileError, match="a device command's limit of 600 s|above 0"):
        load_queue(_queue(tmp_path, f"deadline = {deadline}"))


def test_a_deadline_under_a_device_command_is_taken(tmp_path, tiny_classifier):
    _config(tmp_path, tiny_classifier, "grid", rows=2)
    assert load_queue(_queue(tmp_path, "deadline = 599")).deadline == 599


# ------------------------------------------------------------------ --limit above limit
def test_a_limit_above_an_experiments_own_says_the_own_one_stays(tmp_path, tiny_classifier):
    """`bench run CONFIG --limit 12` ran an experiment's `limit = 6`, with no word."""
    path = _config(tmp_path, tiny_classifier, "grid", rows=4, limit=2)
    ResultStore(tmp_path / "grid.sqlite").close()
    note = "note: --limit 5 is above limit = 2 of experiment"
    result = invoke_in(tmp_path, "bench", "status", path.name, "--limit", "5")
    assert result.exit_code == 0 and note in result.output
    assert "which stays: 2 instances; raise that limit to count more" in result.output
    assert "0 of 4 instances" in result.output  # 2 per method
    result = invoke_in(tmp_path, "bench", "status", path.name, "--limit", "2")
    assert result.exit_code == 0 and "note:" not in result.output
    result = invoke_in(tmp_path, "bench", "run", path.name, "--limit", "5")
    assert result.exit_code == 0 and note in result.output and "to run more" in result.output
    config = load_config(path)
    assert limits_below(config, 5) == [(config.experiments[0].name, 2)]
    assert limits_below(config, 5, generation=True) == []  # what `bench generate` checks
    assert limits_below(config, None) == [] and limits_below(config, 2) == []
