"""Round twenty-three of new-user probes, probe a: an output named by its suffix alone
("out/.png", "out/.sqlite.xz", as ``-o out/$NAME.png`` gives with NAME empty) is refused
by every output, not only those whose format ``output_format`` reads (P02); and
``scripts/gpu/pack --out .slot/q`` prints device commands with paths from the repository
root, not from ``.slot/`` (P05). Tiny models, a 4-text data file."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from normxlogit.bench.pack import build_pack
from normxlogit.bench.queue import load_queue
from normxlogit.bench.store import ResultStore
from normxlogit.common.errors import OutputPathError
from normxlogit.common.outputs import check_json_name, refuse_suffix_only
from normxlogit.sanity.randomization import save_format

from .conftest import invoke_in

TEXTS = ["Good fun here.", "Bad end there.", "A fine day.", "Dull and slow."]
REFUSED = "is a suffix with no name before it"


def _data(folder: Path) -> None:
    """d.jsonl and a bench config g.toml reading it with the built-in tinybert."""
    (folder / "d.jsonl").write_text(
        "".join(json.dumps({"text": t, "label": i % 2}) + "\n" for i, t in enumerate(TEXTS))
    )
    (folder / "g.toml").write_text(
        'metrics = ["comp_cd"]\nmethods = ["random"]\n[[experiments]]\nname = "t"\n'
        'model = "tinybert"\ndataset = "d.jsonl"\nlimit = 1\n'
    )


# ------------------------------------------------------------------ P02
@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (("sanity", "d.jsonl", "-m", "tinybert", "--plot", "out/.png"), "--plot out/.png"),
        (("sanity", "d.jsonl", "-m", "tinybert", "-o", "out/.csv"), "--output out/.csv"),
        (
            ("evaluate", "d.jsonl", "-m", "tinybert", "-o", "out/e.md", "--save", "out/.json"),
            "--save out/.json",
        ),
        (("bench", "run", "g.toml", "--store", "out/.sqlite"), "--store out/.sqlite"),
        (("bench", "merge", "g.sqlite", "--into", "out/.sqlite.xz"), "--into out/.sqlite.xz"),
    ],
)
def test_p02_every_output_named_by_its_suffix_alone_is_refused(tmp_path, args, shown):
    """--plot out/.png was told "give the file a .png name"; --store out/.sqlite made a
    hidden store without a word."""
    _data(tmp_path)
    (tmp_path / "out").mkdir()
    result = invoke_in(tmp_path, *args)
    said = " ".join(result.output.split())
    assert result.exit_code != 0
    assert f"{shown} {REFUSED}" in said and "e.g. out/results." in said
    assert not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize(
    ("check", "name"),
    [
        (lambda path: save_format(path), ".parquet"),
        (lambda path: check_json_name(path, "a result is", "r.json", {}), ".json"),
        (lambda path: ResultStore(path), ".sqlite"),
        (lambda path: ResultStore(path), ".sqlite.gz"),
    ],
)
def test_p02_the_python_saves_refuse_it_too(tmp_path, check, name):
    """SanityResult.save, EvaluationResult.save, Explanation.save and a new store."""
    with pytest.raises(OutputPathError, match=f"{REFUSED} .*e.g. .*results{name}"):
        check(tmp_path / name)
    assert not any(tmp_path.iterdir())


def test_p02_a_hidden_name_that_is_no_suffix_passes(tmp_path):
    """Only names made of suffixes are refused: .notes.csv and .csvx are names."""
    for name in (".notes.csv", ".csvx", "results.csv"):
        refuse_suffix_only(tmp_path / name, "--output", (".csv",))
    with pytest.raises(OutputPathError, match=r"--output \S+/\.CSV "):
        refuse_suffix_only(tmp_path / ".CSV", "--output", (".csv",))


# ------------------------------------------------------------------ P05
def _repository(tmp_path: Path, model: Path) -> Path:
    """A git repository whose ``mine/`` holds a config, its data, its model and a queue."""
    root = tmp_path / "repo"
    mine = root / "mine"
    mine.mkdir(parents=True)
    shutil.copytree(model, mine / "tiny")
    (mine / "d.jsonl").write_text(
        "".join(json.dumps({"text": t, "label": i % 3}) + "\n" for i, t in enumerate(TEXTS))
    )
    (mine / "g.toml").write_text(
        'metrics = ["comp_cd"]\nmethods = ["random"]\n'
        '[[experiments]]\nmodel = "tiny"\ndataset = "d.jsonl"\nlimit = 2\n'
    )
    (mine / "q.toml").write_text(
        'deadline = 120\n[[entries]]\nname = "e1"\nconfig = "g.toml"\nstore = "g.sqlite.xz"\n'
    )
    (root / ".gitignore").write_text("/.slot/\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    return root


def test_p05_a_pack_inside_slot_names_its_parts_from_the_root(
    tmp_path, tiny_classifier, monkeypatch
):
    """--out .slot/q printed "slot run q/part-1", carry ['q/part-1']: no such path on the
    device, which runs each command from the repository root."""
    root = _repository(tmp_path, tiny_classifier)
    (root / ".slot").mkdir()  # as after any earlier pack
    monkeypatch.chdir(root)  # --out as the user types it, relative to the root
    pack = build_pack(load_queue(root / "mine" / "q.toml"), root, Path(".slot/q"))
    for command, carry in pack.commands:
        assert command.split()[-1] == carry[0] and carry[0].startswith(".slot/q/part-")
        assert (root / carry[0] / "manifest.json").is_file()
    assert "carry=['.slot/q/part-1']" in pack.describe()
