"""Round 42 (b) findings: bench, page, saved files.

- P07: a page number averaged over seeds [0, 1] listed, when clicked, each instance's
  seed-0 value only; the listed values now average over the same seeds as the number.
- P06: ``--versus best`` on an experiment whose only method is N/A said "no method has
  values here yet"; it now says every method is N/A there, with why.
- P01: the advice for bzip2 / lz4 / zip data under a ``.sqlite.xz`` name named a command
  that writes no ``X.sqlite``; each command now writes the file the message names.
- P02: ``bench run --store X.sqlite.xz`` judged by name only and advised a merge that
  refuses the file; it now gives the content-based refusal first.
- P03/P04: ``serve --bench CONFIG=missing.sqlite.bz2`` advised a run that is refused, and
  a real bzip2 store named ``.sqlite.bz2`` was called "not a results store"; the page now
  advises ``--store missing.sqlite`` and gives the CLI's content-based refusal.
- P05: the page started on a cut-short store (plain or .xz); it is now opened at start,
  as ``bench status`` does, and refused there.
"""

from __future__ import annotations

import bz2
import lzma
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from normxlogit.common.errors import InvalidInputError

SANITY = Path(__file__).parents[1] / "experiments" / "sanity.toml"
PACKED = Path(__file__).parents[1] / "experiments" / "stores" / "continuations.sqlite.xz"


def _plain_store(path: Path) -> Path:
    """A real results store (a committed one, decompressed) at ``path``."""
    path.write_bytes(lzma.decompress(PACKED.read_bytes()))
    return path


# ------------------------------------------------------------------ P07
@pytest.fixture(scope="module")
def two_seeds(tmp_path_factory):
    """A tiny bench of the random method over seeds [0, 1], and its page browser."""
    pytest.importorskip("fastapi")
    from normxlogit.bench import ResultStore, load_config, run_bench
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    from .bench.helpers import _save_tiny, write_config

    root = tmp_path_factory.mktemp("seeds")
    model = _save_tiny(root / "m", seed=0)
    config = write_config(root, model, limit=3, methods='["random"]', metrics='["soft_nc"]')
    config.write_text(config.read_text().replace("seeds = [0]", "seeds = [0, 1]"))
    with ResultStore(root / "grid.sqlite") as store:
        run_bench(load_config(config), store)
    browser = BenchBrowser([BenchEntry.parse(f"{config}={root / 'grid.sqlite'}")])
    yield browser
    browser.close()


def test_p07_listed_instances_average_to_the_number_clicked(two_seeds):
    from normxlogit.bench import load_config

    name = load_config(two_seeds.entries[0].config).experiments[0].name
    page = two_seeds.experiment(0, name)
    (row,) = [r for r in page["rows"] if r["method"] == "random"]
    listed = two_seeds.instances(0, name, "random", "soft_nc")
    values = [i["value"] for i in listed["instances"] if i["value"] is not None]
    assert listed["seeds"] == [0, 1]
    assert sum(values) / len(values) == pytest.approx(row["values"]["soft_nc"], abs=1e-9)


def test_p07_the_drill_down_title_names_the_seeds_averaged():
    script = (Path(__file__).parents[1] / "src/normxlogit/serve/static/app.js").read_text()
    assert "each averaged over seeds ${data.seeds.join" in script


# ------------------------------------------------------------------ P06
def _result(skipped):
    return SimpleNamespace(
        experiment=SimpleNamespace(
            name="N", methods=[SimpleNamespace(display=m) for m in ("grad_ellm",)]
        ),
        frame=pd.DataFrame({"method": []}),
        skipped=skipped,
        instance_summaries=lambda: None,
    )


def test_p06_versus_best_where_every_method_is_na_says_so():
    from normxlogit.bench.report import paired_table

    why = "grad_ellm explains decoder-only models."
    line = paired_table(_result({"grad_ellm": why}), "best")
    assert line is not None and "yet" not in line
    assert "every method is N/A there (grad_ellm: grad_ellm explains decoder-only models)" in line


def test_p06_versus_best_without_values_still_says_yet():
    from normxlogit.bench.report import paired_table

    line = paired_table(_result({}), "best")
    assert line is not None and "no method has values here yet" in line


# ------------------------------------------------------------------ P01


def _foreign(tool: str, plain: Path, target: Path) -> None:
    if tool == "bunzip2":
        target.write_bytes(bz2.compress(plain.read_bytes()))
    elif tool == "lz4":
        subprocess.run(["lz4", "-q", "-f", str(plain), str(target)], check=True)
    else:
        import zipfile

        with zipfile.ZipFile(target, "w") as archive:
            archive.write(plain, "stored-inside.sqlite")


@pytest.mark.parametrize("tool", ["bunzip2", "lz4", "unzip"])
def test_p01_the_decompress_command_writes_the_file_the_message_names(tmp_path, monkeypatch, tool):
    from normxlogit.bench.archive import foreign_compression

    if shutil.which(tool) is None or (tool == "lz4" and shutil.which("lz4") is None):
        pytest.skip(f"{tool} is not installed")
    monkeypatch.chdir(tmp_path)
    plain = _plain_store(tmp_path / "source.sqlite")
    _foreign(tool, plain, tmp_path / "x.sqlite.xz")
    message = foreign_compression(Path("x.sqlite.xz"))
    assert message is not None and "pass the SQLite file as x.sqlite" in message
    command = message.split("decompress it (", 1)[1].split(") and pass", 1)[0]
    assert command.startswith(tool) and "x.sqlite.xz" in command
    subprocess.run(command, shell=True, check=True, capture_output=True)
    assert Path("x.sqlite").read_bytes() == plain.read_bytes()
    assert Path("x.sqlite.xz").exists()  # the original is kept


def test_p01_a_foreign_file_already_named_sqlite_gets_a_command_to_a_free_name(tmp_path):
    """Round 48 changed it: the tool alone (`zstd x.sqlite`) compressed it again; the whole
    command now writes plain-x.sqlite."""
    from normxlogit.bench.archive import foreign_compression

    target = tmp_path / "x.sqlite"
    target.write_bytes(bz2.compress(b"SQLite format 3\x00" + b"\0" * 64))
    message = foreign_compression(target)
    plain = tmp_path / "plain-x.sqlite"
    assert message is not None and f"(bunzip2 -c {target} > {plain})" in message


# ------------------------------------------------------------------ P02
@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("bzip2", "is bzip2-compressed, which the bench does not read"),
        ("plain", "is a plain SQLite file, which its name does not say: rename it to"),
    ],
)
def test_p02_run_into_a_misfilled_xz_gives_the_content_refusal(tmp_path, content, said):
    from normxlogit.cli.bench import _check_writable_store

    raw = _plain_store(tmp_path / "source.sqlite").read_bytes()
    store = tmp_path / "p02.sqlite.xz"
    store.write_bytes(bz2.compress(raw) if content == "bzip2" else raw)
    with pytest.raises(InvalidInputError) as refused:
        _check_writable_store(store)
    message = str(refused.value)
    assert message.startswith(f"--store {store} ") and said in message
    assert "bench merge" not in message


def test_p02_run_into_a_real_xz_store_still_advises_the_merge(tmp_path):
    from normxlogit.bench.archive import compress_store
    from normxlogit.cli.bench import _check_writable_store

    packed = compress_store(_plain_store(tmp_path / "s.sqlite"), tmp_path / "p.sqlite.xz")
    with pytest.raises(InvalidInputError, match="unpack it first .*bench merge"):
        _check_writable_store(packed)


# ------------------------------------------------------------------ P03/P04
@pytest.mark.parametrize("suffix", [".bz2", ".zst", ".zip"])
def test_p03_a_missing_foreign_name_is_advised_a_run_into_its_plain_name(
    tmp_path, monkeypatch, suffix
):
    pytest.importorskip("fastapi")
    from normxlogit.serve.browse import BenchEntry

    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInputError) as refused:
        BenchEntry.parse(f"{SANITY}=missing.sqlite{suffix}")
    message = str(refused.value)
    assert f"--store missing.sqlite` first (the bench reads no {suffix} store)" in message
    assert f"--store missing.sqlite{suffix}`" not in message


def test_p04_a_bzip2_store_named_bz2_gets_the_cli_refusal(tmp_path, monkeypatch):
    pytest.importorskip("fastapi")
    from normxlogit.serve.browse import BenchEntry

    monkeypatch.chdir(tmp_path)
    raw = _plain_store(tmp_path / "source.sqlite").read_bytes()
    Path("p04.sqlite.bz2").write_bytes(bz2.compress(raw))
    with pytest.raises(InvalidInputError) as refused:
        BenchEntry.parse(f"{SANITY}=p04.sqlite.bz2")
    message = str(refused.value)
    assert message.startswith(f"--bench {SANITY}=p04.sqlite.bz2: store p04.sqlite.bz2 is bzip2")
    assert "bunzip2 -c p04.sqlite.bz2 > p04.sqlite" in message
    assert "not a results store" not in message


def test_p04_an_empty_store_is_called_an_empty_file(tmp_path, monkeypatch):
    pytest.importorskip("fastapi")
    from normxlogit.serve.browse import BenchEntry

    monkeypatch.chdir(tmp_path)
    Path("empty.sqlite").write_bytes(b"")
    with pytest.raises(InvalidInputError, match="empty.sqlite is an empty file"):
        BenchEntry.parse(f"{SANITY}=empty.sqlite")


# ------------------------------------------------------------------ P05
@pytest.mark.parametrize("packed", [False, True])
def test_p05_a_cut_short_store_is_refused_at_start(tmp_path, monkeypatch, packed):
    pytest.importorskip("fastapi")
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    monkeypatch.chdir(tmp_path)
    raw = _plain_store(tmp_path / "source.sqlite").read_bytes()
    cut = raw[: len(raw) // 2]
    name = "cut.sqlite.xz" if packed else "cut.sqlite"
    Path(name).write_bytes(lzma.compress(cut) if packed else cut)
    with pytest.raises(InvalidInputError) as refused:
        BenchBrowser([BenchEntry.parse(f"{SANITY}={name}")]).check()
    message = str(refused.value)
    assert message.startswith(f"--bench {SANITY}={name}: {name} is damaged")
    assert "cut short" in message


def test_p05_a_sound_store_still_starts(tmp_path):
    pytest.importorskip("fastapi")
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    store = _plain_store(tmp_path / "s.sqlite")
    browser = BenchBrowser([BenchEntry.parse(f"{SANITY}={store}")])
    browser.check()
    browser.close()
