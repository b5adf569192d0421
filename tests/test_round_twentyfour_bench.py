"""Round twenty-four of new-user probes, probe a: two queue entries whose stores shared a
file name (``a/g.sqlite.xz``, ``b/g.sqlite.xz``; ``x.sqlite.xz``, ``x.v2.sqlite.xz``) got
one seed, one working store and one returned file, the second entry "done" with nothing
computed (P02); ``name = ""`` in a queue entry was told it "must be given as a string"
(P03); ``slot run --out`` replaced an earlier slot's unmerged results (P04); a
``[tables.paper]`` number for a cell no experiment asks for was dropped without a word
(P05); the page drew such a cell as "–", as if not computed yet (P06). Tiny models."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.archive import readable_store
from normxlogit.bench.pack import build_pack, merge_commands, seed_names
from normxlogit.bench.queue import load_queue
from normxlogit.bench.report import NOT_ASKED_NOTE
from normxlogit.bench.slot import main as slot_main
from normxlogit.common.errors import InvalidFileError, InvalidInputError

from .bench.helpers import _save_tiny, run_cli, run_slot, table_counts, write_config
from .test_round_twentyone_pack import _repository


# ------------------------------------------------------------------ P02
def test_p02_seed_names_are_one_per_store():
    """The common single-store name stays (the guides' ``grid.slot.sqlite.xz``); names
    that would collide get 8 hex digits of their path, stable from pack to pack."""
    alone = seed_names(["experiments/stores/grid.sqlite.xz"])
    assert alone == {"experiments/stores/grid.sqlite.xz": "grid"}
    stores = ["a/g.sqlite.xz", "b/g.sqlite.xz", "x.sqlite.xz", "x.v2.sqlite.xz", "h.sqlite"]
    names = seed_names(stores)
    assert len(set(names.values())) == len(stores)
    assert names["h.sqlite"] == "h"
    for store in stores[:4]:
        stem = Path(store).name.split(".")[0]
        assert names[store].startswith(f"{stem}-") and len(names[store]) == len(stem) + 9
        assert "." not in names[store]
    assert seed_names(stores) == names
    # a store named like another's hashed name still gets a name of its own
    hashed = names["a/g.sqlite.xz"]
    clash = seed_names(["a/g.sqlite.xz", "b/g.sqlite.xz", f"c/{hashed}.sqlite.xz"])
    assert len(set(clash.values())) == 3


def test_p02_same_named_stores_each_get_their_own_rows_back(tmp_path, tiny_classifier):
    """Both entries ran into one working store, and the second was "done" with nothing
    added; each now computes its own rows and its own file comes back, named beside the
    store it merges into."""
    root = _repository(tmp_path, tiny_classifier)
    mine = root / "mine"
    (mine / "other").mkdir()
    (mine / "q.toml").write_text(
        'title = "q"\ndeadline = 120\n'
        '[[entries]]\nname = "e1"\nconfig = "g.toml"\nstore = "stores/g.sqlite.xz"\n'
        '[[entries]]\nname = "e2"\nconfig = "g.toml"\nstore = "other/g.sqlite.xz"\n'
    )
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    pack = build_pack(load_queue(mine / "q.toml"), root, root / ".slot")
    seeds = {e["store"]: e["seed"] for e in pack.manifest["entries"]}
    assert len(set(seeds.values())) == 2, seeds
    commands = merge_commands(pack.manifest)
    assert len(commands) == 2 and all(c in pack.describe() for c in commands)
    out = tmp_path / "out"
    cpu = ("--home", str(tmp_path / "home"), "--device", "cpu", "--no-calibrate")
    last = pack.parts[-1].relative_to(root).as_posix()
    ran = run_slot(root, "run", last, *cpu, "--out", str(out))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    report = json.loads((out / "slot-report.json").read_text())
    assert [e["added"]["explanations"] for e in report["entries"]] == [2, 2], report
    into = report["merge_into"]
    assert sorted(into.values()) == ["mine/other/g.sqlite.xz", "mine/stores/g.sqlite.xz"]
    assert sorted(report["returned"]) == sorted(into) and len(set(into)) == 2
    for name, store in into.items():
        assert f"merge OUT/{name} --into {store}" in ran.stdout
        assert f"OUT/{name} --into {store}" in "\n".join(commands)
        merged = run_cli("bench", "merge", str(out / name), "--into", str(root / store))
        assert merged.returncode == 0, merged.stderr
        with readable_store(root / store) as readable:
            assert table_counts(readable)["explanations"] == 2


def test_p02_the_single_store_names_are_unchanged(tmp_path, tiny_classifier):
    """One store per name: its seed is ``seeds/g.sqlite.xz`` and the pack prints the
    merge of ``g.slot.sqlite.xz``, as the guides write it."""
    root = _repository(tmp_path, tiny_classifier)
    pack = build_pack(load_queue(root / "mine" / "q.toml"), root, root / ".slot")
    assert pack.manifest["entries"][0]["seed"] == "seeds/g.sqlite.xz"
    assert merge_commands(pack.manifest) == [
        "normxlogit bench merge OUT/g.slot.sqlite.xz --into mine/stores/g.sqlite.xz"
    ]


# ------------------------------------------------------------------ P03
@pytest.mark.parametrize(
    ("key", "example"), [("name", "sst2"), ("config", ".toml"), ("store", ".sqlite.xz")]
)
def test_p03_an_empty_entry_string_is_said_to_be_empty(tmp_path, key, example):
    values = {"name": "a", "config": "g.toml", "store": "g.sqlite.xz", key: ""}
    queue = tmp_path / "q.toml"
    queue.write_text(
        "deadline = 90\n[[entries]]\n" + "".join(f'{k} = "{v}"\n' for k, v in values.items())
    )
    with pytest.raises(InvalidFileError) as caught:
        load_queue(queue)
    message = str(caught.value)
    assert f"entry 1: {key} is empty; give " in message and example in message
    assert "must be given as a string" not in message
    queue.write_text(queue.read_text().replace(f'{key} = ""', f"{key} = 3"))
    with pytest.raises(InvalidFileError, match=f"{key} must be given as a string"):
        load_queue(queue)


# ------------------------------------------------------------------ P04
@pytest.mark.parametrize(
    "earlier", [["g.slot.sqlite.xz"], ["slot-report.json"], ["h.slot-2.sqlite.xz", "x.txt"]]
)
def test_p04_an_out_holding_an_earlier_slots_results_is_refused(tmp_path, capsys, earlier):
    out = tmp_path / "out"
    out.mkdir()
    for name in earlier:
        (out / name).write_text("earlier")
    code = slot_main(["run", str(tmp_path / "no-part"), "--home", str(tmp_path), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "holds an earlier slot's results" in err[0] and "bench merge" in err[0]
    assert "empty --out" in err[0] and earlier[0] in err[0] and "x.txt" not in err[0]
    assert sorted(p.name for p in out.iterdir()) == sorted(earlier)  # nothing replaced


def test_p04_an_out_with_other_files_is_taken(tmp_path, capsys):
    """A log of an earlier slot (appended to) or other files do not stop a slot: the
    refusal that follows is the missing part's."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "slot-log.txt").write_text("earlier\n")
    code = slot_main(["run", str(tmp_path / "no-part"), "--home", str(tmp_path), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "earlier slot" not in err and "no-part" in err


# ------------------------------------------------------------------ P05
def _narrowed(folder: Path, model: Path, paper: str = "", metric: str = "comp_cd") -> Path:
    """A grid of experiments A (normxlogit, random; comp_cd, suff_cd) and B (normxlogit;
    comp_cd), one table of ``metric`` with a column per experiment and ``paper``."""
    body = f"""name = "A"

[[experiments]]
name = "B"
model = "{model}"
dataset = "sst2"
split = "dev"
limit = 2
methods = ["normxlogit"]
metrics = ["comp_cd"]

[[tables]]
metric = "{metric}"
columns = "experiment"
name = "t"
{paper}"""
    return write_config(
        folder,
        model,
        body,
        limit=2,
        methods='["normxlogit", "random"]',
        metrics='["comp_cd", "suff_cd"]',
    )


@pytest.mark.parametrize(
    ("metric", "paper", "says"),
    [
        (
            "comp_cd",
            '"B" = { "random" = 0.5, "normxlogit" = 0.4 }',
            "experiment 'B' asks for no method 'random'",
        ),
        (
            "suff_cd",
            '"B" = { "normxlogit" = 0.7 }',
            "experiment 'B' does not compute the table's metric (suff_cd) for 'normxlogit'",
        ),
    ],
)
def test_p05_a_paper_number_no_cell_shows_is_refused(
    tmp_path, tiny_classifier, metric, paper, says
):
    config = _narrowed(tmp_path, tiny_classifier, f"[tables.paper]\n{paper}\n", metric)
    with pytest.raises(InvalidInputError) as caught:
        load_config(config)
    message = str(caught.value)
    assert "\n" not in message and says in message and "would show nowhere" in message
    assert "grid.toml: table 1 paper gives 'B' a number for " in message


def test_p05_paper_numbers_cells_show_are_taken(tmp_path, tiny_classifier):
    paper = '[tables.paper]\n"A" = { "random" = 0.1 }\n"B" = { "normxlogit" = 0.4 }\n'
    config = load_config(_narrowed(tmp_path, tiny_classifier, paper))
    assert config.tables[0].paper == {"A": {"random": 0.1}, "B": {"normxlogit": 0.4}}


def test_p05_a_model_number_every_experiment_name_overrides_is_refused(tmp_path, tiny_classifier):
    """The report takes an experiment's own number first: one under the model that each
    cell's experiment number hides shows nowhere either."""
    paper = (
        '[tables.paper]\n"A" = { "normxlogit" = 0.1 }\n"B" = { "normxlogit" = 0.4 }\n'
        f'"{tiny_classifier}" = {{ "normxlogit" = 0.3, "random" = 0.2 }}\n'
    )
    with pytest.raises(InvalidInputError, match="gives instead; its number would show nowhere"):
        load_config(_narrowed(tmp_path, tiny_classifier, paper))


# ------------------------------------------------------------------ P06
@pytest.fixture(scope="module")
def narrowed_site(tmp_path_factory):
    """A bench config whose experiment B asks for no 'random', run to its end."""
    root = tmp_path_factory.mktemp("p06")
    model = _save_tiny(root / "tiny-sentiment", seed=0)
    config = _narrowed(root, model)
    with ResultStore(root / "grid.sqlite") as store:
        run_bench(load_config(config), store)
    return config, model


def test_p06_the_api_sends_the_blank_cell_and_its_note(narrowed_site):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from normxlogit.serve import build_app

    config, model = narrowed_site
    with TestClient(build_app([model], bench=[config], builtins=False)) as client:
        table = client.get("/api/bench/0/tables").json()["tables"][0]
    random = next(row for row in table["rows"] if row["label"] == "random")
    columns = [c["column"] for c in table["columns"]]
    cells = dict(zip(columns, random["cells"], strict=True))
    assert cells["B"]["value"] is None and cells["B"]["asked"] is False
    assert isinstance(cells["A"]["value"], float) and cells["A"]["asked"] is True
    assert table["not_asked_note"] == NOT_ASKED_NOTE


NODE = shutil.which("node")
#: the page's own reportTable() under node, with a small stand-in for the DOM
RENDER = """
const fs = require("fs");
const src = fs.readFileSync(process.argv[2], "utf8");
const body = src.slice(
  src.indexOf("function reportTable("), src.indexOf("async function showExperiment"));
function el(tag, attrs = {}, kids = []) {
  const node = { tag, text: attrs.text || "", kids: [...kids], dataset: {}, classes: [] };
  node.classList = { add(name) { node.classes.push(name); } };
  node.append = (...k) => { node.kids.push(...k); };
  return node;
}
const reportTable = new Function("el", body + "; return reportTable;")(el);
const box = reportTable(JSON.parse(fs.readFileSync(process.argv[3], "utf8")));
const grid = box.kids.find(k => k.tag === "table");
const rows = grid.kids[1].kids.map(tr => tr.kids.map(td => [td.text, td.classes]));
const notes = box.kids.filter(k => k.tag === "div").map(k => k.text);
console.log(JSON.stringify({ rows, notes }));
"""


@pytest.mark.skipif(NODE is None, reason="needs node")
def test_p06_the_page_draws_the_cell_blank_with_the_note(tmp_path, narrowed_site):
    """app.js's reportTable() drew every null as "–"; a cell not asked for is blank now,
    with the report's note under the table, and "–" stays for a cell not computed yet."""
    from normxlogit.bench.report import _finite_or_none, _plain_cell, build_table
    from normxlogit.bench.results import experiment_results

    config = load_config(narrowed_site[0])
    with ResultStore(narrowed_site[0].with_name("grid.sqlite"), create=False) as store:
        table = build_table(config.tables[0], experiment_results(config, store)).to_dict()
    pending = json.loads(json.dumps(table))
    pending["rows"][0]["cells"][0].update(value=None, rank=None)  # as if not computed yet
    # computed and undefined (NaN): sent as "n/a", as the Markdown report writes it (it was
    # sent as null and drawn "–", as if not computed yet)
    undefined = json.loads(json.dumps(table))
    undefined["rows"][0]["cells"][0].update(value=_plain_cell(float("nan")), rank=None)
    app = Path(__file__).parents[1] / "src" / "normxlogit" / "serve" / "static" / "app.js"
    script = tmp_path / "render.js"
    script.write_text(RENDER)
    drawn = {}
    for name, data in (("done", table), ("pending", pending), ("undefined", undefined)):
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
        shown = subprocess.run(
            [NODE, str(script), str(app), str(tmp_path / f"{name}.json")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert shown.returncode == 0, shown.stderr
        drawn[name] = json.loads(shown.stdout)
    labels = [row["label"] for row in table["rows"]]
    random = drawn["done"]["rows"][labels.index("random")]
    assert random[0][0] == "random" and random[2] == ["", ["not-asked"]]  # B's random cell
    assert random[1][0] not in ("", "–")
    assert NOT_ASKED_NOTE in drawn["done"]["notes"]
    assert drawn["pending"]["rows"][0][1][0] == "–"
    assert drawn["undefined"]["rows"][0][1][0] == "n/a"
    assert _finite_or_none(float("nan")) is None and _finite_or_none(0.25) == 0.25
