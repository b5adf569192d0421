"""Scale (issue 28): attention read block by block, half precision, its keys in a store."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace

import numpy as np
import pytest
import torch
import transformers as T
from scipy.stats import spearmanr

import normxlogit
from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.bench.engines import LocalEngine
from normxlogit.bench.model_refs import model_ref, split_model_ref
from normxlogit.common.errors import InvalidInputError, InvalidOptionError
from normxlogit.methods import Layers, get_method
from normxlogit.methods.mixing import LayerMapReader, layer_maps
from normxlogit.model.precision import dtype_name, precision_settings, resolve_dtype

from ..conftest import (
    DECODER,
    assert_padding_sides_agree,
    build_model,
    explainable,
    fresh_tokenizer,
    tokenizer,
)
from .helpers import run_cli, write_config


# ------------------------------------------------------------------ map reader
@pytest.mark.parametrize(("rollout", "mean"), [(False, False), (False, True), (True, False)])
@pytest.mark.parametrize("chosen", [(4,), (0, 2, 4), (0,), (1, 3)])
def test_the_reader_fed_block_by_block_equals_the_stacked_reduction(rollout, mean, chosen):
    """Own maps, the mean of blocks 1..l and the rollout product, from maps fed one at a
    time, equal the same reductions over every layer's maps held at once."""
    torch.manual_seed(0)
    maps = torch.rand(2, 4, 5, 5).softmax(-1)
    held: list[torch.Tensor] = [torch.eye(5).expand(2, 5, 5)]
    for layer in range(4):
        block = maps[:, layer]
        if rollout:
            held.append(block @ held[-1])
        elif mean:
            held.append(maps[:, : layer + 1].mean(dim=1))
        else:
            held.append(block)
    expected = torch.stack([held[i] for i in chosen], dim=1)
    reader = LayerMapReader(chosen, rollout, mean)
    for block in maps.unbind(dim=1):
        reader(block)
    torch.testing.assert_close(reader.result(), expected)
    torch.testing.assert_close(layer_maps(maps, Layers(chosen, True), rollout, mean), expected)


def test_the_reader_refuses_layers_it_was_not_fed():
    reader = LayerMapReader((3,), rollout=False)
    reader(torch.eye(3)[None])
    with pytest.raises(ValueError, match=r"layers \[3\] were asked for, but 1 maps were fed"):
        reader.result()


# ------------------------------------------------------------------ bounded memory
def _peak_bytes(run) -> int:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    current = peak = 0
    for event in sorted(prof.events(), key=lambda e: e.time_range.start):
        current += event.self_cpu_memory_usage
        peak = max(peak, current)
    return peak


def _deep_llama(layers: int = 12, heads: int = 4, positions: int = 512):
    torch.manual_seed(0)
    config = T.LlamaConfig(
        vocab_size=len(tokenizer()),
        hidden_size=32,
        intermediate_size=37,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=positions,
        pad_token_id=0,
    )
    return normxlogit.load((T.LlamaForCausalLM(config).eval(), fresh_tokenizer()))


@pytest.mark.parametrize("spec", ["attention", "attention:pi-soft", "attention_rollout"])
def test_attention_holds_one_blocks_weights_not_every_layers(spec):
    """Explaining a 384-token text with 12 layers x 4 heads: every layer's weights together
    are 28 MiB; the methods, reading them block by block, peak below half of that, while
    a pass that returns them all (what transformers' output_attentions does) holds more."""
    model = _deep_llama()
    text = " ".join(["the quiet harbour kept its boats close"] * 60)
    batch = model.encode([text])
    length = batch.input_ids.shape[1]
    assert length >= 380
    every_layer = 12 * 4 * length * length * 4  # float32 [L, H, T, T]
    name, _, preset = spec.partition(":")
    method = get_method(name, preset=preset or None)
    layers = Layers.resolve(None, model.num_layers)

    def explain():
        forward = model.forward(batch, layers.indices, method.attention_reader(layers))
        return method.token_maps(model, forward, layers)

    def held():  # transformers' own output_attentions: every layer's weights at once
        with torch.no_grad(), model.eager_attention():
            inputs = model.backbone_inputs(batch)
            return model.run_backbone(**inputs, output_attentions=True).attentions

    assert _peak_bytes(explain) < every_layer / 2
    assert _peak_bytes(held) > every_layer
    streamed = explain()
    every = model.forward(batch, layers.indices, attentions=True)  # all head means, stacked
    assert every.attentions.shape == (1, 12, length, length)
    reference = get_method(name, preset=preset or None).token_maps(model, every, layers)
    torch.testing.assert_close(streamed, reference, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("preset", [None, "pi-soft"])
def test_a_reading_row_is_computed_alone_beside_sdpa(preset):
    """explain's attention needs the reading position's row only: each layer computes that
    row's weights beside SDPA's output, so the pass holds less than one block's
    [H, T, T]; the scores equal those read from whole eager maps."""
    model = _deep_llama()
    text = " ".join(["the quiet harbour kept its boats close"] * 60)
    length = model.encode([text]).input_ids.shape[1]
    one_block = 4 * length * length * 4
    explained = {}
    peak = _peak_bytes(
        lambda: explained.update(rows=model.explain(text, method="attention", preset=preset))
    )
    assert peak < one_block
    layers = Layers.resolve(None, model.num_layers)
    batch = model.encode([text])
    whole = get_method("attention", preset=preset).token_maps(
        model, model.forward(batch, layers.indices, attentions=True), layers
    )[0, 0, -1]
    np.testing.assert_allclose(explained["rows"].scores, whole.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("family", ["llama", "gpt2", "bert"])
def test_reading_rows_do_not_depend_on_padding(family):
    texts = ["a gripping film that never lets go", "dull", "it is a film about a film"]
    assert_padding_sides_agree(
        family, "classification", texts, method="attention", preset="pi-soft", layer="all"
    )


def _eager_head_means(model, batch) -> torch.Tensor:
    """transformers' own eager weights, every layer's head mean ``[B, L, T, T]``."""
    with torch.no_grad(), model.eager_attention():
        inputs = model.backbone_inputs(batch)
        held = model.run_backbone(**inputs, output_attentions=True).attentions
    return torch.stack([weights.float().mean(dim=1) for weights in held], dim=1)


@pytest.mark.parametrize("family", ["llama", "gpt2", "bert", "qwen2"])
def test_whole_maps_beside_sdpa_equal_transformers_eager_weights(monkeypatch, family):
    """Whole maps (rollout's input) are computed a tile of rows at a time beside SDPA, the
    future keys of a causal tile skipped: on padded and unpadded batches they equal
    transformers' eager weights, and the pass's prediction is unchanged."""
    monkeypatch.setattr("normxlogit.model.routing.MAP_TILE", 3)  # several tiles on tiny texts
    head = "classification"
    model = normxlogit.load((build_model(family, head), fresh_tokenizer()))
    for texts in (["a gripping film that never lets go"], ["a gripping film that never", "dull"]):
        batch = model.encode(texts)
        forward = model.forward(batch, attentions=True)
        torch.testing.assert_close(
            forward.attentions, _eager_head_means(model, batch), rtol=1e-5, atol=1e-6
        )
        torch.testing.assert_close(forward.logits, model.forward(batch).logits)


def test_sdpa_runs_its_causal_kernel_only_on_an_unpadded_causal_mask(monkeypatch):
    """The causal kernel skips the future at half the cost; it must not run where padding
    makes the mask more than causal (the output would attend to padding)."""
    import normxlogit.model.routing as routing

    kernels: list[bool] = []
    sdpa = routing.F.scaled_dot_product_attention

    def spy(*args, **kwargs):
        kernels.append(bool(kwargs.get("is_causal")))
        return sdpa(*args, **kwargs)

    monkeypatch.setattr(routing.F, "scaled_dot_product_attention", spy)
    model = normxlogit.load((build_model("llama", "classification"), fresh_tokenizer()))
    for texts, causal in ((["a gripping film"], True), (["a gripping film", "dull"], False)):
        kernels.clear()
        model.forward(model.encode(texts), attentions=True)
        assert kernels and set(kernels) == {causal}
    encoder = normxlogit.load((build_model("bert", "classification"), fresh_tokenizer()))
    kernels.clear()
    encoder.forward(encoder.encode(["a gripping film"]), attentions=True)
    assert kernels and not any(kernels)


def test_softcapped_attention_still_feeds_the_reader():
    """SDPA cannot softcap scores: such a model's eager weights are handed to the reader."""
    config = T.Gemma2Config(
        vocab_size=len(tokenizer()),
        pad_token_id=0,
        head_dim=16,
        attn_logit_softcapping=5.0,
        **DECODER,
    )
    torch.manual_seed(0)
    model = normxlogit.load((T.Gemma2ForCausalLM(config).eval(), fresh_tokenizer()))
    batch = model.encode(["a gripping film that never lets go"])
    forward = model.forward(batch, attentions=True)
    torch.testing.assert_close(
        forward.attentions, _eager_head_means(model, batch), rtol=1e-5, atol=1e-6
    )
    rows = model.explain("a gripping film that never lets go", method="attention", layer="all")
    whole = forward.attentions[0, :, -1]
    np.testing.assert_allclose(rows.scores[1:], whole.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("spec", ["attention:pi-soft", "attention_rollout"])
def test_architectures_that_do_not_declare_their_attention_modules_fall_back(monkeypatch, spec):
    """Where transformers does not say which module returns the weights, the pass asks
    for every layer's (output_attentions) and feeds them to the reader after: same maps."""
    model = explainable("llama", "causal_lm")
    name, _, preset = spec.partition(":")
    text = "a gripping film that never lets go"
    caught = model.explain(text, method=name, preset=preset or None, layer="all")
    monkeypatch.setattr("normxlogit.model.adapter.attention_slots", lambda *args: None)
    fallen_back = model.explain(text, method=name, preset=preset or None, layer="all")
    np.testing.assert_allclose(caught.scores, fallen_back.scores, rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------ precision
def test_dtype_names_resolve_and_others_are_refused():
    assert resolve_dtype("bf16") is torch.bfloat16
    assert resolve_dtype(torch.float16) is torch.float16
    assert dtype_name("FP32") == "float32"
    assert precision_settings(torch.float32) == {}
    assert precision_settings(torch.bfloat16) == {"dtype": "bfloat16"}
    assert resolve_dtype("double") is torch.float64
    assert precision_settings(torch.float64) == {"dtype": "float64"}
    with pytest.raises(InvalidOptionError, match="dtype 'int8' is not one of: float32, bfloat16"):
        resolve_dtype("int8")
    with pytest.raises(InvalidOptionError, match="not one of"):
        resolve_dtype(torch.int64)


@pytest.mark.parametrize("method", ["normxlogit", "gradient_x_input", "attention"])
def test_a_model_in_bfloat16_explains_close_to_float32_and_says_so(method):
    """bfloat16 keeps 8 bits of mantissa: scores move, the ranking hardly does; the
    explanation records the precision (float32 records nothing: the default)."""
    network = build_model("llama", "classification")
    full = normxlogit.load((network, fresh_tokenizer()))
    text = "a gripping film that never lets go of you and the cast is superb"
    reference = full.explain(text, method=method)
    half = normxlogit.load(
        (build_model("llama", "classification"), fresh_tokenizer()), dtype="bfloat16"
    )
    assert half.dtype is torch.bfloat16
    explained = half.explain(text, method=method)
    assert explained.settings["dtype"] == "bfloat16"
    assert "dtype" not in reference.settings
    assert explained.scores.dtype == np.float32 and np.isfinite(explained.scores).all()
    assert spearmanr(reference.scores, explained.scores).statistic > 0.9
    assert not np.array_equal(reference.scores, explained.scores)


@pytest.mark.parametrize("cast_after_loading", [False, True])
def test_a_model_in_float64_explains_as_float32_does_and_says_so(cast_after_loading):
    """float64 computes a float32 result's exact value (how far rounding moved a score);
    a model cast with ``.double()`` after loading was refused as "not one of" the dtypes."""
    text = "a gripping film that never lets go of you and the cast is superb"
    reference = normxlogit.load((build_model("llama", "classification"), fresh_tokenizer()))
    pair = (build_model("llama", "classification"), fresh_tokenizer())
    if cast_after_loading:
        double = normxlogit.load(pair)
        double.model.double()
    else:
        double = normxlogit.load(pair, dtype="float64")
    for method in ("normxlogit", "integrated_gradients"):
        explained = double.explain(text, method=method)
        assert explained.settings["dtype"] == "float64"
        np.testing.assert_allclose(
            explained.scores, reference.explain(text, method=method).scores, rtol=1e-4, atol=1e-6
        )


def test_a_folder_loads_in_the_chosen_dtype(tiny_classifier):
    model = normxlogit.load(str(tiny_classifier), dtype="float16")
    assert model.dtype is torch.float16
    assert next(model.model.parameters()).dtype is torch.float16
    assert model.explain("fine", method="normxlogit").settings["dtype"] == "float16"


def test_a_generation_records_its_dtype():
    model = normxlogit.load((build_model("llama", "causal_lm"), fresh_tokenizer()), dtype="bf16")
    result = model.explain("a gripping film", continuation="that never", method="normxlogit")
    assert result.settings["dtype"] == "bfloat16"


def test_the_cli_takes_dtype_and_refuses_an_unknown_one(tiny_classifier):
    ran = run_cli(
        "explain", "fine film", "-m", str(tiny_classifier), "--dtype", "bf16", "--format", "json"
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["settings"]["dtype"] == "bfloat16"
    bad = run_cli("explain", "fine film", "-m", str(tiny_classifier), "--dtype", "int8")
    assert bad.returncode == 2
    assert (
        bad.stderr.strip()
        .splitlines()[-1]
        .endswith("dtype 'int8' is not one of: float32, bfloat16, float16, float64")
    )
    assert "Traceback" not in bad.stderr


def test_evaluate_takes_dtype(tmp_path, tiny_classifier):
    data = tmp_path / "texts.txt"
    data.write_text("a fine film\nno good at all\n")
    ran = run_cli(
        "evaluate",
        str(data),
        "-m",
        str(tiny_classifier),
        "--dtype",
        "bfloat16",
        "--method",
        "normxlogit",
        "--metric",
        "soft_nc",
        "--format",
        "json",
    )
    assert ran.returncode == 0, ran.stderr


# ------------------------------------------------------------------ the store's key
def test_model_refs_carry_the_dtype():
    assert model_ref("smollm2-sst2", None) == "smollm2-sst2"
    assert model_ref("smollm2-sst2", "bf16") == "smollm2-sst2@bfloat16"
    assert split_model_ref("smollm2-sst2@bfloat16") == ("smollm2-sst2", "bfloat16")
    assert split_model_ref("folder@v2") == ("folder@v2", None)


def test_a_config_dtype_keys_its_results_apart_from_float32(tmp_path):
    """A run in bfloat16 and one as loaded, into one store: two models to the store, each
    with its own cells and fingerprint; the bfloat16 model really computes in bfloat16."""
    from .helpers import _save_tiny

    model = _save_tiny(tmp_path / "tiny", seed=0)
    config = write_config(
        tmp_path,
        model,
        limit=3,
        methods='["normxlogit"]',
        metrics='["soft_nc"]',
        body='dtype = "bf16"\n',
    )
    grid = load_config(config)
    assert grid.experiments[0].model == f"{model}@bfloat16"
    assert grid.experiments[0].name.startswith(f"{model}@bfloat16:")
    store_path = tmp_path / "grid.sqlite"
    with ResultStore(store_path) as store:
        run_bench(grid, store, LocalEngine())
        run_bench(grid.with_dtype("float32"), store, LocalEngine())
    with sqlite3.connect(store_path) as conn:
        models = sorted(row[0] for row in conn.execute("SELECT DISTINCT model FROM explanations"))
        fingerprints = conn.execute("SELECT key FROM meta WHERE key LIKE 'model:%'").fetchall()
    assert models == [f"{model}@bfloat16", f"{model}@float32"]
    assert len(fingerprints) == 2


def test_a_bad_dtype_in_a_config_is_refused(tmp_path):
    from .helpers import _save_tiny

    model = _save_tiny(tmp_path / "tiny", seed=0)
    config = write_config(tmp_path, model, body='dtype = "int4"\n')
    with pytest.raises(InvalidInputError, match="experiment 1 dtype: dtype 'int4' is not one of"):
        load_config(config)
    ran = run_cli("bench", "run", str(write_config(tmp_path, model)), "--dtype", "q8")
    assert ran.returncode == 2 and "dtype 'q8' is not one of" in ran.stderr


# ------------------------------------------------------------------ memory budget
TEXTS = [" ".join(["word"] * n) for n in (3, 40, 12, 90, 7, 64, 25, 90, 1, 33)]


def test_a_token_budget_groups_texts_by_length_within_it():
    from normxlogit.explaining.texts import _batches, _token_counts

    model = explainable("bert", "classification")
    lengths = _token_counts(model, TEXTS)
    batches = _batches(model, TEXTS, batch_size=16, max_tokens=200)
    assert sorted(i for batch in batches for i in batch) == list(range(len(TEXTS)))
    for batch in batches:
        width = max(lengths[i] for i in batch)
        assert len(batch) == 1 or len(batch) * width <= 200
    flat = [lengths[i] for batch in batches for i in batch]
    assert flat == sorted(flat, reverse=True)  # longest first: little padding
    assert len(_batches(model, TEXTS, batch_size=16, max_tokens=None)) == 1
    assert all(len(b) <= 3 for b in _batches(model, TEXTS, batch_size=3, max_tokens=None))


@pytest.mark.parametrize("method", ["gradient_x_input", "normxlogit", "attention"])
def test_a_budget_changes_no_score(method):
    model = explainable("llama", "classification")
    plain = model.explain(TEXTS, method=method)
    budgeted = model.explain(TEXTS, method=method, max_tokens_per_batch=100)
    for a, b in zip(plain, budgeted, strict=True):
        np.testing.assert_allclose(a.scores, b.scores, rtol=1e-5, atol=1e-6)


def test_a_budget_bounds_a_gradient_methods_memory():
    """Gradient x input holds every layer's activations of its batch for the backward
    pass: eight 90-token texts in one batch take several times what 2 at a time take."""
    model = explainable("llama", "classification")
    texts = [" ".join(["word"] * 90)] * 8
    whole = _peak_bytes(lambda: model.explain(texts, method="gradient_x_input"))
    bounded = _peak_bytes(
        lambda: model.explain(texts, method="gradient_x_input", max_tokens_per_batch=200)
    )
    assert bounded < whole / 2.5


def test_a_budget_splits_a_generations_prefixes_and_changes_no_score():
    from normxlogit.explaining.generation import step_batches
    from normxlogit.explaining.steps import build_generation

    model = explainable("llama", "causal_lm")
    generation = build_generation(model, "a gripping film", "that never lets go of you", 32)
    batches = step_batches(generation, batch_size=16, max_tokens=20)
    assert [s for batch in batches for s in batch] == list(range(generation.steps))
    for batch in batches:
        width = generation.prompt_length + batch[-1]
        assert len(batch) == 1 or len(batch) * width <= 20
    assert len(batches) > 1 and len(step_batches(generation, 16)) == 1
    plain = model.explain(
        "a gripping film", continuation="that never lets go of you", method="gradient_x_input"
    )
    budgeted = model.explain(
        "a gripping film",
        continuation="that never lets go of you",
        method="gradient_x_input",
        max_tokens_per_batch=20,
    )
    np.testing.assert_allclose(plain.scores, budgeted.scores, rtol=1e-5, atol=1e-6)


def test_the_budget_is_checked():
    model = explainable("bert", "classification")
    with pytest.raises(InvalidInputError, match="max_tokens_per_batch must be at least 1"):
        model.explain("fine", max_tokens_per_batch=0)
    ran = run_cli("explain", "fine", "--max-tokens-per-batch", "0")
    assert ran.returncode == 2 and "--max-tokens-per-batch 0: must be at least 1" in ran.stderr


def test_a_budget_bounds_evaluates_perturbed_passes_and_changes_no_score(monkeypatch):
    """Each perturbed pass holds at most the budget's tokens (copies x the padded length,
    one copy at least); the scores are those of the unbounded run."""
    from normxlogit.evaluation import Protocol

    model = explainable("llama", "classification")
    texts = TEXTS[:4]
    explained = model.explain(texts, method="gradient_x_input")
    protocol = Protocol(samples=2, pis=(0.25, 0.75))
    metrics = ["comp_cd", "suff_cd", "pi_soft_ns", "deletion"]
    plain = normxlogit.evaluate(model, explained, metrics, protocol=protocol, progress=False)
    perturbed: list[tuple[int, int]] = []
    backbone, clean_pass = model.run_backbone, model.forward
    cleaning = []

    def spy(**inputs):
        if not cleaning:  # the clean pass of the texts is not a perturbed pass
            key = "input_ids" if "input_ids" in inputs else "inputs_embeds"
            perturbed.append(tuple(inputs[key].shape[:2]))
        return backbone(**inputs)

    def clean(*args, **kwargs):
        cleaning.append(True)
        try:
            return clean_pass(*args, **kwargs)
        finally:
            cleaning.pop()

    monkeypatch.setattr(model, "run_backbone", spy)
    monkeypatch.setattr(model, "forward", clean)
    budgeted = normxlogit.evaluate(
        model, explained, metrics, protocol=protocol, max_tokens_per_batch=200, progress=False
    )
    assert perturbed and all(rows * length <= 200 or rows == 1 for rows, length in perturbed)
    assert max(rows for rows, _ in perturbed) > 1  # short enough texts still share passes
    np.testing.assert_allclose(plain.frame["value"], budgeted.frame["value"], rtol=1e-5, atol=1e-6)
    with pytest.raises(InvalidInputError, match="max_tokens_per_batch must be at least 1"):
        normxlogit.evaluate(model, explained, ["comp_cd"], max_tokens_per_batch=0)


def test_a_bench_config_and_run_take_the_budget(tmp_path, monkeypatch):
    """The budget is a size like rows_per_forward: read from the config or the command,
    it reaches evaluate, and the stored values are those of a run without it."""
    from .helpers import _save_tiny, stored

    model = _save_tiny(tmp_path / "tiny", seed=0)
    path = write_config(
        tmp_path, model, limit=3, methods='["normxlogit"]', body="max_tokens_per_batch = 64"
    )
    config = load_config(path)
    assert {e.max_tokens_per_batch for e in config.experiments} == {64}
    assert {e.max_tokens_per_batch for e in config.with_sizes(None, None, 9).experiments} == {9}
    budgets: list[int | None] = []
    import normxlogit.workflows as workflows  # the bench evaluates through the workflow

    real = workflows.evaluate

    def spy(*args, **kwargs):
        budgets.append(kwargs.get("max_tokens_per_batch"))
        return real(*args, **kwargs)

    monkeypatch.setattr(workflows, "evaluate", spy)
    unbounded = replace(
        config, experiments=tuple(replace(e, max_tokens_per_batch=None) for e in config.experiments)
    )
    for name, grid in (("budget", config), ("none", unbounded)):
        with ResultStore(tmp_path / f"{name}.sqlite") as store:
            run_bench(grid, store, LocalEngine())
    assert 64 in budgets
    budgeted, plain = stored(tmp_path / "budget.sqlite"), stored(tmp_path / "none.sqlite")
    # as for batch sizes (test_runner): pi-Soft divides by the clean perturbation effect,
    # which rounding moves a little on a random tiny model; the rest agree to rounding
    soft = plain["metric"].str.startswith("pi_soft").to_numpy()
    np.testing.assert_allclose(
        budgeted["value"][~soft], plain["value"][~soft], rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(budgeted["value"][soft], plain["value"][soft], atol=2e-3)
    bad = write_config(tmp_path, model, body="max_tokens_per_batch = 0")
    with pytest.raises(InvalidInputError, match="max_tokens_per_batch' must be a whole number"):
        load_config(bad)
    ran = run_cli("bench", "run", str(bad), "--max-tokens-per-batch", "0")
    assert ran.returncode == 2 and "--max-tokens-per-batch 0: must be at least 1" in ran.stderr
