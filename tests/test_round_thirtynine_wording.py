"""Round thirty-nine, wording and targets (probes a and b):

- a/P03: on a byte-level BPE vocabulary a one-letter target or contrast such as ``é`` is
  the character (two byte tokens, refused as such), not the byte 0xE9 whose vocabulary
  spelling it shares; the byte is still named ``<0xE9>`` or by its id, and names an
  explanation recorded for such a byte read back as that byte.
- b/P04: the page's refusal of a masked LM's contrast input without [MASK] names its box
  (*against the input*), not ``contrast_input[0]`` or Python's ``mask_position=``.
- b/P07: the plausibility and evidence warnings give their protocol fix as a
  ``Protocol(...)`` setting, so the bench names ``[protocol]`` keys and the command line
  ``--protocol``.
- b/P08: refusals and warnings made on a compressed store's temporary copy name the
  store the user gave.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import transformers as T

import normxlogit
from normxlogit.common.errors import InvalidInputError

from .conftest import explainable, invoke_in
from .test_bad_inputs_api import byte_level_tokenizer


# ------------------------------------------------------------------------------ a/P03
def _byte_level_network():
    tokenizer = byte_level_tokenizer()
    config = T.GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return T.GPT2LMHeadModel(config).eval(), tokenizer


@pytest.fixture(scope="module")
def byte_level():
    return normxlogit.load(_byte_level_network())


@pytest.fixture(scope="module")
def byte_level_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("byte-level")
    network, tokenizer = _byte_level_network()
    network.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _byte_id(model, byte: int) -> int:
    from normxlogit.common.tokens import byte_token_spelling

    return model.tokenizer.convert_tokens_to_ids(
        byte_token_spelling(model.tokenizer, f"<0x{byte:02X}>")
    )


@pytest.mark.parametrize("letter", ["é", "ü", "ñ"])
def test_p03_a_latin1_letter_target_is_the_character_not_a_byte(byte_level, letter):
    with pytest.raises(InvalidInputError, match=rf"target '{letter}' is 2 tokens \(Ã, ") as raised:
        byte_level.explain("Hi Paris", target=letter)
    assert "UTF-8 bytes" in str(raised.value)


def test_p03_a_latin1_letter_contrast_is_the_character_too(byte_level):
    with pytest.raises(InvalidInputError, match=r"contrast 'é' is 2 tokens \(Ã, ©"):
        byte_level.explain("Hi Paris", target=" Paris", contrast="é")


def test_p03_the_byte_is_still_named_as_the_views_show_it(byte_level):
    explained = byte_level.explain("Hi Paris", target="<0xE9>", contrast="<0xFC>")
    assert explained.targets == ["é"] and explained.contrasts == ["ü"]  # the vocabulary's
    by_id = byte_level.explain(
        "Hi Paris", target=_byte_id(byte_level, 0xE9), contrast=_byte_id(byte_level, 0xFC)
    )
    assert (explained.scores == by_id.scores).all()


def test_p03_longer_vocabulary_spellings_are_taken_as_given(byte_level):
    explained = byte_level.explain("Hi Paris", target=["ĠParis", "å¤"])
    assert explained.targets == ["ĠParis", "å¤"]
    # the text " Paris" is the same token: one output, named once in a list
    assert byte_level.explain("Hi Paris", target=" Paris").targets == ["ĠParis"]


def test_p03_an_explanation_of_a_byte_evaluates_and_explains_again(byte_level, tmp_path):
    made = byte_level.explain(
        "Hi Paris", target=_byte_id(byte_level, 0xE9), contrast=_byte_id(byte_level, 0xFC)
    )
    assert made.targets == ["é"]
    path = tmp_path / "byte.json"
    made.save(path)
    loaded = normxlogit.Explanation.load(path)
    result = normxlogit.evaluate(byte_level, loaded, metrics=["comp_cd", "sanity_spearman"])
    assert set(result.frame["metric"]) >= {"comp_cd", "sanity_spearman"}
    against = byte_level.explain(
        "Hi Paris", target=_byte_id(byte_level, 0xE9), contrast_input="Hi Parix"
    )
    assert against.targets == ["é"]


@pytest.mark.parametrize("flag", ["--label", "--contrast"])
def test_p03_the_command_line_reads_the_letter_as_text(tmp_path, byte_level_folder, flag):
    extra = ["--label", " Paris"] if flag == "--contrast" else []
    result = invoke_in(
        tmp_path, "explain", "Hi Paris", "-m", str(byte_level_folder), *extra, flag, "é"
    )
    assert result.exit_code != 0
    role = "contrast" if flag == "--contrast" else "target"
    assert f"{role} 'é' is 2 tokens" in " ".join(result.output.split())


def test_p03_a_bench_target_reads_the_letter_as_text(tmp_path, byte_level_folder):
    (tmp_path / "d.jsonl").write_text(json.dumps({"text": "Hi Paris"}) + "\n")
    (tmp_path / "g.toml").write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{byte_level_folder}"\ndataset = "d.jsonl"\ntarget = "é"\n'
    )
    result = invoke_in(tmp_path, "bench", "run", "g.toml")
    assert result.exit_code != 0
    said = " ".join(result.output.split())
    assert "'é' is 2 tokens" in said and "--label-id" not in said


# ------------------------------------------------------------------------------ b/P04
def test_p04_the_page_names_its_box_for_a_contrast_input_without_a_mask():
    from normxlogit.serve.phrasing import page_named
    from normxlogit.workflows import explain_texts

    masked = explainable("bert", "masked_lm")
    explained = explain_texts(
        masked,
        ["the cat [MASK] here"],
        {"random": "random"},
        [None],
        contrast_inputs=["the dog here"],
        skip=(InvalidInputError,),
    )
    said = page_named(explained.skipped["random"])
    assert "the contrast input (against the input) has no [MASK]" in said
    assert "contrast_input[" not in said and "mask_position" not in said
    assert "in Python" not in said


def test_p04_the_page_drops_python_mask_position_advice_for_the_text():
    from normxlogit.serve.phrasing import page_named

    masked = explainable("bert", "masked_lm")
    with pytest.raises(InvalidInputError) as raised:
        masked.explain("the cat is here")
    assert "mask_position" in str(raised.value)  # Python's advice, in Python
    assert "mask_position" not in page_named(str(raised.value))


# ------------------------------------------------------------------------------ b/P07
def _plausibility_messages() -> list[str]:
    from normxlogit.evaluation.evidence import EvidenceDot
    from normxlogit.evaluation.plausibility import empty_message, few_tokens_message
    from normxlogit.evaluation.protocol import Protocol
    from normxlogit.evaluation.registry import metric_class

    metrics = {"token_f1": metric_class("token_f1")}
    return [
        few_tokens_message(1, 2, 5, metrics),
        empty_message(1, 0, 2, Protocol(empty_rationale="score"), metrics),
        EvidenceDot.full_scores,
    ]


def test_p07_plausibility_fixes_are_protocol_settings_in_python():
    few, empty, full = _plausibility_messages()
    assert "a smaller Protocol(top_k=...) or Protocol(discretize='rationale') ranks them" in few
    assert "(Protocol(empty_rationale='score'))" in empty
    assert "(1 under Protocol(dot_product='softmax'))" in full


def test_p07_the_bench_names_config_keys_and_the_command_line_flags():
    from normxlogit.cli.helpers import config_keys_named, flags_named

    few, empty, full = _plausibility_messages()
    assert (
        'a smaller [protocol] top_k = ... or [protocol] discretize = "rationale" ranks them'
        in config_keys_named(few)
    )
    assert '[protocol] empty_rationale = "score"' in config_keys_named(empty)
    assert '[protocol] dot_product = "softmax"' in config_keys_named(full)
    cli = flags_named(few, "evaluate")
    assert "a smaller --protocol top_k=... or --protocol discretize=rationale ranks them" in cli


def test_p07_a_bench_run_warns_in_config_keys(tmp_path, tiny_classifier):
    rows = [
        {"text": "a good film", "label": 1, "evidence": [1]},
        {"text": "it was a truly dull and tedious film overall", "label": 0, "evidence": [5]},
    ]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "g.toml").write_text(
        'seeds = [0]\nmetrics = ["token_f1"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "d.jsonl"\n'
    )
    result = invoke_in(tmp_path, "bench", "run", "g.toml")
    said = " ".join(result.output.split())
    assert '[protocol] discretize = "rationale" ranks them' in said, said
    assert "discretize='rationale'" not in said


# ------------------------------------------------------------------------------ b/P08
def _compressed_store_of_changed_data(folder: Path, model: Path) -> None:
    from normxlogit.bench.archive import compress_store

    data = folder / "d.jsonl"
    rows = [
        {"text": "a charming and often affecting journey", "label": 1, "evidence": [1, 4]},
        {"text": "it is a bad film", "label": 0, "evidence": [3]},
    ]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    (folder / "g.toml").write_text(
        'seeds = [0]\nmetrics = ["token_f1"]\nmethods = ["random"]\n[protocol]\ntop_k = 1\n'
        f'[[experiments]]\nmodel = "{model}"\ndataset = "d.jsonl"\n'
    )
    assert invoke_in(folder, "bench", "run", "g.toml").exit_code == 0
    compress_store(folder / "g.sqlite", folder / "g.sqlite.xz")
    (folder / "g.sqlite").unlink()
    data.write_text(data.read_text().replace('"evidence": [3]', '"evidence": [2]'))


def test_p08_a_compressed_store_refusal_names_the_given_store(tmp_path, tiny_classifier):
    _compressed_store_of_changed_data(tmp_path, tiny_classifier)
    result = invoke_in(tmp_path, "bench", "status", "g.toml", "--store", "g.sqlite.xz")
    said = " ".join(result.output.split())
    assert result.exit_code != 0
    assert "normxlogit-store-" not in said
    assert "than g.sqlite.xz holds" in said, said


def test_p08_errors_and_warnings_on_the_copy_name_the_given_store(tmp_path):
    from normxlogit.bench.archive import compress_store, readable_store, writable_store
    from normxlogit.bench.store import ResultStore

    ResultStore(tmp_path / "s.sqlite").close()
    given = compress_store(tmp_path / "s.sqlite", tmp_path / "s.sqlite.xz")
    for opened in (readable_store, writable_store):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(InvalidInputError) as raised, opened(given) as plain:
                warnings.warn(f"odd rows in {plain}", stacklevel=1)
                raise InvalidInputError(f"{plain} holds other results")
        assert str(raised.value) == f"{given} holds other results"
        assert [str(w.message) for w in caught] == [f"odd rows in {given}"]
