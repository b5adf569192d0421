"""Forward passes sized by tokens: texts bucketed by length, rows packed shortest first,
every pass trimmed to its longest row, fixed routing's maps shared and bounded. None of it
may change a score."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit.evaluation import Protocol
from normxlogit.evaluation.context import ExplanationSet
from normxlogit.evaluation.evaluate import length_buckets
from normxlogit.evaluation.runner import PerturbationRunner
from normxlogit.model import routing
from tests.conftest import build_model, explainable, fresh_tokenizer, sharp_model

TEXTS = [
    "an awful, boring mess of a movie that never ends and never cares",
    "dull plot",
    "the film was a quiet and lovely surprise",
    "fine",
    "a warm, funny and clever film about two old friends",
]
HARD = ["comp_cd", "suff_cd", "deletion", "insertion"]
SOFT = ["soft_ns", "pi_soft_nc", "pi_soft_ns"]
PROTOCOL = Protocol(samples=3, pis=(0.2, 0.5, 0.8), ratios=(0.2, 0.5))


def _one_row_at_a_time(model, explanations, protocol):
    """Today's baseline at its most literal: each text alone, one perturbed row a pass."""
    return normxlogit.evaluate(
        model, explanations, HARD + SOFT, protocol=protocol, batch_size=1, rows_per_forward=1
    ).frame


def _packed(model, explanations, protocol, tokens):
    return normxlogit.evaluate(
        model,
        explanations,
        HARD + SOFT,
        protocol=protocol,
        batch_size=len(TEXTS),
        tokens_per_forward=tokens,
    ).frame


def _assert_same_cells(alone, packed):
    columns = ["metric", "method", "instance", "x"]
    assert alone[columns].equals(packed[columns])  # the same cells, in the same order
    soft = alone["metric"].isin(SOFT).to_numpy()
    hard_a, hard_p = alone["value"][~soft], packed["value"][~soft]
    np.testing.assert_allclose(hard_a, hard_p, atol=1e-5)
    # soft metrics divide by the zero baseline's effect, which rounding moves a little on
    # a random tiny model (the batch test's tolerance)
    np.testing.assert_allclose(alone["value"][soft], packed["value"][soft], atol=2e-3)


@pytest.mark.parametrize("routing_kind", ["dynamic", "fixed"])
@pytest.mark.parametrize("tokens", [64, 100_000])
def test_an_encoder_scores_the_same_packed_or_one_row_at_a_time(routing_kind, tokens):
    model = sharp_model()
    explanations = model.explain(TEXTS, method="normxlogit") + model.explain(TEXTS, method="random")
    protocol = PROTOCOL.with_options(routing=routing_kind)
    _assert_same_cells(
        _one_row_at_a_time(model, explanations, protocol),
        _packed(model, explanations, protocol, tokens),
    )


@pytest.mark.parametrize("side", ["right", "left"])
def test_a_decoder_scores_the_same_packed_with_either_padding_side(side):
    tokenizer = fresh_tokenizer()
    tokenizer.padding_side = side
    model = normxlogit.load((build_model("llama", "causal_lm"), tokenizer))
    explanations = model.explain(TEXTS, method="normxlogit")
    protocol = PROTOCOL.with_options(routing="fixed")
    _assert_same_cells(
        _one_row_at_a_time(model, explanations, protocol),
        _packed(model, explanations, protocol, 200),
    )


def test_texts_are_bucketed_by_length_and_results_keep_their_order():
    model = sharp_model()
    explanations = model.explain(TEXTS, method="random")
    buckets = length_buckets(ExplanationSet.build(explanations), 2)
    lengths = [len(e.tokens) for e in explanations]
    assert sorted(i for bucket in buckets for i in bucket) == list(range(len(TEXTS)))
    # shortest two, next two, the longest: each bucket's texts no longer than the next's
    for before, after in zip(buckets, buckets[1:], strict=False):
        assert max(lengths[i] for i in before) <= min(lengths[i] for i in after)
    frame = normxlogit.evaluate(model, explanations, ["comp_cd"], batch_size=2).frame
    assert frame["instance"].tolist() == sorted(frame["instance"].tolist())


def test_a_pass_holds_the_token_budget_and_every_row_once():
    model = sharp_model()
    batch = model.encode(TEXTS)
    runner = PerturbationRunner(model, batch, tokens_per_forward=50)
    source = torch.arange(len(TEXTS)).repeat_interleave(7)
    passes = runner.plan(source)
    rows = torch.cat(passes).sort().values
    assert torch.equal(rows, torch.arange(len(source)))
    widths = [runner.width(t) for t in range(len(TEXTS))]
    for chosen in passes:
        width = max(widths[t] for t in source[chosen].tolist())
        assert len(chosen) == 1 or len(chosen) * width <= 50
    # shortest texts first, a text's rows in their own order
    firsts = [widths[int(source[c[0]])] for c in passes]
    assert firsts == sorted(firsts)
    capped = PerturbationRunner(model, batch, rows_per_forward=3, tokens_per_forward=10**6)
    assert max(len(c) for c in capped.plan(source)) == 3


def test_a_pass_mixing_lengths_stops_before_a_tenth_is_padding():
    model = sharp_model()
    texts = ["fine", "a long and winding story about two old friends who never meet"]
    batch = model.encode(texts)
    runner = PerturbationRunner(model, batch, tokens_per_forward=10**6)
    source = torch.tensor([0] * 5 + [1] * 5)
    passes = runner.plan(source)
    assert [sorted(source[p].tolist()) for p in passes] == [[0] * 5, [1] * 5]
    short, long = runner.width(0), runner.width(1)
    assert 10 * long > 1.1 * 5 * (short + long)  # together they would pad more than 10%


def test_the_default_budget_depends_on_the_device():
    from normxlogit.evaluation.runner import default_tokens_per_forward

    assert default_tokens_per_forward(torch.device("cpu")) == 4096
    assert default_tokens_per_forward(torch.device("cuda")) == 65536
    with pytest.raises(normxlogit.InvalidInputError, match="tokens_per_forward"):
        normxlogit.evaluate(sharp_model(), sharp_model().explain(TEXTS[:1]), tokens_per_forward=0)


def test_grouped_replay_equals_maps_gathered_per_row():
    """One map per text broadcast over its rows gives what a copy per row gives."""
    model = explainable("llama", "causal_lm")
    batch = model.encode(TEXTS[:2])
    inputs = model.backbone_inputs(batch)
    maps = routing.clean_attention(model, **inputs)
    rows = torch.tensor([0, 0, 0, 1, 1])
    embeds = model.model.get_input_embeddings()(batch.input_ids)[rows]
    embeds = embeds * (
        torch.rand(embeds.shape[:2], generator=torch.Generator().manual_seed(0)) > 0.3
    ).unsqueeze(-1)
    rest = {k: v[rows] for k, v in inputs.items() if k != "input_ids"}
    with torch.no_grad():
        with routing.replayed_attention(model, routing.expand_rows(maps, rows)):
            gathered = model.run_backbone(inputs_embeds=embeds, **rest).last_hidden_state
        with routing.replayed_attention(model, maps, [(0, 3), (3, 5)]):
            grouped = model.run_backbone(inputs_embeds=embeds, **rest).last_hidden_state
    torch.testing.assert_close(grouped, gathered, atol=1e-6, rtol=1e-5)


def test_fixed_routing_holds_maps_within_its_budget_at_1024_tokens(monkeypatch):
    """A 1,024-token text under fixed routing: the maps replayed in a pass stay within the
    stated budget (one text's maps: layers x heads x 1024^2 entries, never one per row),
    and a budget that admits several texts gives the same scores."""
    import transformers as T

    from tests.conftest import DECODER, tokenizer

    config = T.LlamaConfig(
        vocab_size=len(tokenizer()), pad_token_id=0, **{**DECODER, "max_position_embeddings": 1100}
    )
    torch.manual_seed(0)
    long_tokenizer = fresh_tokenizer()
    long_tokenizer.model_max_length = 1100
    model = normxlogit.load((T.LlamaForCausalLM(config).eval(), long_tokenizer))
    long_text = " ".join(["good"] * 1022)  # with [CLS] and [SEP]: 1,024 tokens
    texts = [long_text, "a short one"]
    explanations = model.explain(texts, method="random")
    assert len(explanations[0].tokens) == 1024
    one_map = model.num_layers * 2 * 1024 * 1024  # layers x heads x 1024^2
    seen = []
    original = routing.replayed_attention

    def recording(model, weights, groups=None):
        seen.append(sum(w.numel() for w in weights))
        return original(model, weights, groups)

    monkeypatch.setattr("normxlogit.evaluation.runner.replayed_attention", recording)
    protocol = Protocol(samples=2, pis=(0.5,), routing="fixed")
    budget = one_map + 1  # room for one 1024-token text's maps at a time
    monkeypatch.setattr("normxlogit.evaluation.runner.MAP_ENTRIES_PER_FORWARD", budget)
    tight = normxlogit.evaluate(model, explanations, ["pi_soft_ns"], protocol=protocol).frame
    assert seen and max(seen) <= budget
    monkeypatch.setattr("normxlogit.evaluation.runner.MAP_ENTRIES_PER_FORWARD", 2**40)
    loose = normxlogit.evaluate(model, explanations, ["pi_soft_ns"], protocol=protocol).frame
    np.testing.assert_allclose(tight["value"], loose["value"], atol=1e-5)


def test_the_guides_packing_example_runs():
    """docs/guide/evaluating.md, "How the perturbed copies run": its block, as written."""
    import re
    from pathlib import Path

    guide = (Path(__file__).parents[2] / "docs/guide/evaluating.md").read_text()
    section = guide[guide.index("**How the perturbed copies run.**") :]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    model = sharp_model()
    namespace = {"normxlogit": normxlogit, "model": model, "explanations": model.explain(TEXTS)}
    exec(block, namespace)
    assert len(namespace["fast"].frame) == len(TEXTS) * 9
