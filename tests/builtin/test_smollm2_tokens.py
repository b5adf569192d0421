"""SmolLM2's special tokens do not depend on the transformers that converted its GGUF.

transformers 5.17 (a lent GPU machine's) saved the converted tokenizer with eos
``<|im_start|>`` and no padding token, so the prompts' ``<|im_end|>`` were no special
tokens there and pi-Soft, which keeps special tokens, perturbed them: the machine's
values differed from this CPU's by up to 0.038 (benchmarks/bench_agreement.py)."""

from __future__ import annotations

import pytest

from normxlogit.builtin import adapters, smollm2


@pytest.fixture(scope="module")
def converted_as_517(tmp_path_factory):
    """The real SmolLM2 tokenizer as transformers 5.17 saved it."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm2.smollm2_folder())
    tokenizer.eos_token = "<|im_start|>"
    tokenizer.pad_token = None
    folder = tmp_path_factory.mktemp("tok517")
    tokenizer.save_pretrained(folder)
    return folder


def test_a_tokenizer_saved_with_another_eos_reads_im_end_as_special(converted_as_517):
    from transformers import AutoTokenizer

    end = AutoTokenizer.from_pretrained(converted_as_517).convert_tokens_to_ids("<|im_end|>")
    as_saved = AutoTokenizer.from_pretrained(converted_as_517)
    assert end not in as_saved.all_special_ids  # what the 5.17 machine had
    pinned = smollm2.pin_special_tokens(as_saved)
    assert pinned.eos_token == pinned.pad_token == "<|im_end|>"
    assert end in pinned.all_special_ids
    # the adapters' path (smollm2-*-prompted and the classifiers) pins it too
    for task in (adapters.PROMPTED, "classification"):
        loaded = adapters._smollm2_tokenizer(AutoTokenizer.from_pretrained(converted_as_517), task)
        assert end in loaded.all_special_ids, task


def test_a_chat_prompt_marks_its_end_of_turn_special(converted_as_517):
    """What the pi-Soft protocol reads: the encoder's special mask of a prompted text."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import normxlogit

    tokenizer = smollm2.pin_special_tokens(AutoTokenizer.from_pretrained(converted_as_517))
    model = AutoModelForCausalLM.from_pretrained(smollm2.smollm2_folder())
    explainable = normxlogit.load(
        (model, tokenizer),
        label_words={"negative": "negative", "positive": "positive"},
        prompt=normxlogit.ChatPrompt(user="Review: {text}"),
    )
    batch = explainable.encode(["a fine film"])
    ids = batch.input_ids[0].tolist()
    special = batch.special_tokens_mask[0].tolist()
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    marked = [flag for token, flag in zip(ids, special, strict=True) if token == end]
    assert marked and all(marked)
