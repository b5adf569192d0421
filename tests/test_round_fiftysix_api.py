"""Round 56 (a): huge whole numbers through the Python API and the command line.

- F1: a whole number past float64 (10**400) in a float setting (Protocol, method options,
  a saved protocol, ``--protocol``): an OverflowError.
- F2: numbers of more than 4,300 digits in a data file or an argument: Python's "Exceeds
  the limit (4300 digits)" ValueError.
- F3: the same numbers in saved files, string arguments and containers a message prints.
"""

from __future__ import annotations

import json

import pytest

import normxlogit as nx
from normxlogit import metrics as M
from normxlogit import sanity
from normxlogit.common.errors import (
    InvalidFileError,
    InvalidInputError,
    InvalidOptionError,
    NormXLogitError,
)
from normxlogit.common.outputs import short_value

from .conftest import build_model, explainable, fresh_tokenizer, invoke_in
from .conftest import said as _said

BIG = 10**400
SHORT_BIG = "10000000000000000000... (401 digits)"
HUGE = 10**5000
HUGE_TEXT = "1" + "0" * 5000
SHORT_HUGE = "10000000000000000000... (5001 digits)"
PYTHON_ADVICE = "set_int_max_str_digits"


def _classifier():
    return explainable("bert", "classification")


def _clean(result) -> str:
    said = _said(result)
    assert result.exit_code != 0, said
    assert not isinstance(result.exception, (ValueError, OverflowError)), repr(result.exception)
    assert "Traceback" not in said and PYTHON_ADVICE not in said, said
    return said


# ------------------------------------------------------------------ F1
pytestmark = pytest.mark.filterwarnings("ignore::normxlogit.NormXLogitWarning")

FLOAT_SETTINGS = {
    "pis": ([0.5, BIG], "pis holds"),
    "step": (BIG, "step " + SHORT_BIG + " is"),
    "ratios": ([0.1, BIG], "ratios holds"),
}


@pytest.mark.parametrize("name", list(FLOAT_SETTINGS), ids=list(FLOAT_SETTINGS))
def test_f1_a_protocol_float_setting_past_float64_is_refused(name):
    value, words = FLOAT_SETTINGS[name]
    with pytest.raises(InvalidOptionError) as caught:
        nx.Protocol(**{name: value})
    said = str(caught.value)
    assert words in said and SHORT_BIG in said and "too large for a number (float)" in said


def test_f1_a_float_method_option_past_float64_is_refused():
    with pytest.raises(InvalidOptionError, match="replacing_ratio 10000000000000000000"):
        nx.get_method("reagent", replacing_ratio=BIG)
    with pytest.raises(InvalidOptionError, match="kernel_width 10000000000000000000"):
        nx.explain(_classifier(), "hi", method="lime", kernel_width=BIG)


def test_f1_a_saved_protocol_past_float64_is_a_file_problem(tmp_path):
    model = _classifier()
    result = nx.evaluate(model, [nx.explain(model, "a good movie")], ["comp_cd"])
    result.save(tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    data["protocol"]["step"] = BIG
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(InvalidFileError) as caught:
        nx.EvaluationResult.load(tmp_path / "r.json")
    said = str(caught.value)
    assert "its protocol" in said and SHORT_BIG in said, said


def test_f1_cli_protocol_list_past_float64_is_one_line(tmp_path, tiny_classifier):
    (tmp_path / "ok.jsonl").write_text('{"text": "a good movie", "label": 1}\n')
    result = invoke_in(
        tmp_path, "evaluate", "ok.jsonl", "-m", str(tiny_classifier), "--method", "random",
        "--protocol", f"ratios=[0.5,{BIG}]",
    )  # fmt: skip
    said = _clean(result)
    assert "ratios holds" in said and SHORT_BIG in said, said


# ------------------------------------------------------------------ F2
def test_f2_whole_numbers_past_python_digit_limit_are_read():
    from normxlogit.common.counts import integer_text, whole_number

    assert whole_number(HUGE_TEXT) == HUGE
    assert whole_number("-" + HUGE_TEXT) == -HUGE
    assert integer_text(f" {HUGE_TEXT} ") == HUGE
    assert json.loads(f"[{HUGE_TEXT}]", parse_int=whole_number) == [HUGE]
    with pytest.raises(InvalidInputError, match="digits are read"):
        whole_number("1" * 200_001)


def test_f2_guard_short_whole_numbers_unchanged():
    from normxlogit.common.counts import integer_text, whole_number

    assert whole_number("12") == 12 and whole_number(" -3 ") == -3 and integer_text("7") == 7
    with pytest.raises(ValueError):
        whole_number("x1")


def test_f2_cli_huge_numbers_are_refused_in_one_line(tmp_path, tiny_classifier):
    model = str(tiny_classifier)
    (tmp_path / "ok.jsonl").write_text('{"text": "a good movie", "label": 1}\n')
    (tmp_path / "ev.tsv").write_text(f"text\tlabel\tevidence\na good movie\t1\t0 {HUGE_TEXT} 0\n")
    cases = [
        (("evaluate", "ev.tsv", "-m", model, "--method", "random"), "ev.tsv, line 2"),
        (("explain", "hi", "-m", model, "--layer", HUGE_TEXT), "does not exist"),
        (("explain", "hi", "-m", model, "--label", HUGE_TEXT), "no label has index"),
        (
            ("evaluate", "ok.jsonl", "-m", model, "--method", "random", "--protocol",
             f"pis=[{HUGE_TEXT}]"),
            "pis holds",
        ),
    ]  # fmt: skip
    for args, words in cases:
        said = _clean(invoke_in(tmp_path, *args))
        assert words in said and SHORT_HUGE in said, (args[:3], said)


def test_f2_cli_a_jsonl_label_of_5001_digits_reads_as_10_to_400_does(tmp_path, tiny_classifier):
    (tmp_path / "big.jsonl").write_text(f'{{"text": "a good movie", "label": {HUGE_TEXT}}}\n')
    result = invoke_in(
        tmp_path, "evaluate", "big.jsonl", "-m", str(tiny_classifier), "--method", "random"
    )
    said = _said(result)
    assert not isinstance(result.exception, ValueError), repr(result.exception)
    assert PYTHON_ADVICE not in said and "Traceback" not in said, said
    (tmp_path / "long.jsonl").write_text(f'{{"text": "a good movie", "label": {"1" * 200_001}}}\n')
    result = invoke_in(
        tmp_path, "evaluate", "long.jsonl", "-m", str(tiny_classifier), "--method", "random"
    )
    said = _clean(result)
    assert "long.jsonl, line 1: a whole number of 200001 digits" in said, said


# ------------------------------------------------------------------ F3
def test_f3_saved_files_holding_5001_digits_are_file_problems(tmp_path):
    model = _classifier()
    explanation = nx.explain(model, "a good movie")
    explanation.save(tmp_path / "e.json")
    text = (tmp_path / "e.json").read_text()
    assert '"value": null' in text
    (tmp_path / "e.json").write_text(text.replace('"value": null', f'"value": {HUGE_TEXT}'))
    for load in (nx.Explanation.load, nx.load_explanations):
        with pytest.raises(InvalidFileError) as caught:
            load(tmp_path / "e.json")
        assert PYTHON_ADVICE not in str(caught.value), str(caught.value)
    result = nx.evaluate(model, [explanation], ["comp_cd"])
    result.save(tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    data["protocol"]["samples"] = "@"
    (tmp_path / "r.json").write_text(json.dumps(data).replace('"@"', HUGE_TEXT))
    with pytest.raises(InvalidFileError) as caught:
        nx.EvaluationResult.load(tmp_path / "r.json")
    said = str(caught.value)
    assert SHORT_HUGE in said and PYTHON_ADVICE not in said, said


def test_f3_text_arguments_of_5001_digits_are_refused():
    model = _classifier()
    with pytest.raises(InvalidInputError, match="no label has index 10000000000000000000"):
        nx.explain(model, "hi", target=HUGE_TEXT)
    with pytest.raises(InvalidInputError, match="does not exist"):
        nx.explain(model, "hi", layer=HUGE_TEXT)


def test_f3_short_value_cuts_huge_numbers_inside_containers():
    assert short_value([0, HUGE], width=200) == f"[0, {SHORT_HUGE}]"
    assert short_value((HUGE,), width=200) == f"({SHORT_HUGE},)"
    assert short_value({"a": HUGE}, width=200) == f"{{'a': {SHORT_HUGE}}}"
    assert short_value([0, HUGE]).startswith("[0, 1000")


def test_f3_guard_short_value_of_plain_containers_unchanged():
    assert short_value([1, 2]) == "[1, 2]" and short_value((1,)) == "(1,)"
    assert short_value({"a": 1}) == "{'a': 1}"


CONTAINER_CALLS = {
    "explain-layer-list": lambda m, e: nx.explain(m, "hi", layer=[0, HUGE]),
    "evaluate-layer-list": lambda m, e: nx.evaluate(m, [e], ["comp_cd"], layer=[HUGE]),
    "top-tokens": lambda m, e: e.top_tokens([HUGE]),
    "dot-product-exclude": lambda m, e: M.dot_product(
        [0.2, 0.5, 0.9, 0.1], [1, 0, 0, 0], exclude=[0, HUGE]
    ),
    "sanity-top-k": lambda m, e: sanity.parameter_randomization(
        m, ["hi"], ["random"], top_k=[HUGE]
    ),
    "label-words": lambda m, e: nx.load(
        (build_model("gpt2", "causal_lm"), fresh_tokenizer()), label_words=[HUGE, "b"]
    ),
    "chat-fields": lambda m, e: nx.ChatPrompt(fields=(HUGE, "b")),
    "chat-user": lambda m, e: nx.ChatPrompt(user=HUGE),
    "chat-system": lambda m, e: nx.ChatPrompt(system=HUGE),
    "protocol-int-list": lambda m, e: nx.Protocol(samples=[HUGE]),
}


@pytest.mark.parametrize("name", list(CONTAINER_CALLS), ids=list(CONTAINER_CALLS))
def test_f3_messages_printing_a_container_of_a_huge_number_work(name):
    model = _classifier()
    explanation = nx.explain(model, "a good movie", method="random")
    with pytest.raises(NormXLogitError) as caught:
        CONTAINER_CALLS[name](model, explanation)
    said = str(caught.value)
    assert "\n" not in said and PYTHON_ADVICE not in said, said
    assert "10000000000000000000..." in said or "int 1000" in said, said


def test_f3_chat_prompt_prints_a_long_number_cut():
    with pytest.raises(InvalidInputError) as caught:
        nx.ChatPrompt(user=BIG)
    assert len(str(caught.value)) < 200, str(caught.value)


def test_f3_a_saved_sanity_result_holding_5001_digits_is_read_as_json(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(
        f'{{"kind": "normxlogit sanity result", "settings": {{"top_k": {HUGE_TEXT}}}, "rows": 5}}'
    )
    with pytest.raises(InvalidFileError) as caught:
        sanity.SanityResult.load(path)
    said = str(caught.value)
    assert "'rows' must be a list" in said and PYTHON_ADVICE not in said, said


# found while writing the note: an int setting's list items were not bounded, so
# drop_k=[10**5000] was taken, and the protocol could then be saved in no file
@pytest.mark.parametrize("k", [2**31, 10**5000], ids=["bound", "e5000"])
def test_a_protocol_list_item_past_the_bound_is_refused(k):
    with pytest.raises(nx.NormXLogitError) as caught:
        nx.Protocol(drop_k=[1, k])
    said = str(caught.value)
    assert "drop_k holds" in said and "at most 2147483647" in said and "\n" not in said, said
    assert PYTHON_ADVICE not in said, said


def test_a_protocol_list_within_the_bound_is_taken():
    assert nx.Protocol(drop_k=[1, 2**31 - 1]).drop_k == (1, 2**31 - 1)
