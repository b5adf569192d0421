"""Round 55 (a): outputs through links, saved files read back, data-file evidence values.

- F01: ``train -o loop/m`` (a link loop on the output's way) ended in a RuntimeError
  traceback from ``Path.resolve()``.
- F02: ``SanityResult.save("….parquet")`` said "File exists" for a folder that is a link
  loop, a file or a link to nowhere (the .json and .csv saves named them).
- F03: Python ``save()`` / ``plot()`` onto a name that is itself a link loop or a link into
  a missing folder said "Too many levels of symbolic links" / "No such file or directory".
- F06: ``SanityResult.load`` of a row number past float64 (10**400): an OverflowError.
- F07: ``Explanation.load`` took ``"value": 10**400``; ``to_html()`` then overflowed.
- F14: a data file's evidence_mask / evidence holding a decimal was called "a list" (cut
  before the decimal), the stray value not named.
- F15: a link into another link's loop (deeploop -> loop/x, loop -> loop) was called a
  loop itself; the link that loops was not named.
"""

from __future__ import annotations

import json
import os

import pytest

import normxlogit as nx
from normxlogit.common.errors import InvalidFileError, OutputPathError
from normxlogit.common.outputs import check_output_file, save_figure, write_atomically
from normxlogit.sanity import SanityResult

from .conftest import invoke_in, sanity_frame
from .conftest import said as _said


@pytest.fixture
def links(tmp_path, monkeypatch):
    """In ``tmp_path`` (the current folder): ``loop`` -> itself, ``dl`` -> nowhere,
    ``afile`` (a file), ``me.json`` -> itself, ``d.json`` -> gone/t.json (no gone),
    ``deeploop`` -> loop/x (through the loop)."""
    monkeypatch.chdir(tmp_path)
    os.symlink("loop", "loop")
    os.symlink("missing", "dl")
    (tmp_path / "afile").write_text("")
    os.symlink("me.json", "me.json")
    os.symlink("gone/t.json", "d.json")
    os.symlink("loop/x", "deeploop")
    return tmp_path


@pytest.fixture
def result():
    return SanityResult(sanity_frame())


# ------------------------------------------------------------------ F01
@pytest.mark.parametrize("output", ["loop/m", "loop", "deeploop/m"])
def test_f01_train_output_through_a_link_loop_is_refused_in_one_line(links, output):
    from normxlogit.training import check_output

    with pytest.raises(OutputPathError) as caught:
        check_output("minilm-sst2", output, False)
    said = str(caught.value)
    assert "link loop" in said and "\n" not in said, said
    assert ("output folder loop" if output == "loop" else f"output folder {output}") in said


def test_f01_train_in_the_cli_names_the_loop_before_any_work(links):
    result = invoke_in(links, "train", "minilm-sst2", "-o", "loop/m", "--train-size", "2")
    said = _said(result)
    assert result.exit_code != 0 and "Traceback" not in said, said
    assert "the folder loop is a link loop" in said and "rm loop" in said, said


def test_f01_overwrite_builtin_with_a_looping_output_is_refused_in_one_line(links):
    from normxlogit.training import check_output

    with pytest.raises(OutputPathError, match="--overwrite-builtin replaces the built-in"):
        check_output("minilm-sst2", "loop", True)


# ------------------------------------------------------------------ F02
@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("loop/x.parquet", "the folder loop is a link loop"),
        ("afile/x.parquet", "afile is a file, not a folder"),
        ("dl/x.parquet", "the folder dl is a link to nowhere"),
    ],
    ids=["loop", "file", "dangling"],
)
def test_f02_a_parquet_save_names_the_folder_as_the_others_do(links, result, name, want):
    pytest.importorskip("pyarrow")
    with pytest.raises(OutputPathError) as caught:
        result.save(name)
    said = str(caught.value)
    assert want in said and "File exists" not in said, said
    with pytest.raises(OutputPathError) as json_caught:  # the .json save, word for word
        result.save(name.replace(".parquet", ".json"))
    assert str(json_caught.value) == said.replace(".parquet", ".json")


def test_f02_a_parquet_save_still_creates_a_new_folder(links, result):
    pytest.importorskip("pyarrow")
    assert result.save("new/sub/s.parquet").is_file()
    assert len(SanityResult.load("new/sub/s.parquet").frame) == len(result.frame)


# ------------------------------------------------------------------ F03
def _writers(explanation, result):
    """Every Python save: its suffix, and a call writing a given name."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    return {
        "explanation": (".json", explanation.save),
        "explanations": (".json", lambda name: nx.save_explanations([explanation], name)),
        "sanity_csv": (".csv", result.save),
        "sanity_plot": (".png", result.plot),
        "write_atomically": (".txt", lambda name: write_atomically(name, "x")),
        "save_figure": (".png", lambda name: save_figure(plt.figure(), name)),
    }


WRITERS = ["explanation", "explanations", "sanity_csv", "sanity_plot"]
WRITERS += ["write_atomically", "save_figure"]


def _refused_through_link(labelled, result, writer, stem, target):
    """``writer``'s save onto ``stem + suffix``, a link to ``target + suffix`` (to itself
    where ``target`` is empty; the ``.json`` one is made by the ``links`` fixture): the
    name, suffix, writer and refusal."""
    explanation = nx.explain(labelled, "a good film", method="random")
    suffix, write = _writers(explanation, result)[writer]
    name = f"{stem}{suffix}"
    if suffix != ".json":
        os.symlink(f"{target}{suffix}" if target else name, name)
    with pytest.raises(OutputPathError) as caught:
        write(name)
    return name, suffix, write, str(caught.value)


@pytest.mark.parametrize("writer", WRITERS, ids=WRITERS)
def test_f03_a_name_that_is_a_link_loop_is_named(links, labelled, result, writer):
    name, suffix, write, said = _refused_through_link(labelled, result, writer, "me", "")
    assert f"cannot write {name}: {name} is a link loop" in said, said
    assert f"remove the link (rm {name})" in said and "Too many levels" not in said, said
    os.remove(name)  # the advised fix: the save goes ahead
    write(name)
    assert (links / name).is_file() and not (links / name).is_symlink()


@pytest.mark.parametrize("writer", WRITERS, ids=WRITERS)
def test_f03_a_link_into_a_missing_folder_is_named(links, labelled, result, writer):
    name, suffix, write, said = _refused_through_link(labelled, result, writer, "d", "gone/t")
    gone = links / "gone"
    assert f"cannot write {name} (a link to {gone / ('t' + suffix)})" in said, said
    assert f"the folder {gone} does not exist; create it first (mkdir -p {gone})" in said
    assert "No such file" not in said, said
    gone.mkdir()  # the advised fix: written through the link
    write(name)
    assert (links / name).is_symlink() and (gone / f"t{suffix}").is_file()


def test_f03_the_cli_and_python_say_the_same(links):
    with pytest.raises(OutputPathError) as python:
        write_atomically("me.json", "x")
    with pytest.raises(OutputPathError) as cli:
        check_output_file("me.json", "--output")
    lead = "cannot write me.json: me.json"
    assert str(python.value).removeprefix(lead) == str(cli.value).removeprefix("--output me.json")


# ------------------------------------------------------------------ F06
@pytest.mark.parametrize("key", ["spearman", "top_k", "step", "instance"])
def test_f06_a_saved_sanity_row_past_float64_is_refused_in_one_line(tmp_path, result, key):
    result.save(tmp_path / "s.json")
    data = json.loads((tmp_path / "s.json").read_text())
    data["rows"][1][key] = 10**400
    (tmp_path / "s2.json").write_text(json.dumps(data))
    with pytest.raises(InvalidFileError) as caught:
        SanityResult.load(tmp_path / "s2.json")
    said = str(caught.value)
    assert f"rows[1]: {key} is 10000000000000000000... (401 digits), but" in said, said


@pytest.mark.parametrize("key", ["spearman", "top_k", "step", "instance"])
def test_f06_a_csv_cell_past_float64_is_refused_in_one_line(tmp_path, key):
    frame = sanity_frame().astype(object)
    if key in ("spearman", "top_k"):  # n/a elsewhere: beside decimals pandas reads -inf
        frame[key] = None
    frame.loc[2, key] = "-" + "9" * 400
    frame.to_csv(tmp_path / "s.csv", index=False)
    with pytest.raises(InvalidFileError) as caught:
        SanityResult.load(tmp_path / "s.csv")
    said = str(caught.value)
    want = f"row 2 (line 4 of its CSV): {key} is -9999999999999999999... (400 digits), but"
    assert want in said, said


def test_f06_a_frame_given_in_python_is_refused_too():
    frame = sanity_frame().astype(object)
    frame.loc[0, "spearman"] = 10**400
    with pytest.raises(nx.NormXLogitError, match=r"spearman is 1000.*\(401 digits\)"):
        SanityResult(frame)


def test_f06_ordinary_numbers_are_still_read(tmp_path, result):
    frame = sanity_frame().astype(object)
    frame.loc[0, "spearman"] = 1
    assert SanityResult(frame).frame["spearman"].tolist() == [1, 0.5, 0.5, 0.5]


# ------------------------------------------------------------------ F07
@pytest.mark.parametrize("value", [10**400, -(10**400)], ids=["huge", "huge_negative"])
def test_f07_a_saved_value_past_float64_is_refused_at_load(tmp_path, labelled, value):
    nx.explain(labelled, "a good film", method="random").save(tmp_path / "e.json")
    data = json.loads((tmp_path / "e.json").read_text())
    data["value"] = value
    (tmp_path / "e2.json").write_text(json.dumps(data))
    with pytest.raises(InvalidFileError) as caught:
        nx.Explanation.load(tmp_path / "e2.json")
    said = str(caught.value)
    assert "'value' must be a finite number, not" in said and "(401 digits)" in said, said


def test_f07_a_finite_value_still_loads_and_renders(tmp_path, labelled):
    nx.explain(labelled, "a good film", method="random").save(tmp_path / "e.json")
    data = json.loads((tmp_path / "e.json").read_text())
    data["value"] = 3
    (tmp_path / "e2.json").write_text(json.dumps(data))
    loaded = nx.Explanation.load(tmp_path / "e2.json")
    assert loaded.value == 3 and "3.000" in loaded.to_html()


# ------------------------------------------------------------------ F14
@pytest.mark.parametrize(
    ("cell", "want"),
    [
        ([0] * 39 + [0.5], "evidence_mask[39] is 0.5, not 0 or 1"),
        (" ".join(["0"] * 39 + ["0.5"]), "evidence_mask[39] is 0.5, not 0 or 1"),
        ([0, "x"] + [0] * 38, "evidence_mask[1] is 'x', not 0 or 1"),
    ],
    ids=["json", "cell", "string"],
)
def test_f14_a_stray_mask_value_is_named_with_its_place(tmp_path, cell, want):
    from normxlogit.data.files import read_examples

    path = tmp_path / "m.jsonl"
    row = {"text": " ".join(["w"] * 40), "label": "pos", "evidence_mask": cell}
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(InvalidFileError) as caught:
        read_examples(path)
    said = str(caught.value)
    assert want in said and "is a list" not in said, said
    assert 'give one 0 or 1 per word, e.g. "0 1 1 0"' in said


def test_f14_a_decimal_word_index_is_named(tmp_path):
    from normxlogit.data.files import read_examples

    path = tmp_path / "e.tsv"
    path.write_text("text\tlabel\tevidence\na fine film\t1\t[0, 2.5]\n")
    with pytest.raises(InvalidFileError, match=r"evidence\[1\] is 2\.5, not a whole word index"):
        read_examples(path)


# ------------------------------------------------------------------ F15
def test_f15_a_link_into_a_loop_names_the_link_that_loops(links):
    with pytest.raises(OutputPathError) as caught:
        check_output_file("deeploop/x.json", "--output")
    said = str(caught.value)
    assert "the folder deeploop is a link into a link loop" in said, said
    assert "leads through loop, a link that leads back to itself" in said, said
    assert "rm deeploop" in said and "rm loop removes the loop itself" in said, said
    os.remove("deeploop")  # the advised fix: the write goes ahead
    assert write_atomically("deeploop/x.json", "x").is_file()


def test_f15_python_save_and_the_cli_name_it_too(links, labelled):
    explanation = nx.explain(labelled, "a good film", method="random")
    with pytest.raises(OutputPathError, match="leads through loop, a link that leads back"):
        explanation.save("deeploop/x.json")
    result = invoke_in(links, "explain", "a good film", "-m", "x", "-o", "deeploop/x.json")
    assert "leads through loop" in _said(result), _said(result)
    os.symlink("loop/y.json", "into.json")  # the file itself a link through the loop
    with pytest.raises(OutputPathError, match=r"into\.json is a link into a link loop"):
        explanation.save("into.json")


def test_f15_a_link_on_the_loop_is_still_called_a_loop(links):
    os.symlink("loopb", "loopa")
    os.symlink("loopa", "loopb")
    with pytest.raises(OutputPathError) as caught:
        check_output_file("loopa/x.json", "--output")
    said = str(caught.value)
    assert "the folder loopa is a link loop (its target loopb leads back" in said, said
    assert "remove the link (rm loopa), or write elsewhere" in said, said
