"""``normxlogit bench``'s configs: reading them, refusing mistakes, choosing parts of one."""

from __future__ import annotations

from pathlib import Path

import pytest

from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.common.errors import (
    InvalidFileError,
    InvalidInputError,
    UnknownMethodError,
    UnknownModelError,
)

from .helpers import EXPERIMENTS, stored, write_config


def test_config_reads_methods_metrics_and_experiments(tmp_path, sentiment_model):
    config = load_config(write_config(tmp_path, sentiment_model))
    (experiment,) = config.experiments
    assert experiment.model == str(sentiment_model)
    assert experiment.dataset.name == "sst2" and experiment.dataset.limit == 8
    assert [m.name for m in experiment.methods] == ["normxlogit", "random", "grad_ellm"]
    assert experiment.metrics == ("comp_cd", "suff_acc", "pi_soft_nc")
    assert experiment.protocol == {"samples": 2, "pis": [0.25, 0.5, 0.75]}
    assert config.default_store == tmp_path / "grid.sqlite"
    sizes = (experiment.batch_size, experiment.rows_per_forward, experiment.tokens_per_forward)
    assert sizes == (16, None, None)  # defaults: no row cap, the device's token budget
    body = "rows_per_forward = 256\ntokens_per_forward = 8192\n"
    sized = load_config(write_config(tmp_path, sentiment_model, body=body))
    assert (sized.experiments[0].rows_per_forward, sized.experiments[0].tokens_per_forward) == (
        256,
        8192,
    )
    resized = sized.with_sizes(batch_size=64, tokens_per_forward=1024).experiments[0]
    assert (resized.batch_size, resized.rows_per_forward, resized.tokens_per_forward) == (
        64,
        256,
        1024,
    )


@pytest.mark.parametrize(
    ("change", "error", "pattern"),
    [
        ({"methods": '["normxlogit", "saliencyy"]'}, UnknownMethodError, "saliencyy"),
        ({"metrics": '["comp_cdd"]'}, InvalidInputError, "comp_cdd"),
        ({"limit": 0}, InvalidInputError, "limit.*at least 1"),
        (
            {"methods": '[{name = "integrated_gradients", options = {stepz = 3}}]'},
            InvalidInputError,
            "stepz.*accepts",
        ),
        ({"body": "colour = 1\n"}, InvalidInputError, "unknown key.*colour"),
        (
            {"body": '[[tables]]\nmetric = "comp_cd"\nstandard_error = "yes"\n'},
            InvalidInputError,
            "standard_error must be true or false",
        ),
    ],
)
def test_config_mistakes_are_refused_with_the_fix(
    tmp_path, sentiment_model, change, error, pattern
):
    body = change.pop("body", "")
    path = write_config(tmp_path, sentiment_model, body, **change)
    with pytest.raises(error, match=pattern):
        load_config(path)


def test_config_model_that_cannot_be_found(tmp_path):
    path = write_config(tmp_path, Path("minilm-sst3"))
    with pytest.raises(UnknownModelError, match="minilm-sst3.*neither a built-in.*minilm-sst2"):
        load_config(path)
    # a relative folder is found next to the config, wherever the command runs
    (tmp_path / "models" / "mine").mkdir(parents=True)
    config = load_config(write_config(tmp_path, Path("models/mine")))
    assert config.experiments[0].model == "models/mine"  # keyed from the config's folder
    assert config.experiments[0].model_to_load == str(tmp_path / "models" / "mine")


def test_config_protocol_mistakes(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[protocol]\nsamplez = 3\n[[experiments]]\nmodel = "m"\ndataset = "sst2"\n')
    with pytest.raises(InvalidInputError, match="samplez"):
        load_config(path)
    path.write_text("[[experiments]\n")
    with pytest.raises(InvalidFileError, match="not valid TOML"):
        load_config(path)
    with pytest.raises(InvalidFileError, match="does not exist"):
        load_config(tmp_path / "missing.toml")


@pytest.mark.parametrize(
    "path",
    sorted(p for p in EXPERIMENTS.glob("*.toml") if p.name != "gpu-queue.toml"),
    ids=lambda p: p.stem,
)
def test_every_committed_experiment_config_reads(path):
    """(The GPU queue is no config: tests/bench/test_slot.py reads it.)"""
    config = load_config(path)
    assert config.experiments and config.title
    for table in config.tables:
        assert table.metric


# -------------------------------------------------------- choosing experiments and methods


def test_only_named_experiments_run(tmp_path, sentiment_model):
    body = f"""
[[experiments]]
name = "second"
model = "{sentiment_model}"
dataset = "sst2"
split = "dev"
limit = 3
"""
    config = load_config(write_config(tmp_path, sentiment_model, body=body, methods='["random"]'))
    assert [e.name for e in config.experiments][1] == "second"
    chosen = config.only(["second"])
    assert [e.name for e in chosen.experiments] == ["second"]
    with pytest.raises(InvalidInputError, match="its experiments: .*second"):
        config.only(["third"])


def test_only_named_methods_run(tmp_path, sentiment_model):
    methods = '[{ name = "random" }, { name = "l2_norm", label = "L2" }]'
    config = load_config(write_config(tmp_path, sentiment_model, methods=methods))
    chosen = config.only_methods(["L2"])
    assert [[m.display for m in e.methods] for e in chosen.experiments] == [["L2"]]
    with ResultStore(tmp_path / "results.sqlite") as store:
        run_bench(chosen, store)
    methods = set(stored(tmp_path / "results.sqlite")["method"])
    assert len(methods) == 1 and "l2_norm" in next(iter(methods))
    with pytest.raises(InvalidInputError, match="its methods: random, L2"):
        config.only_methods(["l2_norm"])


def test_a_contrast_is_checked_where_the_config_is_read(tmp_path):
    from normxlogit.bench.config import load_config
    from normxlogit.common.errors import InvalidInputError

    def config(method: str, dataset: str = "sst2") -> Path:
        path = tmp_path / "grid.toml"
        path.write_text(
            f'metrics = ["comp_cd"]\n[[methods]]\n{method}\n'
            f'[[experiments]]\nmodel = "minilm-sst2"\ndataset = "{dataset}"\n'
        )
        return path

    loaded = load_config(config('name = "normxlogit"\ncontrast = "negative"'))
    (spec,) = loaded.experiments[0].methods
    assert spec.contrast == "negative" and '"contrast"' in spec.key
    with pytest.raises(InvalidInputError, match="nothing to contrast"):
        load_config(config('name = "attention"\ncontrast = "negative"'))
    with pytest.raises(InvalidInputError, match="contrast must be"):
        load_config(config('name = "normxlogit"\ncontrast = ""'))
    with pytest.raises(InvalidInputError, match="generation data set does not give"):
        load_config(config('name = "normxlogit"\ncontrast = "x"', dataset="tellmewhy"))


def test_a_metrics_revision_keys_its_stored_values():
    """A metric whose definition changed under the same settings (its ``revision``) is
    stored under a new key, so values of the old definition are computed again; others
    keep theirs."""
    from types import SimpleNamespace

    from normxlogit.bench.runner import protocol_keys
    from normxlogit.sanity.metrics import SanitySpearman

    experiment = SimpleNamespace(
        protocol={}, metrics=["sanity_spearman", "comp_cd"], generation=False, evaluate_every=1
    )
    keys = protocol_keys(experiment)
    assert SanitySpearman.revision >= 1
    assert f'"revision":{SanitySpearman.revision}' in keys["sanity_spearman"].replace(" ", "")
    assert "revision" not in keys["comp_cd"]
