"""SmolLM2-135M-Instruct from its GGUF file, dequantised once and cached as safetensors."""

from __future__ import annotations

import shutil
import tempfile

import torch

from ..tasks import ChatPrompt
from .quiet import quiet_transformers
from .sources import cache_dir, smollm2_gguf

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


def load_smollm2():
    """SmolLM2-135M-Instruct as a float32 LlamaForCausalLM and its tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cached = cache_dir() / CACHE_NAME
    with quiet_transformers():
        if not (cached / "config.json").is_file():
            _convert(cached)
        model = AutoModelForCausalLM.from_pretrained(cached, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(cached)
    model.name_or_path = "smollm2-135m"
    return model, tokenizer


def _convert(target) -> None:
    """Dequantise the GGUF (about 16 s) and save it; a crash leaves no half-written cache."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = smollm2_gguf()
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32
    )
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # the weights are plain float32 now; drop the GGUF "quantizer" that blocks saving
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        shutil.rmtree(target, ignore_errors=True)
        shutil.move(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
