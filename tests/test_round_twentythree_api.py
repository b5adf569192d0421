"""Round twenty-three of new-user probes, probe b (Python API): evidence segments and
segment methods refused before explaining (P01), run_bench's progress given as True or
False (P02), a NumPy integer layer (P03), and keywords or devices load passes on that
torch or transformers refuse (P04). Tiny models."""

from __future__ import annotations

import json

import numpy as np
import pytest

import normxlogit
from normxlogit.bench import ResultStore, load_config, run_bench
from normxlogit.common.errors import InvalidInputError, InvalidOptionError

from .conftest import saved_tiny, sharp_model

TEXTS = ["The film is good. The end is bad.", "A dull mess. Far too long."]


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize(
    ("settings", "said"),
    [
        (
            dict(metrics=["segment_hit_1"], segments="sentences", evidence_segments=[[0]]),
            "1 evidence_segments entries for 2 texts",
        ),
        (
            dict(metrics=["segment_auprc"], segments="sentences", evidence_segments=[[0], [3]]),
            "evidence_segments[1] holds segment 3, but the text has 2 segments",
        ),
        (dict(methods=["gradient_x_input", "leave_one_out"]), "'leave_one_out' scores segments"),
    ],
)
def test_p01_segment_evidence_and_methods_are_refused_before_explaining(
    never_explained, settings, said
):
    """They came after LIME had explained every text, naming evaluate's evidence[0]."""
    methods = settings.pop("methods", ["gradient_x_input"])
    settings.setdefault("metrics", ["comp_cd"])
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.explain_and_evaluate(sharp_model(), TEXTS, methods, **settings)
    assert said in str(caught.value)


# ------------------------------------------------------------------ P02
def test_p02_run_bench_takes_progress_true_or_false(tmp_path, tiny_classifier, capsys):
    """progress=False: "AttributeError: 'bool' object has no attribute 'start'"."""
    (tmp_path / "d.jsonl").write_text(
        "".join(json.dumps({"text": t, "label": 0}) + "\n" for t in TEXTS)
    )
    path = tmp_path / "g.toml"
    path.write_text(
        'metrics = ["comp_cd"]\nmethods = ["random"]\n'
        f'[[experiments]]\nmodel = "{tiny_classifier}"\ndataset = "d.jsonl"\n'
    )
    with ResultStore(tmp_path / "g.sqlite") as store:
        assert run_bench(load_config(path), store, progress=False).units == 1
        assert run_bench(load_config(path), store, progress=True).units == 0
        with pytest.raises(InvalidInputError, match="progress is str, without start"):
            run_bench(load_config(path), store, progress="yes")


# ------------------------------------------------------------------ P03
def test_p03_a_numpy_integer_layer_is_a_layer():
    """layer=np.int64(1) was "layer np.int64(1) does not exist; use 0 ... to 2"."""
    model = sharp_model()
    plain = model.explain(TEXTS[0], "logat", layer=1)
    for layer in (np.int64(1), np.int32(1)):
        assert model.explain(TEXTS[0], "logat", layer=layer).to_dict() == plain.to_dict()
    with pytest.raises(InvalidInputError, match="layer 9 does not exist"):
        model.explain(TEXTS[0], "logat", layer=np.int64(9))
    with pytest.raises(InvalidInputError, match="layer 1.5 is no layer"):
        model.explain(TEXTS[0], "logat", layer=1.5)


# ------------------------------------------------------------------ P04
@pytest.mark.parametrize(
    ("options", "error", "said"),
    [
        (dict(num_labels=7), InvalidOptionError, "num_labels= on to Bert"),
        (dict(attn_implementation="flash_attention_2"), InvalidOptionError, "attn_implementation="),
        (dict(device="meta"), InvalidInputError, "device='meta': the meta device holds shapes"),
    ],
)
def test_p04_what_load_passes_on_is_refused_in_one_line(tmp_path, options, error, said):
    """A RuntimeError pointing at "the above report", an ImportError, a meta tensor."""
    folder = saved_tiny(tmp_path / "m", "bert", "classification")
    with pytest.raises(error) as caught:
        normxlogit.load(str(folder), **options)
    assert said in str(caught.value) and "above report" not in str(caught.value)
