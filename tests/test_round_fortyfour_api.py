"""Round 44 (a): the Python API and the command line.

- P01: a ``.ndjson`` data file is read as JSON lines (the same format; it was read as one
  text per line, each raw JSON line explained and scored), and ``explain --input``
  refuses it as it refuses ``.jsonl``.
- P02: a compressed data or text file (gzip, bzip2, xz, zstd, zip) is refused as
  compressed, with the command that decompresses it (it was "not UTF-8", with advice to
  re-encode the compressed bytes from Latin-1).
- P03: ``load(prompt=...)`` given a str, a dict or a tuple is refused in one line with the
  ``ChatPrompt`` that fixes it (it was an AttributeError from inside the adapter).
- P04: ``explain_steps=[]`` is refused in one line (it was an IndexError).
- P05: ``explain_generations`` checks every prompt before generating any, naming a bad one
  by its index in the list (it named it "text 0" of its group, after the others ran).
- P06: ``explain_generations`` takes one prompt given as a str as one prompt, as
  ``explain_texts`` does (it explained each character as a prompt).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import zipfile
from pathlib import Path

import pytest

from normxlogit.common.errors import InvalidFileError, InvalidInputError

from .conftest import build_model, fresh_tokenizer, invoke_in

ROWS = '{"text": "a good movie", "label": 1}\n{"text": "bad film", "label": 0}\n'


def _said(result) -> str:
    return " ".join(result.output.split())


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize("name", ["d.ndjson", "d.NDJSON"])
def test_p01_ndjson_is_read_as_json_lines(tmp_path, name):
    from normxlogit.data.files import read_examples

    path = tmp_path / name
    path.write_text(ROWS)
    examples = read_examples(path)
    assert [(e.text, e.label) for e in examples] == [("a good movie", 1), ("bad film", 0)]


def test_p01_explain_input_refuses_ndjson_as_it_refuses_jsonl(tmp_path, tiny_classifier):
    (tmp_path / "d.ndjson").write_text(ROWS)
    result = invoke_in(tmp_path, "explain", "--input", "d.ndjson", "-m", str(tiny_classifier))
    said = _said(result)
    assert result.exit_code != 0, said
    assert "--input d.ndjson: its lines are JSON, not texts" in said
    assert "normxlogit evaluate d.ndjson" in said


def test_p01_evaluate_scores_an_ndjson_files_labels(tmp_path, tiny_classifier):
    (tmp_path / "d.ndjson").write_text(ROWS)
    args = ["-m", str(tiny_classifier), "--method", "random", "--metric", "comp_acc"]
    result = invoke_in(tmp_path, "evaluate", "d.ndjson", *args)
    said = _said(result)
    assert result.exit_code == 0, said
    assert "no label column" not in said and "comp_acc" in said


# ------------------------------------------------------------------ P02
def _zip(content: bytes) -> bytes:
    import io

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("d.csv", content)
    return buffer.getvalue()


CSV = b"text,label\na good movie,1\nbad film,0\n"
COMPRESSIONS = [
    ("d.csv.gz", gzip.compress, "gzip-compressed", "gunzip -c d.csv.gz > d.csv"),
    ("d.csv.bz2", bz2.compress, "bzip2-compressed", "bunzip2 -c d.csv.bz2 > d.csv"),
    ("d.csv.xz", lzma.compress, "xz-compressed", "unxz -c d.csv.xz > d.csv"),
    ("d.csv.zip", _zip, "a zip archive", "unzip -p d.csv.zip > d.csv"),
    # zstd's frame magic, then bytes no text decoder reads as the rows
    ("d.csv.zst", lambda raw: b"\x28\xb5\x2f\xfd" + raw, "zstd-compressed", "zstd -dc"),
]


@pytest.mark.parametrize(("name", "pack", "kind", "command"), COMPRESSIONS)
def test_p02_a_compressed_data_file_is_refused_as_compressed(
    tmp_path, monkeypatch, name, pack, kind, command
):
    from normxlogit.data.files import read_examples

    monkeypatch.chdir(tmp_path)
    Path(name).write_bytes(pack(CSV))
    with pytest.raises(InvalidFileError) as refused:
        read_examples(name)
    said = str(refused.value)
    assert said.startswith(f"{name} is {kind}: decompress it first (`{command}")
    assert "iconv" not in said and "UTF-8" not in said


def test_p02_a_compressed_file_with_a_plain_name_is_decompressed_beside_it(tmp_path):
    from normxlogit.data.files import read_examples

    path = tmp_path / "t.txt"
    path.write_bytes(gzip.compress(b"a good movie\n"))
    with pytest.raises(InvalidFileError, match=r"> \S*plain-t\.txt`\), then pass \S*plain-t"):
        read_examples(path)


def test_p02_a_text_starting_like_bzip2_is_still_text(tmp_path):
    from normxlogit.data.files import read_examples

    path = tmp_path / "t.txt"
    path.write_text("BZh9 is no compression here\n")
    assert read_examples(path)[0].text == "BZh9 is no compression here"


def test_p02_explain_input_refuses_a_compressed_text_file(tmp_path, tiny_classifier):
    (tmp_path / "t.txt.gz").write_bytes(gzip.compress(b"a good movie\n"))
    result = invoke_in(tmp_path, "explain", "--input", "t.txt.gz", "-m", str(tiny_classifier))
    said = _said(result)
    assert result.exit_code != 0, said
    assert "t.txt.gz is gzip-compressed: decompress it first (`gunzip -c t.txt.gz > t.txt`)" in said
    assert "iconv" not in said


def test_p02_compressed_standard_input_is_decompressed_in_the_pipe(tiny_classifier):
    from typer.testing import CliRunner

    from normxlogit.cli import app

    result = CliRunner().invoke(
        app, ["explain", "-m", str(tiny_classifier)], input=gzip.compress(b"a good movie\n")
    )
    said = _said(result)
    assert result.exit_code != 0, said
    assert "standard input is gzip-compressed: decompress it first (pipe it through" in said
    assert "iconv" not in said


def test_p02_a_compressed_saved_explanation_is_refused_as_compressed(bert, tmp_path):
    from normxlogit.explanations.io import load_explanations

    path = tmp_path / "e.json"
    bert.explain("a good movie", method="random").save(path)
    packed = tmp_path / "e.json.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(InvalidFileError, match="e.json.gz is gzip-compressed: decompress it"):
        load_explanations(packed)


# ------------------------------------------------------------------ P03
@pytest.mark.parametrize(
    ("prompt", "fix"),
    [
        ("Text: {text}", "not a str; give prompt=normxlogit.ChatPrompt(user='Text: {text}')"),
        (
            {"system": "x", "user": "Text: {text}"},
            "not a dict; give prompt=normxlogit.ChatPrompt(system='x', user='Text: {text}')",
        ),
        (("x", "Text: {text}"), "not a tuple; give prompt=normxlogit.ChatPrompt(system="),
    ],
)
@pytest.mark.parametrize("label_words", [None, ["good", "bad"]])
def test_p03_a_prompt_that_is_no_chat_prompt_is_refused(prompt, fix, label_words):
    import normxlogit as nx

    pair = (build_model("llama", "causal_lm"), fresh_tokenizer())
    with pytest.raises(InvalidInputError, match="prompt= takes a normxlogit.ChatPrompt, ") as e:
        nx.load(pair, prompt=prompt, label_words=label_words)
    assert fix in str(e.value)


def test_p03_the_prompt_is_refused_before_the_weights_are_read():
    import normxlogit as nx

    with pytest.raises(InvalidInputError, match="prompt= takes a normxlogit.ChatPrompt"):
        nx.load("no-such-model-anywhere", prompt="Text: {text}")


# ------------------------------------------------------------------ P04
EMPTY = "explain_steps is empty: give at least one step number"


def test_p04_empty_explain_steps_are_refused_by_explain(gpt2):
    with pytest.raises(InvalidInputError, match=EMPTY):
        gpt2.explain("a good movie", continuation=" good movie", explain_steps=[])
    with pytest.raises(InvalidInputError, match=EMPTY):
        gpt2.explain("a good movie", generate=True, max_new_tokens=2, explain_steps=[])


def test_p04_empty_explain_steps_are_refused_by_explain_generations(gpt2):
    from normxlogit import workflows

    with pytest.raises(InvalidInputError, match=EMPTY):
        workflows.explain_generations(
            gpt2, ["a good movie"], ["random"], [" good movie"], explain_steps=[]
        )


def test_p04_explain_steps_from_a_generator_are_read_once(gpt2):
    from normxlogit import workflows

    made = workflows.explain_generations(
        gpt2, ["a good movie"], ["random"], [" good movie"], explain_steps=(s for s in [0])
    )
    assert len(made.explanations["random"]) == 1


# ------------------------------------------------------------------ P05
@pytest.mark.parametrize(
    ("bad", "named"),
    [
        (None, "text 2 is None"),
        (5, "text 2 is an int"),
        (float("nan"), "text 2 is a float; .*NaN, a missing cell"),
    ],
)
def test_p05_every_prompt_is_checked_before_any_generation(gpt2, monkeypatch, bad, named):
    from normxlogit import workflows

    def no_work(*args, **kwargs):
        raise AssertionError("a prompt was explained before the bad one was refused")

    monkeypatch.setattr(workflows, "explain", no_work)
    with pytest.raises(InvalidInputError, match=named):
        workflows.explain_generations(
            gpt2, ["a good movie", "the plot", bad], ["random"], max_new_tokens=2
        )


# ------------------------------------------------------------------ P06
def test_p06_one_prompt_given_as_a_str_is_one_prompt(gpt2):
    from normxlogit import workflows

    made = workflows.explain_generations(gpt2, "a good movie", ["random"], max_new_tokens=1)
    assert [g.prompt for g in made.explanations["random"]] == ["a good movie"]
    made = workflows.explain_generations(gpt2, "a good movie", ["random"], " good film")
    assert [g.prompt for g in made.explanations["random"]] == ["a good movie"]
