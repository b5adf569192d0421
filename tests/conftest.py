"""Tiny random models of every supported family, built from configs (no download)."""

from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path
from typing import ClassVar

import pytest
import torch
import transformers as T

from normxlogit.builtin.sources import minilm_dir
from normxlogit.evaluation.registry import _METRICS
from normxlogit.methods.base import _METHODS

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Under pytest-xdist each worker takes one core (and so do the CLI runs it starts): tiny
# models gain nothing from a second thread, and two workers of two threads on two cores
# would fight for them. Alone, the suite keeps two threads.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)
    # a worker starts with COLUMNS=80 and LINES=24 set, which the CLI's console (made when
    # normxlogit.cli is first imported) would keep for every later test's own width
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
else:
    torch.set_num_threads(2)

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37)
DECODER = dict(SMALL, num_key_value_heads=2, max_position_embeddings=128)

#: family -> (config factory, {head kind: model class})
ENCODERS = {
    "bert": (lambda v: T.BertConfig(vocab_size=v, **SMALL), "Bert"),
    "roberta": (lambda v: T.RobertaConfig(vocab_size=v, pad_token_id=0, **SMALL), "Roberta"),
    "xlm-roberta": (
        lambda v: T.XLMRobertaConfig(vocab_size=v, pad_token_id=0, **SMALL),
        "XLMRoberta",
    ),
    "deberta-v2": (
        lambda v: T.DebertaV2Config(
            vocab_size=v,
            relative_attention=True,
            position_biased_input=False,
            pos_att_type=["p2c", "c2p"],
            max_relative_positions=64,
            **SMALL,
        ),
        "DebertaV2",
    ),
    "electra": (lambda v: T.ElectraConfig(vocab_size=v, embedding_size=16, **SMALL), "Electra"),
    "distilbert": (
        lambda v: T.DistilBertConfig(vocab_size=v, dim=32, n_layers=2, n_heads=2, hidden_dim=37),
        "DistilBert",
    ),
    "albert": (lambda v: T.AlbertConfig(vocab_size=v, embedding_size=16, **SMALL), "Albert"),
    "mpnet": (lambda v: T.MPNetConfig(vocab_size=v, pad_token_id=0, **SMALL), "MPNet"),
}
DECODERS = {
    "gpt2": (
        lambda v: T.GPT2Config(
            vocab_size=v,
            n_embd=32,
            n_layer=2,
            n_head=2,
            pad_token_id=0,
            bos_token_id=101,
            eos_token_id=102,
        ),
        "GPT2",
    ),
    "llama": (lambda v: T.LlamaConfig(vocab_size=v, pad_token_id=0, **DECODER), "Llama"),
    "mistral": (lambda v: T.MistralConfig(vocab_size=v, pad_token_id=0, **DECODER), "Mistral"),
    "qwen2": (lambda v: T.Qwen2Config(vocab_size=v, pad_token_id=0, **DECODER), "Qwen2"),
    "gpt-neox": (lambda v: T.GPTNeoXConfig(vocab_size=v, pad_token_id=0, **DECODER), "GPTNeoX"),
    "phi": (lambda v: T.PhiConfig(vocab_size=v, pad_token_id=0, **DECODER), "Phi"),
    "gemma": (
        lambda v: T.GemmaConfig(vocab_size=v, pad_token_id=0, head_dim=16, **DECODER),
        "Gemma",
    ),
}
ENCODER_HEADS = {
    "classification": "ForSequenceClassification",
    "regression": "ForSequenceClassification",
    "masked_lm": "ForMaskedLM",
}
DECODER_HEADS = {"classification": "ForSequenceClassification", "causal_lm": "ForCausalLM"}
CAUSAL_CLASS = {"GPT2": "GPT2LMHeadModel"}

CASES = [(f, h) for f in ENCODERS for h in ENCODER_HEADS] + [
    (f, h) for f in DECODERS for h in DECODER_HEADS
]


@functools.cache
def tokenizer():
    return T.AutoTokenizer.from_pretrained(minilm_dir())


def fresh_tokenizer():
    """A tokenizer copy tests may change (padding side)."""
    return T.AutoTokenizer.from_pretrained(minilm_dir())


def build_model(family: str, head: str, seed: int = 0):
    """A tiny random model of ``family`` with ``head``, in eval mode."""
    make_config, prefix = {**ENCODERS, **DECODERS}[family]
    config = make_config(len(tokenizer()))
    if head == "classification":
        config.num_labels = 3
    elif head == "regression":
        config.num_labels = 1
        config.problem_type = "regression"
    suffix = (ENCODER_HEADS if family in ENCODERS else DECODER_HEADS)[head]
    name = CAUSAL_CLASS.get(prefix, prefix + suffix) if head == "causal_lm" else prefix + suffix
    torch.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(T, name)(config).eval()


#: a minimal chat template for tiny decoders read through a prompt
CHAT_TEMPLATE = (
    "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}[assistant] {% endif %}"
)


def prompted_llama(label_words: dict, system: str | None = None, user: str = "{text}", fields=()):
    """A tiny random LLaMA read as a prompted classifier, its text in a chat prompt."""
    import normxlogit

    tokenizer = fresh_tokenizer()
    tokenizer.chat_template = CHAT_TEMPLATE
    prompt = normxlogit.ChatPrompt(system=system, user=user, fields=tuple(fields))
    return normxlogit.load(
        (build_model("llama", "causal_lm"), tokenizer), label_words=label_words, prompt=prompt
    )


@functools.cache
def explainable(family: str, head: str):
    import normxlogit

    return normxlogit.load((build_model(family, head), fresh_tokenizer()))


@pytest.fixture(params=CASES, ids=[f"{f}-{h}" for f, h in CASES])
def case(request):
    return request.param


@functools.cache
def sharp_model():
    """A tiny BERT classifier whose prediction moves when tokens change (the probabilities
    of a tiny model with the usual initialisation barely do)."""
    import normxlogit

    torch.manual_seed(1)
    config = T.BertConfig(vocab_size=len(tokenizer()), initializer_range=0.5, num_labels=3, **SMALL)
    network = T.BertForSequenceClassification(config).eval()
    return normxlogit.load((network, fresh_tokenizer()))


def needs_data(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} not available")
    return path


def assert_padding_sides_agree(family: str, head: str, texts, atol: float = 1e-5, **options):
    """Explain ``texts`` with left- and right-padding tokenizers; the scores must agree."""
    import numpy as np

    import normxlogit

    results = {}
    for side in ("left", "right"):
        tokenizer = fresh_tokenizer()
        tokenizer.padding_side = side
        model = normxlogit.load((build_model(family, head), tokenizer))
        results[side] = model.explain(texts, **options)
    for left, right in zip(results["left"], results["right"], strict=True):
        assert left.tokens == right.tokens
        np.testing.assert_allclose(left.scores, right.scores, atol=atol, rtol=atol)


def bench_on_rows(folder: Path, model: Path, rows: list[dict], body: str):
    """``bench run`` of ``body`` (metrics and methods, TOML) on a user's .jsonl file of
    ``rows`` with ``model``: the report, and the store's exported values."""
    import json

    from normxlogit.bench import ResultStore, load_config, run_bench
    from normxlogit.bench.results import export_frame

    data = folder / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    config = folder / "rows.toml"
    config.write_text(f'{body}\n[[experiments]]\nmodel = "{model}"\ndataset = "{data}"\n')
    with ResultStore(folder / "rows.sqlite") as store:
        report = run_bench(load_config(config), store)
        return report, export_frame(store)


def saved_tiny(folder: Path, family: str, head: str) -> Path:
    """A tiny random model of ``family`` with ``head`` saved with its tokenizer in
    ``folder``, to load by path (as a user's model)."""
    build_model(family, head).save_pretrained(folder)
    fresh_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def bert():
    """A tiny BERT classifier of three labels, one per test module."""
    return explainable("bert", "classification")


@pytest.fixture(scope="module")
def gpt2():
    """A tiny GPT-2 language model, one per test module."""
    return explainable("gpt2", "causal_lm")


@pytest.fixture(scope="session")
def tiny_masked_lm(tmp_path_factory) -> Path:
    """A saved tiny BERT masked LM folder."""
    return saved_tiny(tmp_path_factory.mktemp("tiny-mlm"), "bert", "masked_lm")


@pytest.fixture(scope="session")
def tiny_classifier(tmp_path_factory) -> Path:
    """A saved tiny BERT classifier folder with three labels (neg, neutral, pos)."""
    folder = tmp_path_factory.mktemp("tiny-classifier")
    model = build_model("bert", "classification")
    model.config.id2label = {0: "neg", 1: "neutral", 2: "pos"}
    model.config.label2id = {v: k for k, v in model.config.id2label.items()}
    model.save_pretrained(folder)
    fresh_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture
def slow_method():
    """A method (registered like a user's own) that runs 500 forward passes."""
    import time
    from dataclasses import dataclass

    from normxlogit.methods import AttributionMethod, register_method
    from normxlogit.methods.base import _METHODS

    @dataclass
    class SlowProbe(AttributionMethod):
        name: ClassVar[str] = "slow_probe"
        description: ClassVar[str] = "runs the model 500 times (a test of cancelling)"
        single_forward: ClassVar[bool] = False

        def attribute(self, model, forward, targets, layers):
            for _ in range(500):
                model.forward(forward.batch)
                passes.append(1)
                time.sleep(0.01)
            shape = (*forward.batch.input_ids.shape, targets.columns.shape[1])
            return torch.zeros(shape)[:, None]

    passes: list[int] = []
    register_method(SlowProbe)
    yield passes
    _METHODS.pop("slow_probe")


def said(result) -> str:
    """A CLI result's output on one line (a long message wraps in the terminal)."""
    return " ".join(result.output.split())


@pytest.fixture(scope="module")
def labelled(tiny_classifier):
    """The tiny three-label classifier, loaded once per test module."""
    import normxlogit

    return normxlogit.load(str(tiny_classifier))


@pytest.fixture(scope="module")
def decoder():
    """A tiny GPT-2 language model, loaded once per test module."""
    import normxlogit

    return normxlogit.load((build_model("gpt2", "causal_lm"), fresh_tokenizer()))


def invoke_in(folder: Path, *args: str):
    """The CLI run with ``args`` from inside ``folder`` (relative names land there)."""
    import os

    from typer.testing import CliRunner

    from normxlogit.cli import app

    previous = os.getcwd()
    os.chdir(folder)
    try:
        return CliRunner().invoke(app, list(args))
    finally:
        os.chdir(previous)


def sanity_frame(method: str = "g"):
    """A saved sanity check's frame as its CSV holds it: one method, two cascading steps,
    two texts, every similarity 0.5 (tests edit it as a user would the file)."""
    import pandas as pd

    rows = [
        {"method": method, "mode": "cascading", "step": step, "randomized": f"layer {step}"}
        | {"instance": instance, "target": "LABEL_0", "spearman": 0.5, "top_k": 0.5}
        for step in (0, 1)
        for instance in (0, 1)
    ]
    return pd.DataFrame(rows)


@pytest.fixture
def registries():
    """The method and metric registries as they were before the test, restored after."""
    methods, metrics = dict(_METHODS), dict(_METRICS)
    yield
    _METHODS.clear()
    _METHODS.update(methods)
    _METRICS.clear()
    _METRICS.update(metrics)


@pytest.fixture
def never_explained(monkeypatch):
    """explain_and_evaluate's explaining replaced by a failure: a refusal the test expects
    must come before any method explains."""
    from normxlogit import workflows

    def explain_texts(*args, **kwargs):
        raise AssertionError("explained before refusing")

    monkeypatch.setattr(workflows, "explain_texts", explain_texts)
