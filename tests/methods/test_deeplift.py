"""DeepLift follows every nonlinearity of BERT- and LLaMA-like models with its rule.

The reference implementation here is written independently of the method: it runs a
one-layer model by hand, forward, carrying for every tensor its value at the input, its
value at the reference (zero word embeddings) and each embedding unit's share of the
change, and applies each rule as an explicit ``Δout/Δin``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import transformers as T

import normxlogit
from normxlogit.common.errors import UnsupportedModelError
from normxlogit.methods import deeplift
from normxlogit.methods.deeplift import deeplift_attributions, norm_rule, softmax_rule
from normxlogit.methods.gradient import reading_output, word_embeddings

from ..conftest import (
    assert_padding_sides_agree,
    explainable,
    fresh_tokenizer,
    tokenizer,
)

TEXTS = ["a gripping film that never lets go", "dull", "it is what it is , and fine"]


class Flow:
    """A tensor at the input (``x``) and at the reference (``r``), and ``parts[p]``: the
    share of the change ``x - r`` owed to embedding unit ``p`` (the shares add up to it)."""

    def __init__(self, x: torch.Tensor, r: torch.Tensor, parts: torch.Tensor):
        self.x, self.r, self.parts = x, r, parts

    def map(self, linear) -> Flow:
        """A linear map acting on the trailing dimensions (no constant term)."""
        return Flow(linear(self.x), linear(self.r), linear(self.parts))

    def affine(self, layer: torch.nn.Linear) -> Flow:
        bias = layer.bias
        return Flow(
            F.linear(self.x, layer.weight, bias),
            F.linear(self.r, layer.weight, bias),
            F.linear(self.parts, layer.weight),
        )

    def plus(self, constant: torch.Tensor) -> Flow:
        return Flow(self.x + constant, self.r + constant, self.parts)

    def __add__(self, other: Flow) -> Flow:
        return Flow(self.x + other.x, self.r + other.r, self.parts + other.parts)


def start(embeds: torch.Tensor) -> Flow:
    """Word embeddings ``[T, D]`` against zero: unit ``p`` owns its own change."""
    parts = torch.diag(embeds.flatten()).reshape(embeds.numel(), *embeds.shape)
    return Flow(embeds, torch.zeros_like(embeds), parts)


def secant(f, x: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """``(f(x) - f(r)) / (x - r)``; the derivative where ``x == r``."""
    with torch.enable_grad():
        point = x.detach().clone().requires_grad_(True)
        (slope,) = torch.autograd.grad(f(point).sum(), point)
    same = x == r
    return torch.where(same, slope, (f(x) - f(r)) / torch.where(same, 1.0, x - r))


def elementwise(f, a: Flow) -> Flow:
    """The rescale rule."""
    return Flow(f(a.x), f(a.r), a.parts * secant(f, a.x, a.r))


def product(a: Flow, b: Flow, op) -> Flow:
    """Shapley split of a bilinear operation."""
    parts = op(a.parts, (b.x + b.r) / 2) + op((a.x + a.r) / 2, b.parts)
    return Flow(op(a.x, b.x), op(a.r, b.r), parts)


def softmax(z: Flow, allowed: torch.Tensor) -> Flow:
    """exp(z - lse z): rescale on exp; lse at the mix of p and p0 that reproduces Δlse."""
    x = z.x.masked_fill(~allowed, float("-inf"))
    r = z.r.masked_fill(~allowed, float("-inf"))
    p, p0 = x.softmax(-1), r.softmax(-1)
    step = torch.where(allowed, x.log_softmax(-1) - r.log_softmax(-1), 0.0)
    slope = torch.where(step == 0, p, (p - p0) / torch.where(step == 0, 1.0, step))
    change = torch.where(allowed, z.x - z.r, 0.0)
    shift = x.logsumexp(-1, keepdim=True) - r.logsumexp(-1, keepdim=True)
    high, low = (p * change).sum(-1, keepdim=True), (p0 * change).sum(-1, keepdim=True)
    gap = high - low  # zero where a row has one allowed entry: then lam does not matter
    lam = torch.where(gap == 0, 0.5, (shift - low) / torch.where(gap == 0, 1.0, gap))
    assert bool(((lam >= -1e-9) & (lam <= 1 + 1e-9)).all())
    weights = lam * p + (1 - lam) * p0
    parts = torch.where(allowed, z.parts, 0.0)
    parts = slope * (parts - (weights * parts).sum(-1, keepdim=True))
    return Flow(p, p0, parts)


def norm(a: Flow, weight, bias, eps: float, centre: bool) -> Flow:
    """u * (mean(u²)+eps)^-1/2: the vector's change at the input's scale, the scale's change
    (rescale through the square and the inverse square root) at the reference vector."""
    u = a.map(lambda t: t - t.mean(-1, keepdim=True)) if centre else a
    variance = elementwise(torch.square, u).map(lambda t: t.mean(-1, keepdim=True))
    scale = elementwise(lambda t: torch.rsqrt(t + eps), variance)
    normed = Flow(u.x * scale.x, u.r * scale.r, scale.x * u.parts + u.r * scale.parts)
    out = normed.map(lambda t: t * weight)
    return out if bias is None else out.plus(bias)


def heads(count: int):
    return lambda t: t.unflatten(-1, (count, -1)).transpose(-3, -2)


def merge(t: torch.Tensor) -> torch.Tensor:
    return t.transpose(-3, -2).flatten(-2)


def attention(q: Flow, k: Flow, v: Flow, allowed: torch.Tensor) -> Flow:
    size = q.x.shape[-1]
    scores = product(q, k.map(lambda t: t.transpose(-1, -2)), torch.matmul)
    weights = softmax(scores.map(lambda t: t * size**-0.5), allowed)
    return product(weights, v, torch.matmul).map(merge)


def hand_bert(network, ids, types) -> Flow:
    """A one-layer BERT classifier, by hand: logits ``[C]`` and their parts ``[P, C]``."""
    bert = network.bert
    emb, layer = bert.embeddings, bert.encoder.layer[0]
    count = len(ids)
    constant = emb.position_embeddings.weight[:count] + emb.token_type_embeddings.weight[types]
    ln = emb.LayerNorm
    h = norm(
        start(emb.word_embeddings.weight[ids]).plus(constant), ln.weight, ln.bias, ln.eps, True
    )
    mixer = layer.attention.self
    split = heads(mixer.num_attention_heads)
    q, k, v = (h.affine(lin).map(split) for lin in (mixer.query, mixer.key, mixer.value))
    mixed = attention(q, k, v, torch.ones(count, count, dtype=torch.bool))
    out = layer.attention.output
    ln = out.LayerNorm
    h = norm(mixed.affine(out.dense) + h, ln.weight, ln.bias, ln.eps, True)
    inner = elementwise(F.gelu, h.affine(layer.intermediate.dense))
    ln = layer.output.LayerNorm
    h = norm(inner.affine(layer.output.dense) + h, ln.weight, ln.bias, ln.eps, True)
    pooled = elementwise(torch.tanh, h.map(lambda t: t[..., 0, :]).affine(bert.pooler.dense))
    return pooled.affine(network.classifier)


def hand_llama(network, ids) -> Flow:
    """A one-layer LLaMA language model, by hand: last-position logits and their parts."""
    from transformers.models.llama.modeling_llama import rotate_half

    base = network.model
    layer, count = base.layers[0], len(ids)
    embeds = base.embed_tokens.weight[ids]
    cos, sin = base.rotary_emb(embeds[None], torch.arange(count)[None])

    def rms(a: Flow, module) -> Flow:
        return norm(a, module.weight, None, module.variance_epsilon, False)

    def rope(t):
        return t * cos[0] + rotate_half(t) * sin[0]

    config = network.config
    query_heads, kv_heads = config.num_attention_heads, config.num_key_value_heads

    def repeat(t):
        return t.repeat_interleave(query_heads // kv_heads, dim=-3)

    h = start(embeds)
    n = rms(h, layer.input_layernorm)
    mixer = layer.self_attn
    q = n.affine(mixer.q_proj).map(heads(query_heads)).map(rope)
    k = n.affine(mixer.k_proj).map(heads(kv_heads)).map(rope).map(repeat)
    v = n.affine(mixer.v_proj).map(heads(kv_heads)).map(repeat)
    causal = torch.ones(count, count, dtype=torch.bool).tril()
    h = attention(q, k, v, causal).affine(mixer.o_proj) + h
    n = rms(h, layer.post_attention_layernorm)
    mlp = layer.mlp
    gated = product(elementwise(F.silu, n.affine(mlp.gate_proj)), n.affine(mlp.up_proj), torch.mul)
    h = gated.affine(mlp.down_proj) + h
    last = rms(h, base.norm).map(lambda t: t[..., -1, :])
    return last.affine(network.lm_head)


def tiny(config, cls):
    torch.manual_seed(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        network = cls(config).eval().double()  # float64: the comparison is not blurred
    return normxlogit.load((network, fresh_tokenizer()))


SIZES = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=24)


def method_attributions(model, text: str, column: int) -> torch.Tensor:
    batch = model.encode([text])
    (result,) = [a for a, _ in deeplift_attributions(model, batch, torch.tensor([[column]]))]
    return result[0]


def test_matches_a_hand_computed_deeplift_on_a_one_layer_bert():
    config = T.BertConfig(vocab_size=len(tokenizer()), num_labels=3, initializer_range=0.5, **SIZES)
    model = tiny(config, T.BertForSequenceClassification)
    text = "a gripping film"
    batch = model.encode([text])
    with torch.no_grad():
        logits = hand_bert(model.model, batch.input_ids[0], batch.token_type_ids[0])
    torch.testing.assert_close(logits.x, model.forward(batch).logits[0])
    for label in range(3):
        expected = logits.parts[:, label].reshape(batch.input_ids.shape[1], -1)
        torch.testing.assert_close(
            expected.sum(), logits.x[label] - logits.r[label], atol=1e-10, rtol=0
        )
        got = method_attributions(model, text, label)
        torch.testing.assert_close(
            got, expected, atol=1e-6 * float(expected.abs().max()), rtol=1e-5
        )


def test_matches_a_hand_computed_deeplift_on_a_one_layer_llama():
    config = T.LlamaConfig(
        vocab_size=len(tokenizer()),
        num_key_value_heads=1,  # grouped-query attention
        max_position_embeddings=64,
        pad_token_id=0,
        initializer_range=0.5,
        **SIZES,
    )
    model = tiny(config, T.LlamaForCausalLM)
    text = "a gripping film"
    batch = model.encode([text])
    with torch.no_grad():
        logits = hand_llama(model.model, batch.input_ids[0])
    # the model's RMSNorm computes in float32, hence the looser comparisons here
    torch.testing.assert_close(logits.x, model.forward(batch).logits[0], atol=1e-5, rtol=1e-5)
    for column in (int(logits.x.argmax()), int(logits.x.argmin()), 2143):
        expected = logits.parts[:, column].reshape(batch.input_ids.shape[1], -1)
        got = method_attributions(model, text, column)
        torch.testing.assert_close(
            got, expected, atol=1e-5 * float(expected.abs().max()), rtol=1e-5
        )


COMPLETE = [
    ("bert", "classification"),
    ("roberta", "regression"),
    ("deberta-v2", "classification"),  # eager attention: bmm, division, functional softmax
    ("distilbert", "masked_lm"),
    ("mpnet", "classification"),
    ("gpt2", "causal_lm"),  # tanh-GELU module, Conv1D (addmm)
    ("llama", "causal_lm"),
    ("gemma", "causal_lm"),  # RMSNorm with (1 + weight), tanh-GELU gate
    ("phi", "causal_lm"),  # partial rotary, LayerNorm
]


def _texts(model):
    if model.task.kind.value == "masked_lm":
        return ["a gripping [MASK] film", "[MASK] dull", "it is what it is , [MASK] fine"]
    return TEXTS


@pytest.mark.parametrize(("family", "head"), COMPLETE)
def test_attributions_add_up_to_the_change_of_the_output(family, head):
    """Summation-to-delta: sum of a text's attributions = f(x) - f(zero embeddings)."""
    model = explainable(family, head)
    texts = _texts(model)
    batch = model.encode(texts)
    function, extra = reading_output(model, batch)
    embeds = word_embeddings(model, batch)
    with torch.no_grad():
        change = function(embeds, *extra) - function(torch.zeros_like(embeds), *extra)
    target = "all" if not model.task.over_vocabulary else None
    results = model.explain(texts, method="deeplift", reduce="sum", target=target)
    for row, result in enumerate(results):
        scores = np.asarray(result.scores).reshape(len(result.tokens), -1)
        if target is None:  # the predicted token
            wanted = change[row, model.forward(batch).logits[row].argmax()].reshape(1)
        else:
            wanted = change[row]
        np.testing.assert_allclose(scores.sum(0), wanted.numpy(), atol=1e-5, rtol=1e-5)
        delta = np.asarray(result.diagnostics["convergence_delta"])
        assert np.abs(delta).max() < 1e-5


@pytest.mark.parametrize(("family", "head"), [("bert", "classification"), ("llama", "causal_lm")])
def test_differs_from_gradient_x_input(family, head):
    """With every nonlinearity linearised at the input, DeepLift would be gradient x input."""
    model = explainable(family, head)
    for text in TEXTS[:2]:
        deeplift = np.asarray(model.explain(text, method="deeplift", reduce="sum").scores)
        plain = np.asarray(model.explain(text, method="gradient_x_input", reduce="sum").scores)
        assert np.abs(deeplift - plain).max() > 0.05 * np.abs(plain).max()


@pytest.mark.parametrize(
    ("family", "head"),
    [("bert", "classification"), ("llama", "causal_lm")],
)
def test_same_scores_alone_and_in_a_padded_batch(family, head):
    assert_padding_sides_agree(family, head, TEXTS, method="deeplift", target=0, atol=1e-5)
    model = explainable(family, head)
    together = model.explain(TEXTS, method="deeplift", target=0)
    for text, joint in zip(TEXTS, together, strict=True):
        alone = model.explain(text, method="deeplift", target=0)
        np.testing.assert_allclose(alone.scores, joint.scores, rtol=1e-4, atol=1e-6)


def test_softmax_rule_is_exact_bounded_and_blind_to_shifts():
    torch.manual_seed(0)
    z0 = torch.randn(4, 7, dtype=torch.float64)
    z = (z0 + 40 * torch.randn(4, 7, dtype=torch.float64)).requires_grad_(True)
    p = softmax_rule(z, z0, -1)
    torch.testing.assert_close(p, z.detach().softmax(-1))
    for i in range(7):
        (slope,) = torch.autograd.grad(p[:, i].sum(), z, retain_graph=True)
        assert bool(torch.isfinite(slope).all()) and float(slope.abs().max()) < 1
        # summation-to-delta, and a shift of all logits contributes nothing
        change = p.detach()[:, i] - z0.softmax(-1)[:, i]
        torch.testing.assert_close((slope * (z.detach() - z0)).sum(-1), change)
        torch.testing.assert_close(slope.sum(-1), torch.zeros(4, dtype=torch.float64))


def test_norm_rule_from_zero_is_the_linearisation_at_the_input_scale():
    torch.manual_seed(0)
    x = torch.randn(3, 8, dtype=torch.float64, requires_grad=True)
    weight = torch.rand(8, dtype=torch.float64) + 0.5
    value = F.rms_norm(x.detach(), (8,), weight, 1e-6)
    y = norm_rule(x, torch.zeros_like(x), (-1,), 1e-6, False, weight, lambda: value)
    (slope,) = torch.autograd.grad(y.sum(), x)
    scale = torch.rsqrt(x.detach().square().mean(-1, keepdim=True) + 1e-6)
    torch.testing.assert_close(slope, weight * scale.expand_as(x))


def test_leaves_the_model_as_it_was():
    model = explainable("llama", "causal_lm")

    def state():
        flags = [p.requires_grad for p in model.model.parameters()]
        hooks = [(len(m._forward_hooks), len(m._forward_pre_hooks)) for m in model.model.modules()]
        return flags, hooks

    before = state()
    model.explain(TEXTS[0], method="deeplift")
    assert state() == before


def test_refuses_attention_it_cannot_see(monkeypatch):
    """Attention kernels outside torch (flash attention) are invisible to the tracer."""
    monkeypatch.setattr(deeplift, "_TRACEABLE_ATTENTION", ("eager",))  # as if sdpa were one
    model = explainable("llama", "causal_lm")
    with pytest.raises(UnsupportedModelError, match="attn_implementation='sdpa'"):
        model.explain(TEXTS[0], method="deeplift")
