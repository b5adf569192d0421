"""Round seven of new-user probes (issue 41), saved files and segments: a whole answer's
edited ``answer_ids``, a list holding None saved, a sanity frame with no rows, a span of
only whitespace, and a pair's span out of range. Tiny models."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import normxlogit
from normxlogit.common.errors import InvalidFileError, InvalidInputError
from normxlogit.sanity import SanityResult, parameter_randomization

from .conftest import explainable, sharp_model

TEXT = "The plot is thin. The acting is wonderful! I would see it again."
PAIR = ("The plot is thin.", "The plot is thin. The acting is wonderful!")


def test_a_whole_answers_edited_answer_ids_are_refused_naming_the_field(tmp_path):
    """R01: ids that are not a non-empty list of whole numbers failed deep in the model or
    scored no answer (0.0); a removed field read the file as a next-token explanation;
    an id past the vocabulary is refused by evaluation, which knows the model."""
    lm = explainable("llama", "causal_lm")
    answer = lm.explain(
        TEXT, "leave_one_out", segments="sentences", generate=True, max_new_tokens=2
    )
    path = tmp_path / "answer.json"
    normxlogit.save_explanations([answer], path)
    saved = json.loads(path.read_text())
    for ids, said in (
        (["a"], r"'settings.answer_ids' is \['a'\]; it holds the answer's token ids"),
        ([1.5], r"is \[1.5\]"),
        ([True], r"is \[True\]"),
        (5, "is 5"),
        ([], r"is \[\]"),
        ([-1], r"is \[-1\]"),
        (None, "'settings.answer_ids' is missing, yet 'settings.generated_by_model'"),
    ):
        settings = dict(saved["settings"], answer_ids=ids)
        if ids is None:
            del settings["answer_ids"]
        path.write_text(json.dumps(dict(saved, settings=settings)))
        with pytest.raises(InvalidFileError, match=said):
            normxlogit.load_explanations(path)
    path.write_text(json.dumps(dict(saved, settings=dict(saved["settings"], answer_ids=[10**9]))))
    far = normxlogit.load_explanations(path)
    with pytest.raises(InvalidInputError, match="holds 1000000000, not a token id of this model"):
        normxlogit.evaluate(lm, {"loo": far}, ["segment_drop"])


def test_save_explanations_names_an_item_that_is_none():
    """R07: a list holding None raised AttributeError ('NoneType' ... 'to_dict')."""
    one = sharp_model().explain("Good.")
    with pytest.raises(InvalidInputError, match=r"not a list holding None \(item 1\)"):
        normxlogit.save_explanations([one, None], "never.json")


def test_a_sanity_frame_with_no_rows_is_refused(tmp_path):
    """R08: the right columns and no rows gave KeyError 'passes' from verdicts()."""
    path = parameter_randomization(sharp_model(), [TEXT], ["normxlogit"]).save(tmp_path / "s.csv")
    with pytest.raises(InvalidInputError, match="SanityResult's frame has no rows"):
        SanityResult(pd.read_csv(path).iloc[:0])


def test_a_span_of_only_whitespace_is_refused_as_a_blank_segment():
    """R09: (17, 18) holds one space: it scored NaN and was blamed on truncation."""
    model = sharp_model()
    with pytest.raises(InvalidInputError, match=r"segments\[1\] = \(17, 18\) is only whitespace"):
        model.explain(TEXT, "leave_one_out", segments=[(0, 17), (17, 18), (18, 42)])
    with pytest.raises(InvalidInputError, match=r"segments\[0\] = \(1, 17, 18\) is only white"):
        model.explain(PAIR, segments=[(1, 17, 18)])


def test_a_pairs_span_out_of_range_is_shown_as_given_with_its_text():
    """R10: (1, 0, 400) was shown as (0, 400) "of the text", not saying which text."""
    model = sharp_model()
    with pytest.raises(
        InvalidInputError,
        match=r"segments\[0\] = \(1, 0, 400\) is not a non-empty span of the second text of "
        r"the pair \(42 characters\)",
    ):
        model.explain(PAIR, segments=[(1, 0, 400)])
    with pytest.raises(InvalidInputError, match=r"= \(0, 99\) is not a .* of the text \(64 char"):
        model.explain(TEXT, segments=[(0, 99)])
