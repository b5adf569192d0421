"""Round twenty-two of new-user probes, probe b (Python API and the page): what the
scoring would refuse is refused before any method explains (P01), a device or keyword
``load`` cannot use is refused in one line (P02), the unknown token is text, not a marker
(P03), a sanity warning's protocol fix named as the page's (P04), and sanity metrics on a
generation named with their fix (P05). Tiny models."""

from __future__ import annotations

import warnings

import pytest

import normxlogit
from normxlogit.common.errors import InvalidInputError, InvalidOptionError
from normxlogit.serve.jobs import for_the_page

from .conftest import explainable, saved_tiny, sharp_model

TEXTS = ["the film is good", "a dull mess"]


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize(
    ("settings", "said"),
    [
        (
            dict(metrics=["token_f1"]),
            "text 0 has no evidence words, which the evidence metrics need: pass "
            "evidence_words=[[0, 3], ...]",
        ),
        (dict(metrics=["token_f1"], evidence_words=[[0]]), "1 evidence entries for 2 texts"),
        (dict(metrics=["auprc"], evidence_words=[[0], [50]]), "evidence word index 50"),
        (dict(metrics=["comp_acc"], labels=["LABEL_0", "joy"]), "unknown label 'joy'"),
        (dict(metrics=["segment_drop"]), "segment_drop reads segments, and none were given"),
        (
            dict(metrics=["comp_cd"], protocol=normxlogit.Protocol(unit="segment")),
            "unit='segment' reads segments, and none were given: pass segments='sentences'",
        ),
    ],
)
def test_p01_what_scoring_refuses_is_refused_before_explaining(never_explained, settings, said):
    """Each came after every method had explained every text (3-5 s with LIME on 40
    short texts; hours on a data set with IG)."""
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.explain_and_evaluate(sharp_model(), TEXTS, ["gradient_x_input"], **settings)
    assert said in str(caught.value)


# ------------------------------------------------------------------ P02
@pytest.mark.parametrize(
    ("options", "error", "said"),
    [
        (dict(device="gpu"), InvalidInputError, "device='gpu' is no torch device; use cpu, cuda"),
        (dict(batch_size=8), InvalidOptionError, "load passes batch_size= on to Bert"),
    ],
)
def test_p02_load_refuses_what_it_cannot_use_in_one_line(tmp_path, options, error, said):
    """A torch RuntimeError, an AssertionError (cuda) or a transformers TypeError."""
    folder = saved_tiny(tmp_path / "m", "bert", "classification")
    with pytest.raises(error) as caught:
        normxlogit.load(str(folder), **options)
    assert said in str(caught.value)


def test_p02_cuda_without_a_gpu_is_refused_before_loading(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(InvalidInputError, match="device='cuda': this machine has no CUDA GPU"):
        normxlogit.load(str(tmp_path / "never-read"), device="cuda")


# ------------------------------------------------------------------ P03
def test_p03_the_unknown_token_is_text_not_a_marker():
    """An emoji became [UNK], marked special like [CLS]: LIME never removed it (always 0)
    and evidence on it was dropped as "special tokens"."""
    model = sharp_model()
    text = "I hated it 😡 but fine"
    explained = model.explain(text, "lime")
    unknown = explained.tokens.index("[UNK]")
    assert not explained.special[unknown]
    assert explained.special[0] and explained.special[-1]  # [CLS], [SEP]
    assert explained.scores[unknown] != 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = normxlogit.evaluate(
            model,
            {"lime": [explained]},
            ["token_f1"],
            evidence=[[0] * unknown + [1] + [0] * (len(explained.tokens) - unknown - 1)],
        )
    assert result.frame["value"].notna().all()
    generation = explainable("llama", "causal_lm").explain(
        "why 😡", generate=True, max_new_tokens=1
    )
    assert not any(generation.special[i] for i, t in enumerate(generation.tokens) if t == "[UNK]")


# ------------------------------------------------------------------ P04
def test_p04_the_sanity_top_k_warning_names_the_command_lines_setting():
    """ "(protocol top_k sets k)" escaped the page's rewrite."""
    model = sharp_model()
    made = {"g": model.explain(["good"], "gradient_x_input")}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        normxlogit.evaluate(model, made, ["sanity_top_k"], progress=False)
    said = [str(w.message) for w in caught if "top-5 overlap is undefined" in str(w.message)]
    assert said and "Protocol(top_k=...) sets k" in said[0]
    shown = for_the_page(said[0])
    assert "Protocol(" not in shown and "--protocol top_k=..." in shown


# ------------------------------------------------------------------ P05
def test_p05_sanity_metrics_on_a_generation_name_their_fix():
    model = explainable("llama", "causal_lm")
    generation = model.explain("why", generate=True, max_new_tokens=2, method="gradient_x_input")
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.evaluate(model, {"g": [generation]}, ["sanity_spearman"], progress=False)
    said = str(caught.value)
    assert "leave them out of the metrics" in said and "without generate=True" in said
