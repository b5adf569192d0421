"""The ``quantus-mprt`` preset equals Quantus 0.6.0's MPRT, step by step.

The reference (``data/quantus-mprt-minilm-sst2.json``) was made by Quantus itself, in an
environment of its own (``scripts/quantus_reference.py``): its ``MPRT`` with seed 42 and
its defaults, on ``minilm-sst2``, explaining with gradient x input summed over the hidden
dimension; the file's header says how.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit.common.errors import InvalidInputError
from normxlogit.model.targets import output_column
from normxlogit.sanity import (
    module_units,
    parameter_randomization,
    randomized,
    sanity_definition,
)

from ..conftest import explainable

DATA = Path(__file__).parent / "data" / "quantus-mprt-minilm-sst2.json"
MODES = {"top_down": "cascading", "independent": "independent"}


@functools.cache
def reference() -> dict:
    return json.loads(DATA.read_text())


@functools.cache
def minilm():
    return normxlogit.load(reference()["model"])


@pytest.mark.real
@pytest.mark.parametrize("order", list(MODES))
def test_the_preset_equals_quantus_at_every_step(order):
    data = reference()
    runs = [run for run in data["runs"] if run["layer_order"] == order]
    model = minilm()
    items = {item["text"]: item for item in data["items"]}
    for run in runs:  # the same ids and targets as Quantus was given
        assert model.encode([run["text"]]).input_ids[0].tolist() == items[run["text"]]["input_ids"]
    method = {"gxi": normxlogit.get_method("gradient_x_input", reduce="sum")}
    result = parameter_randomization(
        model,
        [run["text"] for run in runs],
        method,
        mode=MODES[order],
        preset="quantus-mprt",
        seed=data["seed"],
    )
    frame = result.frame
    for instance, run in enumerate(runs):
        rows = frame[frame["instance"] == instance].sort_values("step")
        assert rows["randomized"].tolist() == run["layers"]
        np.testing.assert_allclose(rows["spearman"], run["similarities"], atol=1e-5, rtol=0)
        averages = result.averages().iloc[instance]
        # Quantus's own mean counts its "original" entry (1) as a layer; ours does not
        assert run["original"] == 1.0
        quantus_mean = np.mean([run["original"], *run["similarities"]])
        assert averages["quantus_mean_spearman"] == pytest.approx(quantus_mean, abs=1e-6)
        assert averages["mean_spearman"] == pytest.approx(np.mean(run["similarities"]), abs=1e-6)
    explained = model.explain([run["text"] for run in runs], method["gxi"])
    targets = [output_column(model, e.targets[0]) for e in explained]
    assert targets == [items[run["text"]]["target"] for run in runs]


def test_quantus_units_are_every_resettable_module_from_the_last():
    model = explainable("llama", "causal_lm")
    units = module_units(model)
    names = [unit.name for unit in units]
    resettable = [n for n, m in model.model.named_modules() if hasattr(m, "reset_parameters")]
    assert names == resettable[::-1]
    assert not any("norm" in name for name in names)  # RMSNorm has no reset_parameters
    bert = explainable("bert", "classification")
    assert len(module_units(bert)) == 4 + 8 * 2 + 2  # embeddings + 2 blocks + pooler, head


def test_reset_parameters_draws_as_quantus_and_restores():
    """``manual_seed(seed + 1)`` then ``reset_parameters``: the same draw for a module
    whatever is random beside it, and the trained weights back afterwards."""
    model = explainable("bert", "classification")
    units = module_units(model)
    head = model.model.classifier
    before = head.weight.detach().clone()
    with randomized(model, units[:1], seed=42, init="reset_parameters"):
        drawn = head.weight.detach().clone()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(43)
        expected = torch.nn.Linear(head.in_features, head.out_features)
    assert torch.equal(drawn, expected.weight)
    with randomized(model, units[:3], seed=42, init="reset_parameters"):
        assert torch.equal(head.weight, drawn)
    assert torch.equal(head.weight, before)


def test_the_settings_combine_and_are_checked():
    quantus = sanity_definition("quantus-mprt", absolute=False)
    assert (quantus.units, quantus.init, quantus.tokens, quantus.absolute) == (
        "modules",
        "reset_parameters",
        "all",
        False,
    )
    assert sanity_definition() == sanity_definition("normxlogit")
    with pytest.raises(InvalidInputError, match="preset"):
        sanity_definition("quantus")
    with pytest.raises(InvalidInputError, match="units"):
        sanity_definition(units="layers")


def test_absolute_and_the_definition_reach_the_metric():
    """The protocol's ``sanity_*`` settings give the metric the numbers the direct run
    gives under the same definition (``sanity_absolute`` included)."""
    model = explainable("bert", "classification")
    texts = ["a gripping film that never lets go", "dull and slow"]
    explained = {"gxi": model.explain(texts, "gradient_x_input", reduce="sum")}
    method = {"gxi": normxlogit.get_method("gradient_x_input", reduce="sum")}
    for changes in ({"absolute": True}, {"units": "modules", "tokens": "all"}):
        definition = sanity_definition(**changes)
        protocol = normxlogit.Protocol(**definition.protocol_options())
        frame = normxlogit.evaluate(model, explained, ["sanity_spearman"], protocol=protocol).frame
        direct = parameter_randomization(model, texts, method, **changes).frame
        rows = frame.sort_values(["x", "instance"])
        expected = direct.sort_values(["step", "instance"])
        np.testing.assert_allclose(rows["value"], expected["spearman"], atol=1e-6, equal_nan=True)
    signed = parameter_randomization(model, texts, method).frame["spearman"]
    magnitudes = parameter_randomization(model, texts, method, absolute=True).frame["spearman"]
    assert not np.allclose(signed, magnitudes, equal_nan=True)


def test_default_sanity_settings_keep_the_stored_keys():
    """Values stored before the definition settings existed keep their key; a changed
    definition is keyed apart."""
    from types import SimpleNamespace

    from normxlogit.bench.runner import protocol_keys

    def key(protocol):
        experiment = SimpleNamespace(
            protocol=protocol, metrics=["sanity_spearman"], generation=False, evaluate_every=1
        )
        return protocol_keys(experiment)["sanity_spearman"]

    assert "sanity_units" not in key({})
    assert key({}) == key({"sanity_absolute": False})
    quantus = sanity_definition("quantus-mprt").protocol_options()
    assert "sanity_units" in key(quantus) and key(quantus) != key({})
