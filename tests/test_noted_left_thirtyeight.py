"""Last stop's "noted and left", worked through: ``explain`` given one option under both
spellings with different values, a generation's steps asked for out of range, and a paired
difference lost in its error printed without a sign."""

from __future__ import annotations

import pytest

import normxlogit
from normxlogit.cli.explain import own_options
from normxlogit.common.errors import InvalidInputError, InvalidOptionError
from normxlogit.generation import evaluate_generations

from .conftest import explainable


def test_explain_refuses_one_option_under_both_spellings_with_different_values():
    """``--option ig.steps=3 --option steps=5`` used 3 without a word: explain has one
    method, so the bare name is no default for others."""
    with pytest.raises(InvalidOptionError) as caught:
        own_options({"integrated_gradients.steps": "3", "steps": "5"}, "integrated_gradients")
    message = str(caught.value)
    assert "--option steps=5 and --option integrated_gradients.steps=3" in message
    assert "give it once" in message


def test_explain_takes_one_option_under_both_spellings_with_one_value():
    taken = own_options({"integrated_gradients.steps": "3", "steps": "03"}, "integrated_gradients")
    assert taken == {"steps": "3"}


def test_steps_a_generation_lacks_name_the_steps_it_has():
    """``evaluate_generations(steps=[9])`` said "no step to evaluate among steps [9]"
    without the numbers that exist."""
    decoder = explainable("llama", "causal_lm")
    generations = normxlogit.explain(
        decoder, ["the film was a", "a plot"], "random", continuation=[[2143] * 5, [2143] * 4]
    )
    with pytest.raises(InvalidInputError) as caught:
        evaluate_generations(decoder, generations, ["comp_cd"], steps=[9])
    assert "numbered 0 to 4" in str(caught.value)
    assert "among steps [9]" in str(caught.value)


@pytest.mark.parametrize("cell", ["0.0 1.0 1.0", "[0.0, 1.0, 1.0]", "0 1.0 true", "0. 1.00 1."])
def test_a_mask_written_as_floats_is_read(tmp_path, cell):
    """pandas writes a mask column with an empty cell as floats ("0.0 1.0"); such a mask
    was refused as "not whole numbers"."""
    from normxlogit.data.files import read_examples

    path = tmp_path / "rows.tsv"
    path.write_text(f"text\tlabel\tevidence_mask\na fine film\t1\t{cell}\n")
    (example,) = read_examples(path)
    assert example.evidence == (1, 2)


def test_a_mask_value_between_0_and_1_is_still_refused(tmp_path):
    from normxlogit.common.errors import InvalidFileError
    from normxlogit.data.files import read_examples

    path = tmp_path / "rows.tsv"
    path.write_text("text\tlabel\tevidence_mask\na fine film\t1\t0 0.5 1\n")
    with pytest.raises(InvalidFileError, match="give one 0 or 1 per word"):
        read_examples(path)


def test_blimp_pairs_left_out_are_counted_with_why(monkeypatch, tmp_path):
    """Pairs not one token apart, or whose word reads as [UNK], were left out without a
    word: a user saw fewer instances than the paradigms hold and no reason."""
    from normxlogit.common.errors import NormXLogitWarning
    from normxlogit.data import masked_pairs
    from normxlogit.data.blimp import BlimpPair

    from .conftest import fresh_tokenizer

    tokenizer = fresh_tokenizer()
    word = next(w for w in ("cat", "dog", "film", "good", "bad") if w in tokenizer.get_vocab())

    def pair(number: int, good: str, bad: str) -> BlimpPair:
        values = dict.fromkeys(BlimpPair.__dataclass_fields__)
        values.update(paradigm="p", pair_id=number, good=good, bad=bad, evidence=())
        return BlimpPair(**values)

    pairs = [
        pair(0, f"the {word} here", "the a here"),
        pair(1, f"the {word} here", "the ☃ here"),
        pair(2, f"the {word} here", f"the {word} {word} here"),
    ]
    monkeypatch.setattr(masked_pairs, "read_blimp", lambda *a, **k: pairs)
    with pytest.warns(NormXLogitWarning) as caught:
        kept = masked_pairs.read_blimp_masked("all", tokenizer=tokenizer, path=str(tmp_path))
    said = " ".join(str(w.message) for w in caught)
    assert len(kept) == 1
    assert "2 BLiMP pairs left out" in said
    assert "1 not one token apart" in said
    assert "1 whose word the vocabulary lacks" in said
    assert "1 kept" in said


def test_the_page_says_a_method_is_na_where_it_stores_nothing(tmp_path):
    """The page's per-instance view of a method the bench found N/A (Grad-ELLM on an
    encoder) said "no stored values", as if a run could fill it."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from normxlogit.bench import load_config
    from normxlogit.serve import build_app

    from .bench.helpers import _save_tiny
    from .conftest import bench_on_rows

    model = _save_tiny(tmp_path / "m", seed=0)
    rows = [
        {"text": "a fine film", "label": "positive"},
        {"text": "a dull plot", "label": "negative"},
    ]
    body = 'methods = ["random", "grad_ellm"]\nmetrics = ["comp_cd"]'
    bench_on_rows(tmp_path, model, rows, body)
    config = tmp_path / "rows.toml"
    loaded = load_config(config)
    name = loaded.experiments[0].name
    with TestClient(build_app([model], bench=[config], builtins=False)) as client:
        query = {"experiment": name, "method": "grad_ellm"}
        values = client.get("/api/bench/0/instances", params=query | {"metric": "comp_cd"})
        explained = client.get("/api/bench/0/explanation", params=query | {"instance": 0})
    for answer in (values.json()["error"], explained.json()["error"]):
        assert answer.startswith("'grad_ellm' is N/A in")
        assert "nothing is stored" in answer
    with TestClient(build_app([model], bench=[config], builtins=False)) as client:
        query = {"experiment": name, "method": "random", "metric": "nosuch"}
        no_metric = client.get("/api/bench/0/instances", params=query).json()["error"]
        query = {"experiment": name, "method": "nosuch", "metric": "comp_cd"}
        no_method = client.get("/api/bench/0/instances", params=query).json()["error"]
    assert no_metric == f"{name!r} has no metric 'nosuch'; it has comp_cd"
    assert no_method == f"{name!r} has no method 'nosuch'; it has random, grad_ellm"


MARKDOWN_SUMMARY = "| method | comp_cd (AOPC ↑) |\n|---|---:|\n| random | 0.000 |\n"
HTML_PAGE = "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body></body></html>\n"


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("sum.md", MARKDOWN_SUMMARY, "is an evaluate summary in Markdown"),
        ("x.html", HTML_PAGE, "is an HTML page of explanations"),
    ],
)
def test_every_loader_names_a_markdown_summary_or_an_html_page(tmp_path, name, content, says):
    """The loaders called ``evaluate -o sum.md`` "not complete JSON ... cut short?", and
    SanityResult.load advised renaming it to .csv."""
    from normxlogit.common.errors import InvalidFileError
    from normxlogit.sanity import SanityResult

    path = tmp_path / name
    path.write_text(content)
    loaders = [
        normxlogit.Explanation.load,
        normxlogit.load_explanations,
        normxlogit.EvaluationResult.load,
        SanityResult.load,
    ]
    for loader in loaders:
        with pytest.raises(InvalidFileError) as caught:
            loader(path)
        message = str(caught.value)
        assert says in message, (loader, message)
        assert "cut short" not in message and "suffix" not in message
        assert "--save result.json" in message or "-o result.json" in message
