"""Round ten of new-user probes: output names and how outputs are written (T09, T10, P07).
Every name is refused before any model loads, so no test here needs one."""

from __future__ import annotations

import os
import stat

import pytest

from normxlogit.common.errors import OutputPathError
from normxlogit.common.outputs import (
    check_output_file,
    check_output_folder,
    misnamed_after_format,
    write_atomically,
)

from .conftest import invoke_in

#: suffixes round ten found written as plain text or plain SQLite
MISSED = [".tzst", ".zstd", ".gzip", ".bz", ".bzip2", ".tlz", ".taz", ".tz", ".lzo", ".sz"]
MISSED += [".cpio", ".jar"]

CONFIG = (
    'metrics = ["comp_cd"]\n[[methods]]\nname = "normxlogit"\n[[experiments]]\n'
    'model = "minilm-sst2"\ndataset = "d.jsonl"\n'
)


@pytest.mark.parametrize("suffix", [*MISSED, ".bak", ".1", ".ZSTD"])
def test_no_suffix_after_a_format_suffix_gets_plain_text(tmp_path, suffix):
    """T09: explain -o x.json.tzst, evaluate -o x.csv.zstd and export -o x.csv.tzst wrote
    plain JSON or CSV; any suffix after the format's own is refused, naming the fix."""
    (tmp_path / "d.jsonl").write_text('{"text": "Great fun.", "label": 1}\n')
    model = str(tmp_path / "no-model")
    commands = [
        ["explain", "Great fun.", "-m", model, "-f", "json", "-o", f"x.json{suffix}"],
        ["explain", "Great fun.", "-m", model, "-o", f"x.json{suffix}"],
        ["evaluate", "d.jsonl", "-m", model, "-f", "csv", "-o", f"x.csv{suffix}"],
        ["bench", "export", "--store", "s.sqlite", "-f", "csv", "-o", f"x.csv{suffix}"],
    ]
    for command in commands:
        result = invoke_in(tmp_path, *command)
        plain = "x.json" if command[0] == "explain" else "x.csv"
        assert result.exit_code == 2, (command, result.output)
        assert f"name it {plain}" in result.output, (command, result.output)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl"]  # nothing written


@pytest.mark.parametrize("suffix", [".tzst", ".zstd", ".jar"])
def test_an_archive_suffix_alone_is_refused_too(tmp_path, suffix):
    """T09: with no format suffix before it (x.tzst), the list of archive suffixes decides."""
    result = invoke_in(
        tmp_path, "bench", "export", "--store", "s.sqlite", "-f", "csv", "-o", f"x{suffix}"
    )
    assert result.exit_code == 2 and "writes none; end the name in .csv" in result.output


@pytest.mark.parametrize(
    "name",
    ["s.sqlite.tzst", "s.SQLITE.TZST", "s.sqlite.zstd", "s.sqlite.XZ", "s.tzst", "s.sqlite.bak"],
)
def test_a_store_is_named_sqlite_or_a_compression_the_bench_writes(tmp_path, name):
    """T09: bench run --store x.sqlite.tzst and merge --into x.sqlite.zstd wrote plain
    SQLite under those names."""
    from normxlogit.bench import ResultStore

    with pytest.raises(OutputPathError, match=r"\.sqlite\.xz or \.sqlite\.gz only; name it \S*s\."):
        ResultStore(tmp_path / name)
    with ResultStore(tmp_path / "source.sqlite"):
        pass
    result = invoke_in(tmp_path, "bench", "merge", "source.sqlite", "--into", name)
    assert result.exit_code == 2 and "compressed stores" in result.output
    (tmp_path / "c.toml").write_text(CONFIG)
    (tmp_path / "d.jsonl").write_text('{"text": "Great fun.", "label": 1}\n')
    result = invoke_in(tmp_path, "bench", "run", "c.toml", "--store", name)
    assert result.exit_code == 2 and "compressed stores" in result.output
    assert not (tmp_path / name).exists()
    for good in ("s.sqlite", "s.sqlite.xz", "s.sqlite.gz", "s.db", "s.csv.sqlite"):
        assert misnamed_after_format(tmp_path / good, (".sqlite",), (".xz", ".gz")) is None


@pytest.mark.parametrize("name", ["r.tar.gz", "r.tgz", "r.zip", "r.tzst"])
def test_a_report_folder_is_not_named_as_an_archive(tmp_path, name):
    """T09: bench report -o r.tar.gz created a folder named r.tar.gz."""
    (tmp_path / "c.toml").write_text(CONFIG)
    (tmp_path / "d.jsonl").write_text(
        '{"text": "Great fun.", "label": 1}\n'
    )  # a data file is checked
    result = invoke_in(tmp_path, "bench", "report", "c.toml", "--store", "s.sqlite", "-o", name)
    assert result.exit_code == 2 and "is written as a folder" in result.output
    assert "name it r " in result.output
    assert not (tmp_path / name).exists()
    assert check_output_folder(tmp_path / "r") == tmp_path / "r"


def test_an_output_that_is_a_symlink_is_written_through(tmp_path):
    """T10: -o link.json replaced the link by a file and left its target as it was; a
    dangling link was replaced the same way."""
    real, link = tmp_path / "real.json", tmp_path / "link.json"
    real.write_text("{}")
    link.symlink_to("real.json")
    assert check_output_file(link) == link
    write_atomically(link, "new")
    assert link.is_symlink() and os.readlink(link) == "real.json"
    assert real.read_text() == "new"
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to("made.json")
    write_atomically(dangling, "made")
    assert dangling.is_symlink() and (tmp_path / "made.json").read_text() == "made"
    nowhere = tmp_path / "nowhere.json"
    nowhere.symlink_to("missing/x.json")
    with pytest.raises(OutputPathError, match=r"a link to .*missing.* does not exist"):
        check_output_file(nowhere, "--output")


def test_an_existing_output_keeps_its_permission_bits(tmp_path):
    """T10: a 0640 output became 0644 (world-readable) when written again."""
    private = tmp_path / "private.json"
    private.write_text("{}")
    private.chmod(0o640)
    write_atomically(private, "new")
    assert stat.S_IMODE(private.stat().st_mode) == 0o640 and private.read_text() == "new"
    fresh = write_atomically(tmp_path / "fresh.json", "x")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~mask


def test_a_file_without_write_bits_is_refused_even_for_root(tmp_path):
    """T10: a 0444 output was overwritten (as root) and became 0644."""
    locked = tmp_path / "locked.json"
    locked.write_text("{}")
    locked.chmod(0o444)
    with pytest.raises(OutputPathError, match="exists and is read-only"):
        check_output_file(locked, "--output")


def test_a_trailing_slash_names_a_folder(tmp_path):
    """P07: -o out.json/ wrote a file out.json. (Only a path given as text still shows the
    slash: ``Path`` drops it.)"""
    given = f"{tmp_path}/out.json/"
    with pytest.raises(OutputPathError, match=r"ends in /, which names a folder; .*out\.json"):
        check_output_file(given, "--output")
    with pytest.raises(OutputPathError, match="names a folder"):
        write_atomically(given, "{}")
    assert not (tmp_path / "out.json").exists()
