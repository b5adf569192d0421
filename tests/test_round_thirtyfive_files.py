"""Round 35, probe b: saved sanity curves and a generation contrast's refusal.

- P04: the refusal of a generation contrast with another token count than the
  continuation named Python's ``continuation=`` on the page, and showed the tokens in the
  tokenizer's spelling (``Ġb``): the page names its continuation box, the tokens are shown
  as text.
- P05: ``EvaluationResult.load`` read a file whose ``sanity_spearman`` curve lost its last
  randomisation step for every text and method, while its ``sanity_top_k`` held it: one pass
  randomises the same steps for every sanity metric, so it is refused.
- P06/P07: ``SanityResult.load`` of a ``.parquet`` with a bool ``step`` raised pandas'
  OverflowError, and read a bool ``spearman`` as 0 and 1: refused in one line naming the
  file and column.
- P08: a ``.csv``/``.parquet`` sanity result in which one method lacks the last step
  another method of its mode holds was judged at a partly random model: refused.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest

import normxlogit
from normxlogit import EvaluationResult
from normxlogit.common.errors import InvalidFileError, InvalidInputError
from normxlogit.sanity import SanityResult

from .conftest import explainable, sanity_frame

TEXTS = ["a good film indeed", "terrible boring movie"]


# ------------------------------------------------------------------ P04
@pytest.fixture(scope="module")
def byte_level_model():
    import transformers as T

    from .test_bad_inputs_api import byte_level_tokenizer

    tokenizer = byte_level_tokenizer()
    config = T.GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        network = T.GPT2LMHeadModel(config).eval()
    return normxlogit.load((network, tokenizer))


def _length_refusal(model) -> str:
    with pytest.raises(InvalidInputError) as raised:
        model.explain("Hi", continuation=" Paris", contrast=" Parix")
    return str(raised.value)


def test_p04_a_contrast_of_another_length_shows_its_tokens_as_text(byte_level_model):
    message = _length_refusal(byte_level_model)
    assert "the contrast is 2 tokens (' Pari', 'x') but the continuation explained is 1" in message
    assert "Ġ" not in message


def test_p04_the_page_names_its_continuation_box(byte_level_model):
    from normxlogit.serve.phrasing import page_named

    shown = page_named(_length_refusal(byte_level_model))
    assert "continuation=" not in shown and "(pass" not in shown
    assert "(fix the explained text under 'or explain this continuation')" in shown
    page = Path(normxlogit.__file__).parent / "serve" / "static" / "index.html"
    assert 'or explain this continuation <input id="continuation"' in page.read_text()


def test_p04_the_command_line_names_its_flag(byte_level_model):
    from normxlogit.cli.helpers import flags_named

    shown = flags_named(_length_refusal(byte_level_model))
    assert "(pass --continuation to fix the explained text)" in shown


# ------------------------------------------------------------------ P05
@pytest.fixture(scope="module")
def saved_sanity_evaluation(tmp_path_factory) -> Path:
    model = explainable("bert", "classification")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        explained = {name: model.explain(TEXTS, method=name) for name in ("normxlogit", "random")}
        result = normxlogit.evaluate(
            model,
            explained,
            metrics=["sanity_spearman", "sanity_top_k"],
            progress=False,
        )
    return result.save(tmp_path_factory.mktemp("r35-eval") / "ev.json")


def _without(source: Path, folder: Path, drop) -> Path:
    data = json.loads(source.read_text())
    data["rows"] = [row for row in data["rows"] if not drop(row)]
    path = folder / "cut.json"
    path.write_text(json.dumps(data))
    return path


def _last_step(source: Path) -> float:
    return max(row["x"] for row in json.loads(source.read_text())["rows"])


def test_p05_a_whole_file_loads(saved_sanity_evaluation):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        EvaluationResult.load(saved_sanity_evaluation)


def test_p05_a_sanity_curve_cut_for_every_text_and_method_is_refused(
    saved_sanity_evaluation, tmp_path
):
    last = _last_step(saved_sanity_evaluation)
    path = _without(
        saved_sanity_evaluation,
        tmp_path,
        lambda row: row["metric"] == "sanity_spearman" and row["x"] == last,
    )
    with pytest.raises(InvalidFileError) as raised:
        EvaluationResult.load(path)
    message = str(raised.value)
    assert str(path) in message and "\n" not in message
    said = f"the sanity_spearman curve of method 'normxlogit' on text 0 has no row at x = {last:g}"
    assert said in message
    assert "(a randomisation step the file's other sanity curves hold)" in message


def test_p05_one_methods_sanity_curves_cut_are_refused(saved_sanity_evaluation, tmp_path):
    """Both metrics of one method cut: the other method's curves still hold the step."""
    last = _last_step(saved_sanity_evaluation)
    path = _without(
        saved_sanity_evaluation,
        tmp_path,
        lambda row: row["method"] == "random" and row["x"] == last,
    )
    with pytest.raises(InvalidFileError, match=r"of method 'random' on text 0 has no row at x"):
        EvaluationResult.load(path)


# ------------------------------------------------------------------ P06 / P07
@pytest.mark.parametrize(
    ("column", "values", "said"),
    [
        ("step", [True, True, False, False], "step column holds True/False values"),
        ("instance", [False, True, False, True], "instance column holds True/False values"),
        ("spearman", [True, False, True, True], "spearman column holds True/False values"),
        ("top_k", [True, True, True, False], "top_k column holds True/False values"),
        ("spearman", [True, 0.5, 0.5, 0.5], "spearman column holds True"),
        (
            "spearman",
            pd.to_datetime(["2020-01-01"] * 4),
            "spearman column holds dates or times",
        ),
    ],
)
def test_p06_p07_a_column_of_no_numbers_is_refused(tmp_path, column, values, said):
    pytest.importorskip("pyarrow")
    frame = sanity_frame()
    mixed = said.endswith("True")  # a frame's object column: no parquet holds it
    frame[column] = pd.Series(list(values), dtype=object if mixed else None)
    with pytest.raises(InvalidInputError, match=said):  # the frame itself, not only the file
        SanityResult(frame)
    if mixed:
        return
    path = tmp_path / "san.parquet"
    frame.to_parquet(path, index=False)
    with pytest.raises(InvalidFileError) as raised:
        SanityResult.load(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: SanityResult's {said}"), message
    assert "\n" not in message


def test_p06_a_csv_of_bools_is_refused(tmp_path):
    frame = sanity_frame().assign(spearman=[True, False, True, True])
    path = tmp_path / "san.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InvalidFileError, match="spearman column holds True/False values"):
        SanityResult.load(path)


# ------------------------------------------------------------------ P08
def _two_methods() -> pd.DataFrame:
    return pd.concat([sanity_frame("g"), sanity_frame("h")], ignore_index=True)


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_p08_a_method_cut_short_beside_another_is_refused(tmp_path, suffix):
    if suffix == "parquet":
        pytest.importorskip("pyarrow")
    frame = _two_methods()
    frame = frame[~((frame["method"] == "h") & (frame["step"] == 1))]
    path = tmp_path / f"san.{suffix}"
    getattr(frame, f"to_{suffix}")(path, index=False)
    with pytest.raises(InvalidFileError) as raised:
        SanityResult.load(path)
    message = str(raised.value)
    assert message.startswith(
        f"{path}: SanityResult's frame lacks step(s) 1 of method 'h' (cascading), which other "
        "cascading methods of the frame hold (steps 0, 1)"
    ), message
    assert "\n" not in message


def test_p08_whole_methods_and_other_modes_still_load(tmp_path):
    frame = _two_methods()
    assert set(SanityResult(frame).verdicts()["method"]) == {"g", "h"}
    # an independent method of one step beside cascading ones of two: another mode's steps
    other = sanity_frame("i").query("step == 0").assign(mode="independent")
    SanityResult(pd.concat([frame, other], ignore_index=True))
