"""Round fifty of probes (prober B: bench, page, files on disk): a regressor's comp_acc on
the page and under ``--versus``, a store named with an upper-case compression suffix, a
config's default store that is a folder, a hub id with a blank or an invisible character,
and the noted ``path =`` beside a hub data set."""

from __future__ import annotations

import gzip
import shutil

import pytest

from .conftest import invoke_in


def _said(result) -> str:
    return " ".join(result.output.split())


def _one_random_experiment(folder, model, *more: str, name: str = "g.toml"):
    """``folder/name``: random on a one-row d.tsv, one experiment per model given."""
    (folder / "d.tsv").write_text("sentence\tlabel\ngood movie\t1\n")
    body = 'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n' + "".join(
        f'[[experiments]]\nmodel = "{each}"\ndataset = "d.tsv"\n' for each in (model, *more)
    )
    (folder / name).write_text(body)
    return folder / name


# ------------------------------------------------------------------ 1
@pytest.fixture(scope="module")
def regressor_bench(tmp_path_factory):
    """A regressor's comp_acc (one correlation over the instances) for two methods."""
    import json

    from normxlogit.bench import ResultStore, load_config, run_bench

    from .conftest import saved_tiny

    folder = tmp_path_factory.mktemp("reg-bench")
    model = saved_tiny(folder / "reg", "bert", "regression")
    rows = [
        {"text": "a fine and lovely film", "score": 3.5},
        {"text": "bad", "score": 1},
        {"text": "it was ok i guess", "score": 2.0},
        {"text": "the best movie of the whole year by far", "score": 4.5},
        {"text": "awful acting", "score": 0.5},
    ]
    (folder / "r5.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (folder / "v.toml").write_text(
        'seeds = [0]\nmetrics = ["comp_acc"]\nmethods = ["normxlogit", "random"]\n'
        "[protocol]\nratios = [0.3, 0.6]\n"
        f'[[experiments]]\nmodel = "{model}"\ndataset = "r5.jsonl"\n'
    )
    config = load_config(folder / "v.toml")
    with ResultStore(folder / "v.sqlite") as store:
        run_bench(config, store)
    return folder, config


def test_the_page_lists_no_per_instance_values_of_a_regressors_correlation(regressor_bench):
    from normxlogit.common.errors import InvalidInputError
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    folder, config = regressor_bench
    browser = BenchBrowser([BenchEntry.parse(f"{folder / 'v.toml'}={folder / 'v.sqlite'}")])
    name = config.experiments[0].name
    with pytest.raises(InvalidInputError) as caught:
        browser.instances(0, name, "normxlogit", "comp_acc")
    said = str(caught.value)
    assert "is one Pearson correlation over all its instances" in said, said
    assert "no instance has a value of its own" in said and "\n" not in said


def test_versus_says_why_a_regressors_correlation_has_no_differences(regressor_bench):
    folder, _ = regressor_bench
    for versus in ("random", "best"):
        out = f"rep-{versus}"
        result = invoke_in(
            folder, "bench", "report", "v.toml", "--versus", versus, "--standard-error", "-o", out
        )
        assert result.exit_code == 0, result.output
        report = (folder / out / "report.md").read_text()
        assert f"no differences (--versus {versus}), comp_acc of a regression model is one " in (
            report
        ), report
        assert "0 instances" not in report and "n/a ± n/a" not in report, report
        # no number has a ±, so no note says what it is
        assert "±: the standard error over the instances" not in report, report


# ------------------------------------------------------------------ 2
@pytest.fixture
def store_file(tmp_path):
    from normxlogit.bench import ResultStore

    with ResultStore(tmp_path / "g.sqlite"):
        pass
    return tmp_path / "g.sqlite"


def test_a_plain_store_named_upper_case_xz_is_advised_a_free_plain_name(store_file):
    from normxlogit.bench import ResultStore
    from normxlogit.common.errors import OutputPathError

    folder = store_file.parent
    shutil.copy(store_file, folder / "g.sqlite.XZ")
    with pytest.raises(OutputPathError) as caught:
        ResultStore(folder / "g.sqlite.XZ", create=False)
    said = str(caught.value)
    # g.sqlite holds results: renaming onto it would destroy them
    assert said.endswith(
        f"is a plain SQLite file: rename it to {folder / 'plain-g.sqlite'} "
        f"({store_file} is another file)"
    ), said
    assert ".xz," not in said and "(or " not in said
    (folder / "g.sqlite.XZ").rename(folder / "plain-g.sqlite")
    with ResultStore(folder / "plain-g.sqlite", create=False):
        pass


def test_a_gzip_store_named_upper_case_gz_is_advised_its_gz_name(store_file):
    from normxlogit.bench.archive import readable_store
    from normxlogit.bench.store import ResultStore
    from normxlogit.common.errors import OutputPathError

    folder = store_file.parent
    (folder / "G.sqlite.GZ").write_bytes(gzip.compress(store_file.read_bytes()))
    with pytest.raises(OutputPathError) as caught:
        ResultStore(folder / "G.sqlite.GZ", create=False)
    said = str(caught.value)
    assert said.endswith(f"is gzip-compressed: rename it to {folder / 'G.sqlite.gz'}"), said
    (folder / "G.sqlite.GZ").rename(folder / "G.sqlite.gz")
    with readable_store(folder / "G.sqlite.gz") as plain, ResultStore(plain, create=False):
        pass


# ------------------------------------------------------------------ 3
def test_a_default_store_that_is_a_folder_names_no_store_option(tmp_path, tiny_classifier):
    _one_random_experiment(tmp_path, tiny_classifier)
    (tmp_path / "g.sqlite").mkdir()
    for command in ("run", "status", "report"):
        result = invoke_in(tmp_path, "bench", command, "g.toml")
        said = _said(result)
        assert result.exit_code != 0, said
        assert (
            "the config's default store g.sqlite is a folder; pass --store FILE "
            "(e.g. --store g.sqlite/results.sqlite)" in said
        ), said
        assert "--store g.sqlite is" not in said


def test_serve_bench_names_the_default_store_that_is_a_folder(tmp_path, tiny_classifier):
    from normxlogit.common.errors import InvalidInputError
    from normxlogit.serve.browse import BenchEntry

    _one_random_experiment(tmp_path, tiny_classifier)
    (tmp_path / "g.sqlite").mkdir()
    with pytest.raises(InvalidInputError) as caught:
        BenchEntry.parse(tmp_path / "g.toml")
    said = str(caught.value)
    assert f"the config's default store {tmp_path / 'g.sqlite'} is a folder; pass --bench " in said
    assert "as CONFIG=STORE" not in said


# ------------------------------------------------------------------ 4
@pytest.mark.parametrize(
    ("model", "said"),
    [
        ("org/model ", "its name ends in a space or tab"),
        ("org/model\\t", "its name ends in a space or tab"),
        ("org/mo\\u200bdel", "its name holds U+200B (ZERO WIDTH SPACE)"),
        ("org/my model", "its name holds a space or tab"),
        ("org/model\\u00a0", "its name ends in U+00A0 (NO-BREAK SPACE)"),
    ],
)
def test_a_hub_id_with_a_blank_or_an_invisible_character_is_refused_at_load(
    tmp_path, tiny_classifier, model, said
):
    """It was accepted, and the run stopped after the first experiment with
    transformers' "Repo id must use alphanumeric chars", naming no experiment."""
    from normxlogit.bench import load_config
    from normxlogit.common.errors import InvalidInputError

    config = _one_random_experiment(tmp_path, tiny_classifier, model, name="h.toml")
    with pytest.raises(InvalidInputError) as caught:
        load_config(config)
    message = str(caught.value)
    assert "experiment 2: model " in message and f"is no hub id: {said}" in message, message
    fix = "its page spells it" if " " in model.strip() else 'write it as model = "org/model"'
    assert message.endswith(fix) or fix in message, message
    assert "\u200b" not in message


def test_a_plain_hub_id_is_still_taken(tmp_path):
    from normxlogit.bench.config import _model

    assert _model("org/model", tmp_path, "experiment 1") == ("org/model", None)


# ------------------------------------------------------------------ noted
def test_noted_path_beside_a_hub_data_set_is_refused_at_load(tmp_path, tiny_classifier):
    from normxlogit.bench import load_config
    from normxlogit.common.errors import InvalidInputError

    (tmp_path / "d.tsv").write_text("sentence\tlabel\ngood movie\t1\n")
    config = tmp_path / "p.toml"
    for path in ("d.tsv", "nowhere.tsv"):
        config.write_text(
            'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
            f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "hub:foo/bar"\n'
            f'path = "{path}"\n'
        )
        with pytest.raises(InvalidInputError) as caught:
            load_config(config)
        said = str(caught.value)
        assert f'experiment 1 path = "{path}" applies to a registered data set' in said, said
        assert 'dataset = "hub:foo/bar" is read from the hub, which takes no path' in said
