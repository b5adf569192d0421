"""Every bad input to the Python API gets a clear answer (issue 9).

Each test checks the exact class of the error, that its message names the file, line or
text at fault and the fix, and that no file was written or changed. The last part checks
that every view shows tokens as text (`` Paris``, 北) rather than byte-level pieces
(``ĠParis``, ``åĮĹ``), while ``Explanation.tokens`` keeps the tokenizer's own pieces.
"""

from __future__ import annotations

import functools
import json
import re
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import transformers as T
from rich.console import Console

import normxlogit
from normxlogit import Explanation
from normxlogit.common.errors import (
    InvalidFileError,
    InvalidInputError,
    InvalidOptionError,
    NormXLogitError,
    UnknownModelError,
)
from normxlogit.common.tokens import _BYTE_LEVEL, TokenTexts
from normxlogit.data import read_examples, read_sst2

from .conftest import build_model, explainable, fresh_tokenizer

#: characters that byte-level pieces of CJK text or accented letters show as, undecoded
MOJIBAKE = re.compile("[ĠĊĉÃÂåæçäéãâ]")
ACCEPTED = r"str.*\(str, str\) pair.*list"


@contextmanager
def refused(kind: type[NormXLogitError], *patterns: str):
    """The block raises exactly ``kind`` with a message matching every pattern."""
    with pytest.raises(NormXLogitError) as caught:
        yield caught
    error = caught.value
    assert type(error) is kind, f"{type(error).__name__}: {error}"
    for pattern in patterns:
        assert re.search(pattern, str(error), re.S), f"{pattern!r} not in: {error}"


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder``: its bytes and modification time."""
    return {
        str(path.relative_to(folder)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@contextmanager
def unchanged(folder: Path):
    """Nothing under ``folder`` is written, changed or removed in the block."""
    before = snapshot(folder)
    yield
    assert snapshot(folder) == before


def reading_refused(path: Path, *patterns: str) -> None:
    """Reading ``path`` raises InvalidFileError matching every pattern, and writes nothing."""
    with unchanged(path.parent), refused(InvalidFileError, *patterns):
        read_examples(path)


@pytest.fixture(scope="module")
def classifier():
    return explainable("bert", "classification")


# ------------------------------------------------------------------------------ load


def test_folder_with_a_config_but_no_weights(tmp_path):
    T.BertConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        architectures=["BertForSequenceClassification"],
    ).save_pretrained(tmp_path)
    with (
        unchanged(tmp_path),
        refused(
            UnknownModelError,
            re.escape(str(tmp_path)),
            "no weights",
            "model.safetensors",
            r"save_pretrained",
        ),
    ):
        normxlogit.load(str(tmp_path))


def test_folder_with_weights_but_no_tokenizer(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_model("bert", "classification").save_pretrained(tmp_path)
    with (
        unchanged(tmp_path),
        refused(UnknownModelError, "no tokenizer", r"tokenizer\.save_pretrained", r"load\(\(model"),
    ):
        normxlogit.load(str(tmp_path))


@pytest.mark.parametrize(
    ("pair", "found"),
    [
        ((None, None), "the model is None"),
        (("some/folder", None), r"the model is a str.*load\(path\)"),
        ("tokenizer-path", r"the tokenizer is a str.*AutoTokenizer\.from_pretrained"),
        (123, "the tokenizer is an int"),
    ],
)
def test_a_pair_that_is_not_a_model_and_tokenizer(pair, found):
    if not isinstance(pair, tuple):
        pair = (build_model("bert", "classification"), pair)
    with refused(UnknownModelError, "needs a transformers model", "tokenizer", found):
        normxlogit.load(pair)


# -------------------------------------------------------------------- explain inputs


@pytest.mark.parametrize(
    ("texts", "found"),
    [
        (None, "got None"),
        (123, "got an int"),
        (4.5, "got a float"),
        ({"text": "a film"}, "got a dict"),
        (b"a film", r"bytes.*decode"),
        ([b"a film"], r"text 0 is a bytes.*decode"),
        (["a film", None], "text 1 is None"),
        (("a film", None), "the second text of the pair is None"),
        ([("a", "b", "c")], "text 0 is a tuple of 3"),
    ],
)
def test_explain_says_which_types_it_takes(classifier, texts, found):
    with refused(InvalidInputError, found, ACCEPTED):
        classifier.explain(texts)


def test_explain_needs_the_loaded_model(classifier):
    with refused(InvalidInputError, "first argument is the model from normxlogit.load", "str"):
        normxlogit.explain("a film", classifier)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("\u200b\u200b", "U\\+200B ZERO WIDTH SPACE"),
        ("\u200d\u2060\u200b", "U\\+200D"),
        ("\u0301", "COMBINING ACUTE ACCENT"),
    ],
)
def test_text_the_tokenizer_drops_entirely_is_refused_first(classifier, monkeypatch, text, named):
    def no_forward(*args, **kwargs):
        raise AssertionError("the model ran before the input was checked")

    monkeypatch.setattr(classifier, "forward", no_forward)
    with refused(
        InvalidInputError,
        "text 2 has no tokens the model can read",
        named,
        r"\[CLS\] \[SEP\]",
        "give some words",
    ):
        classifier.explain(["a fine film", "another", text], batch_size=1)


def test_pair_with_an_unreadable_half_names_the_half(classifier):
    with refused(InvalidInputError, r"the text \(second text of the pair\) has no tokens"):
        classifier.explain(("a man sings", "\u200b"))


def test_unknown_characters_are_still_explained(classifier):
    explanation = classifier.explain("😀")  # [UNK] is a token the model reads
    assert explanation.tokens == ["[CLS]", "[UNK]", "[SEP]"]


# ----------------------------------------------------------------------- data files


def test_broken_jsonl_line_names_file_and_line(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"text": "fine", "label": 1}\n{"text": "broken, "label": 0}\n')
    reading_refused(path, re.escape(str(path)), "line 2", "not valid JSON", "one JSON object")


def test_jsonl_line_that_is_not_an_object(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"text": "fine"}\n["a list", 1]\n')
    reading_refused(path, "line 2", "a list", "JSON object")


@pytest.mark.parametrize(
    ("value", "found"),
    [(None, "null"), (["a", "b"], "a list"), (5, "the number 5"), ({"a": 1}, "an object")],
)
def test_jsonl_text_that_is_not_a_string(tmp_path, value, found):
    path = tmp_path / "rows.jsonl"
    rows = [{"text": "fine", "label": 1}, {"text": value, "label": 0}]
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    reading_refused(path, re.escape(str(path)), "line 2", "'text'", found, "must be a string")


@pytest.mark.parametrize("suffix", [".txt", ".tsv", ".csv", ".jsonl"])
def test_file_that_is_not_utf8(tmp_path, suffix):
    path = tmp_path / f"latin1{suffix}"
    content = {
        ".txt": "first\nun café noir\n",
        ".tsv": "sentence\tlabel\nun café noir\t1\n",
        ".csv": "sentence,label\nun café noir,1\n",
        ".jsonl": '{"text": "un café noir"}\n',
    }[suffix]
    path.write_bytes(content.encode("latin-1"))
    line = 1 if suffix == ".jsonl" else 2
    offset = content.encode("latin-1").index("é".encode("latin-1"))
    reading_refused(
        path,
        re.escape(str(path)),
        "not UTF-8",
        "0xE9",
        f"line {line}",
        f"byte offset {offset}",
        "re-encode it as UTF-8",
    )


def test_utf8_with_a_byte_order_mark_is_read(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes("sentence,label\nun café noir,1\n".encode("utf-8-sig"))
    assert [(e.text, e.label) for e in read_examples(path)] == [("un café noir", 1)]


def test_missing_tsv_cell_names_row_and_column(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text("sentence\tlabel\na gripping film\t1\na dull film\n")
    reading_refused(path, re.escape(str(path)), "line 3", "column 'label'", "missing tab")


def test_extra_tsv_cell_is_refused(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text("sentence\tlabel\na gripping\tfilm\t1\n")
    reading_refused(path, "line 2", "3 cells", "2 columns")


def test_empty_text_cell_is_refused(tmp_path):
    path = tmp_path / "dev.csv"
    path.write_text("sentence,label\na gripping film,1\n ,0\n")
    reading_refused(path, "line 3", "'sentence' is empty")


def test_labels_on_some_rows_only(tmp_path):
    path = tmp_path / "dev.csv"
    path.write_text("sentence,label\na gripping film,1\na dull film,\n")
    reading_refused(path, "line 3: no label", "line 2 has one", "every row a label")
    null = tmp_path / "null.jsonl"
    null.write_text('{"text": "a", "label": 1}\n{"text": "b", "label": null}\n')
    with refused(InvalidFileError, "line 2: no label"):
        read_examples(null)


def test_blank_line_between_texts_is_refused(tmp_path):
    path = tmp_path / "texts.txt"
    path.write_text("first text\nsecond text\n   \nthird text\n\n")
    reading_refused(path, re.escape(str(path)), "line 3 is blank", "remove the blank lines")
    assert len(read_examples(path, limit=2)) == 2  # the texts asked for are all before it


def test_glue_reader_names_the_bad_row(tmp_path):
    (tmp_path / "sst2").mkdir()
    (tmp_path / "sst2" / "dev.tsv").write_text("sentence\tlabel\ngood\t1\nbad\tnegative\n")
    with unchanged(tmp_path), refused(InvalidFileError, "line 3", "'negative', not a label index"):
        read_sst2("dev", root=tmp_path)


# ---------------------------------------------------------------- explanation files


@pytest.fixture(scope="module")
def saved(classifier, tmp_path_factory):
    """A real explanation saved to disk, and its JSON."""
    path = tmp_path_factory.mktemp("saved") / "e.json"
    classifier.explain("a gripping film", target="all", layer="all").save(path)
    return path, json.loads(path.read_text())


def _write(folder: Path, data, name: str = "e.json") -> Path:
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_another_programs_json(tmp_path):
    path = _write(tmp_path, {"name": "report", "rows": [1, 2]})
    with (
        unchanged(tmp_path),
        refused(
            InvalidFileError,
            re.escape(str(path)),
            "not a normxlogit explanation",
            "'tokens', 'scores', 'label', 'method'",
            "keys found: name, rows",
            "Explanation.save",
        ),
    ):
        Explanation.load(path)


def test_an_evaluation_result_is_pointed_to_its_loader(tmp_path):
    path = _write(tmp_path, {"protocol": {}, "rows": []})
    with refused(InvalidFileError, r"EvaluationResult\.load"):
        normxlogit.load_explanations(path)


def test_truncated_file(saved, tmp_path):
    _, data = saved
    text = json.dumps(data)
    path = _write(tmp_path, text[: len(text) // 2])
    with (
        unchanged(tmp_path),
        refused(InvalidFileError, re.escape(str(path)), "not complete JSON", "cut off", "save"),
    ):
        Explanation.load(path)


def test_broken_json_in_the_middle(tmp_path):
    path = _write(tmp_path, '{"tokens": ["a"],\n "scores": [1.0,, 2.0]}')
    with refused(InvalidFileError, "not complete JSON", "line 2, column"):
        Explanation.load(path)


def test_explanation_file_that_is_not_utf8(tmp_path):
    path = tmp_path / "e.json"
    path.write_bytes(b'{"tokens": ["caf\xe9"]}')
    with refused(InvalidFileError, "not UTF-8", "0xE9", "line 1", "byte offset 16"):
        Explanation.load(path)


def _edit(data: dict, **changes) -> dict:
    return {**json.loads(json.dumps(data)), **changes}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda d: {"tokens": d["tokens"][:-1]}, r"4 tokens but scores .* 5 on the token axis"),
        (lambda d: {"targets": d["targets"][:2]}, r"2 targets but scores .* 3 score columns"),
        (lambda d: {"layers": d["layers"][:1]}, r"1 layers but scores .* 3 on the layer axis"),
        (lambda d: {"special": d["special"][:2]}, r"5 tokens but 2 entries in 'special'"),
        (lambda d: {"word_ids": [0]}, r"5 tokens but 1 entries in 'word_ids'"),
        (lambda d: {"token_texts": ["a"]}, r"5 tokens but 1 entries in 'token_texts'"),
        (lambda d: {"scores": [[1.0, 2.0], [3.0]]}, "not a rectangular array"),
        (lambda d: {"scores": "high"}, "'scores' must be an array, not a string"),
        (lambda d: {"layers": None}, r"scores of shape \[3, 5, 3\] are not \[tokens\]"),
        (lambda d: {"tokens": [1, 2, 3, 4, 5]}, "'tokens' must be a list of strings"),
    ],
)
def test_explanation_whose_parts_do_not_fit(saved, tmp_path, change, problem):
    _, data = saved
    assert np.asarray(data["scores"]).shape == (3, 5, 3)
    path = _write(tmp_path, _edit(data, **change(data)))
    with (
        unchanged(tmp_path),
        refused(InvalidFileError, re.escape(str(path)), problem, "Explanation.save"),
    ):
        Explanation.load(path)


def test_list_file_names_the_bad_explanation(saved, tmp_path):
    _, data = saved
    path = _write(tmp_path, [data, _edit(data, tokens=data["tokens"][:2])])
    with refused(InvalidFileError, r"\(explanation 1\)", "2 tokens"):
        normxlogit.load_explanations(path)
    with refused(InvalidFileError, "does not exist"):
        Explanation.load(tmp_path / "missing.json")


def test_constructing_an_inconsistent_explanation(saved):
    _, data = saved
    with refused(InvalidInputError, "inconsistent explanation", "token axis"):
        Explanation(
            text="a film",
            tokens=["[CLS]", "a", "[SEP]"],
            scores=np.zeros(4),
            targets=["x"],
            label="x",
            probs={},
            method="logat",
        )


# -------------------------------------------------------------------- token as text


def _gpt2_style() -> Explanation:
    """Byte-level pieces of " Paris", "北京" (two pieces each) and a newline."""
    tokens = ["The", "ĠParis", "Ġ", "åĮ", "Ĺ", "äº", "¬", "Ċ"]
    return Explanation(
        text="The Paris 北京\n",
        tokens=tokens,
        scores=np.array([0.1, 2.0, 0.2, 0.5, 3.0, 0.3, 0.4, -1.0]),
        targets=["ĠLondon"],
        label="ĠLondon",
        probs={"ĠLondon": 0.6, "Ċ": 0.3},
        method="logat",
        special=[False] * len(tokens),
        token_texts=TokenTexts.guess(tokens),
        output_texts={"ĠLondon": " London", "Ċ": "\n"},
    )


def _terminal(explanation: Explanation) -> str:
    console = Console(record=True, width=200, color_system="truecolor")
    console.print(explanation)
    return console.export_text()


def test_token_texts_decode_byte_level_pieces():
    explanation = _gpt2_style()
    assert explanation.token_texts == ["The", " Paris", " ", "北", "", "京", "", "\n"]
    assert "".join(explanation.token_texts) == explanation.text
    assert explanation.label_text == " London"
    assert explanation.target_texts == [" London"]


def test_every_view_shows_text_not_pieces(tmp_path):
    explanation = _gpt2_style()
    terminal = _terminal(explanation)
    page = explanation.to_html()
    for shown in (terminal, page):
        assert not MOJIBAKE.search(shown), shown
        assert "Paris" in shown and "北" in shown and "京" in shown and "London" in shown
        assert "\u21b5" in shown  # the newline token, made visible
    assert "北 · 京 ·" in terminal  # a piece that only continues a character: "·"
    # top tokens: a continuation piece gives the character it belongs to
    assert explanation.top_tokens(2) == [("北", 3.0), (" Paris", 2.0)]
    frame = explanation.to_frame()
    assert list(frame.columns[:3]) == ["position", "token", "text"]
    assert frame.text.tolist() == explanation.token_texts
    assert frame.token.tolist() == explanation.tokens  # the tokenizer's own pieces
    # saved and loaded, it renders the same without a tokenizer
    loaded = Explanation.load(explanation.save(tmp_path / "e.json"))
    assert loaded.token_texts == explanation.token_texts
    assert loaded.output_texts == explanation.output_texts
    assert _terminal(loaded) == terminal and loaded.to_html() == page


def test_files_without_token_texts_get_them_guessed(tmp_path):
    data = _gpt2_style().to_dict()
    del data["token_texts"]
    loaded = Explanation.load(_write(tmp_path, data))
    assert loaded.token_texts == _gpt2_style().token_texts
    wordpiece = Explanation.from_dict({**data, "tokens": ["[CLS]", "un", "##believ"] + ["x"] * 5})
    assert wordpiece.token_texts[:3] == ["[CLS]", "un", "##believ"]


def test_sentencepiece_marks_and_byte_fallback():
    texts = TokenTexts.guess(["<s>", "▁Paris", "<0xE5>", "<0xA4>", "<0xA7>", "<0xFF>"], [True])
    assert texts == ["<s>", " Paris", "大", "", "", "<0xFF>"]


def test_bytes_cut_inside_a_character_show_as_hex():
    assert TokenTexts.guess(["Ġcaf", "Ã"]) == [" caf", "<0xC3>"]


@functools.cache
def byte_level_tokenizer():
    """A tiny byte-level BPE tokenizer (GPT-2's alphabet, a few merges)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {c: i for i, c in enumerate(sorted(_BYTE_LEVEL, key=_BYTE_LEVEL.get))}
    merges = [("Ġ", "P"), ("ĠP", "a"), ("ĠPa", "r"), ("ĠPar", "i"), ("ĠPari", "s"), ("å", "¤")]
    for first, second in merges:
        vocab[first + second] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    return T.PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|endoftext|>", unk_token="<|endoftext|>"
    )


def test_byte_level_model_end_to_end():
    tokenizer = byte_level_tokenizer()
    config = T.GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        network = T.GPT2LMHeadModel(config).eval()
    model = normxlogit.load((network, tokenizer))
    explanation = model.explain("Hi Paris 大家", target=[" Paris", "å¤"])
    assert explanation.tokens[2] == "ĠParis"  # ids round-trip: the tokenizer's own pieces
    assert explanation.token_texts == ["H", "i", " Paris", " ", "大", "", "家", "", ""]
    assert explanation.targets == ["ĠParis", "å¤"]
    assert explanation.target_texts == [" Paris", "<0xE5><0xA4>"]
    assert explanation.label_text == explanation.text_of(explanation.label)
    for shown in (_terminal(explanation), explanation.to_html()):
        assert "Paris" in shown and "大" in shown and "家" in shown
        assert "Ġ" not in shown and "å" not in shown
    # the tokenizer's own tokens still name targets: explaining them again gives the same
    again = model.explain("Hi Paris 大家", target=explanation.targets)
    np.testing.assert_allclose(again.scores, explanation.scores)
    # a zero-width space is a token of a byte-level model: explained, not refused
    assert model.explain("\u200b").token_texts == ["\u200b", "", ""]


def test_wordpiece_tokens_and_labels_are_unchanged(classifier):
    explanation = classifier.explain("unbelievably good", target="all")
    assert explanation.token_texts == explanation.tokens  # WordPiece keeps its ## pieces
    assert explanation.output_texts == {}
    assert explanation.target_texts == explanation.targets
    words = explanation.aggregate_words()
    assert words.token_texts == words.tokens


@pytest.mark.real
def test_smollm2_shows_text_in_terminal_and_html(tmp_path):
    model = normxlogit.load("smollm2-135m")
    capital = model.explain("The capital of France is")
    assert capital.label == "ĠParis" and capital.label_text == " Paris"
    assert capital.tokens[1] == "Ġcapital" and capital.token_texts[1] == " capital"
    assert all("Ġ" not in token for token, _ in capital.top_tokens(5))
    chinese = model.explain("北京是中国的首都")
    assert "".join(chinese.token_texts) == "北京是中国的首都"
    for explanation in (capital, chinese):
        for shown in (_terminal(explanation), explanation.to_html()):
            assert not MOJIBAKE.search(shown), shown
    assert "北" in _terminal(chinese) and "首" in chinese.to_html()
    assert "Paris" in _terminal(capital) and "Paris" in capital.to_html()
    loaded = Explanation.load(chinese.save(tmp_path / "c.json"))
    assert loaded.to_html() == chinese.to_html()


def test_fresh_tokenizer_is_untouched():
    """The display texts never change the tokenizer (its tokens still round-trip)."""
    tokenizer = fresh_tokenizer()
    ids = tokenizer("a gripping film")["input_ids"]
    TokenTexts(tokenizer)(tokenizer.convert_ids_to_tokens(ids))
    assert tokenizer.convert_tokens_to_ids(tokenizer.convert_ids_to_tokens(ids)) == ids


@pytest.mark.parametrize(
    ("setting", "value", "named"),
    [("samples", "abc", "an integer"), ("samples", 1.5, "an integer"), ("ratios", "x", "list")],
)
def test_a_protocol_built_directly_converts_or_refuses_its_settings(setting, value, named):
    with refused(InvalidOptionError, f"protocol setting {setting}=", named, "default"):
        normxlogit.Protocol(**{setting: value})
    assert normxlogit.Protocol(samples="5", ratios=[0.2, 0.5]).samples == 5
