"""Round twenty-eight of new-user probes, probe a: a file that is no results store was met
with "move this file away" even where it is the config, or the command only reads a store
(P01); ``scripts/gpu/estimate`` priced every segment method like I×G and counted no rows for
segment_drop / segment_lds, with no word (P02); ``explain --segments --aggregate`` was told
to leave out ``aggregate=``, the Python keyword (P03). From the notes: ``--versus X`` twice
printed its table twice, ``--versus X`` with X the only method with values printed nothing,
and ``"segments": []`` was refused without saying the list is empty."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from normxlogit.bench import ResultStore, load_config
from normxlogit.bench.spec import MethodSpec
from normxlogit.cli import app
from normxlogit.common.errors import InvalidFileError

from .conftest import bench_on_rows, invoke_in

CONFIG = 'title = "t"\nmetrics = ["comp_cd"]\n[[methods]]\nname = "random"\n'


def _said(result) -> str:
    return " ".join(result.output.split())


def _config(folder, model):
    """A valid config ``ctx.toml`` in ``folder`` on a one-row data file."""
    (folder / "rows.jsonl").write_text(json.dumps({"text": "good film", "label": 1}) + "\n")
    config = folder / "ctx.toml"
    config.write_text(CONFIG + f'[[experiments]]\nmodel = "{model}"\ndataset = "rows.jsonl"\n')
    return config


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize("command", [["export"], ["status", "ctx.toml"], ["report", "ctx.toml"]])
def test_p01_a_config_given_as_the_store_is_named_a_config(tmp_path, tiny_classifier, command):
    _config(tmp_path, tiny_classifier)
    result = invoke_in(tmp_path, "bench", *command, "--store", "ctx.toml")
    said = _said(result)
    assert result.exit_code == 2, said
    assert "--store names a bench config, not a store; give the store's path, e.g. ctx.sqlite" in (
        said
    )
    assert "move this file away" not in said


@pytest.mark.parametrize("command", ["export", "status", "report"])
def test_p01_a_read_only_command_never_says_move_the_file_away(tmp_path, tiny_classifier, command):
    _config(tmp_path, tiny_classifier)
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all" * 10)
    args = ["bench", command] + ([] if command == "export" else ["ctx.toml"])
    result = invoke_in(tmp_path, *args, "--store", "junk.sqlite")
    said = _said(result)
    assert result.exit_code == 2, said
    assert "pass as --store the store file (.sqlite or .sqlite.xz) a run wrote" in said
    assert "move this file away" not in said


def test_p01_a_config_under_a_store_name_is_said_to_hold_a_config(tmp_path):
    (tmp_path / "junk.sqlite").write_text(CONFIG)
    result = invoke_in(tmp_path, "bench", "export", "--store", "junk.sqlite")
    said = _said(result)
    assert "it holds a bench config, not a store" in said
    assert "move this file away" not in said and "e.g. junk.sqlite" not in said


def test_p01_only_a_store_to_create_may_be_moved_away(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 10)
    with pytest.raises(InvalidFileError, match="pass another --store, or move this file away"):
        ResultStore(junk)
    (tmp_path / "run.toml").write_text(CONFIG)
    with pytest.raises(InvalidFileError, match="--store names a bench config") as caught:
        ResultStore(tmp_path / "run.toml")
    assert "move this file away" not in str(caught.value)


def test_p01_a_run_whose_store_is_its_own_config_is_told_so(tmp_path, tiny_classifier):
    config = _config(tmp_path, tiny_classifier)
    before = config.read_text()
    result = invoke_in(tmp_path, "bench", "run", "ctx.toml", "--store", "ctx.toml")
    said = _said(result)
    assert result.exit_code == 2, said
    assert "--store names a bench config, not a store; give the store's path, e.g. ctx.sqlite" in (
        said
    )
    assert "move this file away" not in said
    assert config.read_text() == before


# ------------------------------------------------------------------ P02
def test_p02_segment_methods_are_priced_from_their_passes():
    from normxlogit.bench.estimate import explain_passes

    five, twenty = [5, 5, 5], [20, 20]
    contextcite = MethodSpec("contextcite", {"ablations": 32})
    assert explain_passes(contextcite, 100.0, segments=twenty) == 33  # ablations + 1
    assert explain_passes(MethodSpec("contextcite"), 100.0, segments=twenty) == 65  # 64
    # 5 segments have 32 subsets: repeated draws are read once
    assert explain_passes(contextcite, 100.0, segments=five) < 33
    loo = MethodSpec("leave_one_out")
    assert explain_passes(loo, 100.0, segments=[3, 5]) == 5  # S + 1, S = 4 on average
    assert explain_passes(MethodSpec("feature_ablation"), 100.0, segments=five) == 6
    ten = explain_passes(MethodSpec("shapley_sampling", {"samples": 10}), 100.0, segments=twenty)
    two = explain_passes(MethodSpec("shapley_sampling", {"samples": 2}), 100.0, segments=twenty)
    assert 10 * 20 * 0.9 < ten <= 10 * 20 + 1 and two <= 2 * 20 + 1  # up to samples x S + 1
    assert explain_passes(MethodSpec("gradient_x_input"), 100.0, segments=five) == 3.0


def test_p02_the_metadata_counts_the_whole_text_read():
    from normxlogit.methods import get_method

    assert get_method("leave_one_out").forward_passes(4) == 5
    assert get_method("contextcite", ablations=16).forward_passes(12) == 17


def test_p02_segment_drop_and_lds_rows_are_counted():
    from normxlogit.bench.estimate import rows_per_instance

    assert rows_per_instance(("segment_drop",), {}) == 3 + 1  # the whole text, top 1, 3, 5
    assert rows_per_instance(("segment_drop",), {"drop_k": [1, 2]}) == 3
    assert rows_per_instance(("segment_lds",), {"lds_ablations": 16}) == 16
    assert rows_per_instance(("segment_auprc", "segment_hit_1"), {}) == 0  # evidence only


def test_p02_what_the_model_cannot_price_is_named_in_one_line():
    from normxlogit.bench.estimate import unpriced

    experiment = SimpleNamespace(
        name="e",
        methods=(MethodSpec("lime", label="LIME"), MethodSpec("contextcite"), MethodSpec("random")),
        metrics=("sanity_spearman", "auprc", "comp_cd", "segment_lds"),
    )
    line = unpriced(experiment, [3, 4])
    assert line is not None and "\n" not in line
    assert "LIME" in line and "sanity_spearman" in line
    assert "contextcite" not in line and "auprc" not in line and "comp_cd" not in line
    # a segment method without its texts' segment counts is a guess too
    assert "contextcite" in unpriced(experiment, None)
    priced = SimpleNamespace(
        name="e", methods=(MethodSpec("leave_one_out"),), metrics=("segment_drop", "pi_soft_nc")
    )
    assert unpriced(priced, [2]) is None


def test_p02_segment_counts_follow_the_experiments_segments():
    from normxlogit.bench.estimate import segment_counts

    data = SimpleNamespace(
        texts={0: "One. Two. Three.", 1: "Only one."}, segments={0: ("a", "b"), 1: ("c",)}
    )
    sentences = SimpleNamespace(methods=(MethodSpec("leave_one_out", segments="sentences"),))
    given = SimpleNamespace(methods=(MethodSpec("contextcite", segments="data"),))
    none = SimpleNamespace(methods=(MethodSpec("random"),))
    assert segment_counts(sentences, data) == [3, 1]
    assert segment_counts(given, data) == [2, 1]
    assert segment_counts(none, data) is None


# ------------------------------------------------------------------ P03
def test_p03_the_aggregate_refusal_names_the_flag(tiny_classifier):
    text = "Paris is in France. Rome is in Italy."
    args = ["explain", text, "-m", str(tiny_classifier), "--segments", "sentences"]
    result = CliRunner().invoke(app, [*args, "--aggregate", "max"])
    said = _said(result)
    assert result.exit_code == 2, said
    assert "leave --aggregate out" in said and "aggregate=" not in said


def test_p03_library_keywords_read_as_flags():
    from normxlogit.cli.explain import flags_named

    assert flags_named("segments= reduce token scores; leave aggregate= out") == (
        "--segments reduce token scores; leave --aggregate out"
    )
    assert flags_named("generate=True writes one and continuation= gives one") == (
        "--generate writes one and --continuation gives one"
    )
    assert flags_named("segment_reduce='median' is not one of") == (
        "--segment-reduce 'median' is not one of"
    )
    assert flags_named("contrast_input[0] is empty; pass contrast=, or") == (
        "--contrast-input is empty; pass --contrast, or"
    )
    assert flags_named("explain_steps= picks the steps") == "explain_steps= picks the steps"


# ------------------------------------------------------------------ notes
def _store(tmp_path, tiny_classifier, methods):
    rows = [{"text": t, "label": 1} for t in ("good film", "bad plot here", "fine")]
    body = 'title = "t"\nmetrics = ["comp_cd"]\n' + "".join(
        f'[[methods]]\nname = "{m}"\n' for m in methods
    )
    bench_on_rows(tmp_path, tiny_classifier, rows, body)
    return load_config(tmp_path / "rows.toml"), tmp_path / "rows.sqlite"


def test_notes_versus_twice_prints_one_table(tmp_path, tiny_classifier):
    from normxlogit.bench.report import write_report

    config, path = _store(tmp_path, tiny_classifier, ["random", "normxlogit"])
    with ResultStore(path, create=False) as store:
        (report, *_) = write_report(config, store, tmp_path / "r", versus=["random", "random"])
    assert report.read_text().count("each method minus random") == 1


def test_notes_versus_the_only_method_says_there_is_nothing_to_compare(tmp_path, tiny_classifier):
    from normxlogit.bench.report import write_report

    config, path = _store(tmp_path, tiny_classifier, ["random"])
    with ResultStore(path, create=False) as store:
        (report, *_) = write_report(config, store, tmp_path / "r", versus="random")
    text = report.read_text()
    assert "random is the only method with values" in text
    assert "nothing to compare random with" in text


def test_notes_an_empty_segments_list_is_said_to_be_empty(tmp_path):
    from normxlogit.data.files import read_examples

    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"text": "One. Two.", "label": 1, "segments": []}) + "\n")
    with pytest.raises(InvalidFileError, match=r"column 'segments' is an empty list \(\[\]\)"):
        read_examples(path)
