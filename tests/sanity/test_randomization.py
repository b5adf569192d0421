"""Sanity checks: parameter groups, restored weights, and similarities that mean what
they say."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from normxlogit.common.errors import InvalidInputError
from normxlogit.metrics import spearman, top_k_overlap
from normxlogit.sanity import (
    data_randomization,
    parameter_groups,
    parameter_randomization,
    randomized,
)

from ..conftest import build_model, explainable

TEXTS = ["a gripping film that never lets go", "dull and slow", "fine, if a little long"]


def test_groups_run_from_the_head_down_and_cover_every_weight():
    for family, head in (("bert", "classification"), ("llama", "causal_lm")):
        model = explainable(family, head)
        groups = parameter_groups(model)
        names = [group.name for group in groups]
        assert names == ["head", "block 1", "block 0", "embeddings"]
        covered = {id(p) for group in groups for p in group.parameters()}
        assert covered == {id(p) for p in model.model.parameters()}


def test_randomised_weights_are_restored_even_after_an_error():
    model = explainable("bert", "classification")
    before = {name: p.detach().clone() for name, p in model.model.named_parameters()}
    groups = parameter_groups(model)
    with pytest.raises(RuntimeError), randomized(model, groups[:2], seed=0):
        changed = model.model.classifier.weight
        assert not torch.equal(changed, before["classifier.weight"])
        raise RuntimeError("stop")
    for name, parameter in model.model.named_parameters():
        assert torch.equal(parameter, before[name]), name


def test_a_cascading_step_keeps_the_earlier_groups_draws():
    """Step i is step i - 1 with one more group random (Adebayo et al.; Quantus): a group's
    draw depends on the seed and the group, not on which groups are random beside it."""
    model = explainable("bert", "classification")
    groups = parameter_groups(model)
    drawn = []
    for step in range(len(groups)):
        with randomized(model, groups[: step + 1], seed=3):
            drawn.append({n: p.detach().clone() for n, p in model.model.named_parameters()})
    with randomized(model, groups[2:3], seed=3):  # independent: the same draw for block 0
        alone = {n: p.detach().clone() for n, p in model.model.named_parameters()}
    block_0 = [n for n, _ in model.model.named_parameters() if ".layer.0." in n]
    head = [n for n, _ in model.model.named_parameters() if n.startswith("classifier")]
    for later in drawn[1:]:
        for name in head:
            assert torch.equal(later[name], drawn[0][name]), name
    for name in block_0:
        assert torch.equal(drawn[3][name], drawn[2][name]) and torch.equal(
            alone[name], drawn[2][name]
        )
    with randomized(model, groups[:1], seed=4):  # another seed, another draw
        assert not torch.equal(model.model.classifier.weight, drawn[0]["classifier.weight"])


def test_a_loaded_model_is_randomised_too(tiny_classifier):
    """transformers marks the tensors it loads as initialised, and its init functions skip
    them; the randomisation lifts the mark, and puts it back."""
    import normxlogit

    model = normxlogit.load(tiny_classifier)
    groups = parameter_groups(model)
    weight = model.blocks[-1].attention.self.query.weight
    before = weight.detach().clone()
    with randomized(model, groups[:2], seed=0):
        assert not torch.equal(weight, before)
    assert torch.equal(weight, before)


def test_similarities_by_hand():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]))
    assert top_k_overlap([5, 4, 3, 2, 1], [1, 4, 5, 2, 3], k=2) == 0.5
    with pytest.raises(InvalidInputError, match="same tokens"):
        spearman([1, 2], [1, 2, 3])


@pytest.mark.parametrize("mode", ["cascading", "independent"])
def test_random_scores_ignore_the_model_and_normxlogit_follows_it(mode):
    model = explainable("bert", "classification")
    result = parameter_randomization(model, TEXTS, ["normxlogit", "random"], mode=mode, top_k=3)
    frame = result.frame
    assert set(frame["randomized"]) == {"head", "block 1", "block 0", "embeddings"}
    assert len(frame) == 2 * 4 * len(TEXTS)
    random = frame[frame["method"] == "random"]
    # the random baseline draws from the token ids alone: the same at every step
    assert random["spearman"].eq(1.0).all() and random["top_k"].dropna().eq(1.0).all()
    assert random["top_k"].isna().sum() == 4  # "dull and slow": 3 tokens, k = 3: n/a
    normx = frame[frame["method"] == "normxlogit"]
    assert normx["spearman"].lt(0.999).any()  # the head's weights change LogAt
    verdicts = result.verdicts().set_index("method")
    assert not verdicts.loc["random", "passes"]
    assert result.summary()["step"].nunique() == 4


def test_the_plot_is_a_png(tmp_path):
    model = explainable("bert", "classification")
    result = parameter_randomization(model, TEXTS[:2], ["normxlogit", "random"])
    path = result.plot(tmp_path / "sanity.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    result.save(tmp_path / "sanity.csv")
    assert (tmp_path / "sanity.csv").read_text().startswith("method,mode,step")


def test_data_randomisation_compares_two_models_of_one_tokenizer():
    model = explainable("bert", "classification")
    import normxlogit

    from ..conftest import tokenizer

    other = normxlogit.load((build_model("bert", "classification", seed=1), tokenizer()))
    result = data_randomization(model, other, TEXTS, ["gradient_x_input", "random"])
    frame = result.frame
    assert set(frame["mode"]) == {"data"}
    assert frame[frame["method"] == "random"]["spearman"].eq(1.0).all()
    assert frame[frame["method"] == "gradient_x_input"]["spearman"].lt(0.999).any()


def test_a_model_that_shares_its_layers_is_refused():
    model = explainable("albert", "classification")
    with pytest.raises(Exception, match="shares its weights"):
        parameter_groups(model)


def test_the_metric_family_runs_in_evaluate_and_equals_the_sanity_run():
    import normxlogit

    model = explainable("bert", "classification")
    explained = {m: model.explain(TEXTS, m) for m in ("normxlogit", "random")}
    result = normxlogit.evaluate(model, explained, ["sanity_spearman", "sanity_top_k"])
    frame = result.frame
    direct = parameter_randomization(model, TEXTS, ["normxlogit", "random"], top_k=5).frame
    for metric, column in (("sanity_spearman", "spearman"), ("sanity_top_k", "top_k")):
        rows = frame[frame["metric"] == metric].sort_values(["method", "x", "instance"])
        expected = direct.sort_values(["method", "step", "instance"])
        np.testing.assert_allclose(
            rows["value"].to_numpy(), expected[column].to_numpy(), atol=1e-6, equal_nan=True
        )
    summary = result.summary()
    assert summary is not None
    independent = normxlogit.evaluate(
        model,
        explained,
        ["sanity_spearman"],
        protocol=normxlogit.Protocol(randomization="independent"),
    )
    assert independent.frame["x"].nunique() == 4
    with pytest.raises(InvalidInputError, match="randomization"):
        normxlogit.Protocol(randomization="sometimes")


def test_shuffled_labels_keep_the_texts_and_the_label_counts():
    import random

    from normxlogit.data import Example
    from normxlogit.training import check_recipe, shuffled_labels

    examples = [Example(f"text {i}", i % 3) for i in range(30)]
    mixed = shuffled_labels(examples, random.Random(0))
    assert [e.text for e in mixed] == [e.text for e in examples]
    assert sorted(e.label for e in mixed) == sorted(e.label for e in examples)
    assert [e.label for e in mixed] != [e.label for e in examples]
    assert check_recipe("minilm-sst2", {"shuffle_labels": True}).shuffle_labels
