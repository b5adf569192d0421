"""Round thirty-three, method options: every bound is checked where the option is
declared, so ``get_method``, ``explain --option``, ``evaluate`` and ``bench status`` refuse
the same values before any work.

- P01: integrated gradients' ``steps`` has an upper bound (10,000; 1,000 with
  Gauss-Legendre, whose nodes cost a steps x steps eigenproblem), refused in one line.
- P02: a keyword that is both explain()'s own and an option of the named method (LIME's
  ``batch_size``, IG's ``method``) is refused, pointing to ``get_method``.
- P03: LIME's ``kernel_width`` below 0.076 (where the farthest sample's weight
  underflows) is refused, naming the smallest that works.
- P04: ``explain --option preset=...`` / ``--option name=...`` and Python's ``name=``
  are refused in one line naming the flag or argument that sets them.
- P05: a baseline given as text is a token (``"10"`` is the token "10"), never an id; an
  id from text is ``id:10``.
- P06: LIME ``samples``, ContextCite ``ablations`` and a Riemann IG's ``steps`` have
  their true minimum checked at option validation, one minimum per option.
- P07: a sanity result records each method's options.
- P08: a registered method's scores on the ``meta`` device are refused naming it.
- P09: register_method refuses option names an explanation's settings would overwrite
  (or get_method's own), and keeps explain()'s other keywords (LIME's batch_size) valid.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit.bench import load_config
from normxlogit.common.errors import InvalidInputError, InvalidOptionError
from normxlogit.methods import AttributionMethod, register_method
from normxlogit.methods.base import RESERVED_OPTIONS, broadcast_targets, method_options

from .bench.helpers import write_config
from .conftest import explainable, invoke_in, saved_tiny

TEXT = "a good movie that I liked a lot"


def _said(result) -> str:
    return " ".join(result.output.split())


@pytest.fixture(scope="module")
def model():
    return explainable("bert", "classification")


@pytest.fixture
def texts(tmp_path):
    path = tmp_path / "texts.txt"
    path.write_text("the cat sat on the mat\na dog ran in the park today\n")
    return path


# P01 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"steps": 100_000}, "steps=100000 is too large for method='gausslegendre': at most 1000"),
        ({"steps": 10**9}, "at most 1000"),
        (
            {"steps": 20_000, "method": "riemann_trapezoid"},
            "steps=20000 is too large: at most 10000",
        ),
    ],
)
def test_too_many_ig_steps_are_refused_when_the_method_is_built(options, expected):
    with pytest.raises(InvalidOptionError, match=expected):
        normxlogit.get_method("integrated_gradients", **options)


def test_the_largest_ig_steps_are_accepted():
    assert normxlogit.get_method("integrated_gradients", steps=1000).steps == 1000
    built = normxlogit.get_method("integrated_gradients", steps=10_000, method="riemann_left")
    assert built.steps == 10_000


def _explain_ig(tmp_path, model, option: str):
    """``explain`` of TEXT by integrated gradients with one ``--option``."""
    args = ["-m", str(model), TEXT, "--method", "integrated_gradients", "--option", option]
    return invoke_in(tmp_path, "explain", *args)


def test_explain_refuses_too_many_steps_in_one_line(tmp_path, tiny_classifier):
    result = _explain_ig(tmp_path, tiny_classifier, "steps=100000")
    said = _said(result)
    assert result.exit_code == 2, said
    assert "steps=100000 is too large" in said
    assert "Traceback" not in said and "MemoryError" not in said


def test_bench_status_refuses_too_many_steps(tmp_path):
    model = saved_tiny(tmp_path / "tiny", "bert", "classification")
    methods = '[{name = "integrated_gradients", options = {steps = 100000}}]'
    config = write_config(tmp_path, model, methods=methods)
    with pytest.raises(InvalidInputError, match="steps=100000 is too large"):
        load_config(config)


# P02 ------------------------------------------------------------------------------


def test_explains_own_batch_size_beside_limes_is_refused(model):
    with pytest.raises(InvalidInputError, match=r"get_method\('lime', batch_size=1\)"):
        model.explain(TEXT, method="lime", batch_size=1, samples=5)
    with pytest.raises(InvalidInputError, match="batch_size= is both explain"):
        model.explain(TEXT, method="value_zeroing", batch_size=1)


def test_a_built_method_keeps_its_batch_size_and_explain_its_own(model):
    method = normxlogit.get_method("lime", batch_size=1, samples=5)
    explanation = model.explain([TEXT], method=method, batch_size=4)[0]
    assert explanation.settings["batch_size"] == 1
    # a method without a batch_size option: explain's own, as before
    model.explain(TEXT, method="normxlogit", batch_size=2)


def test_igs_method_option_beside_a_positional_method_is_refused(model):
    expected = r"get_method\('integrated_gradients', method='riemann_left'\)"
    with pytest.raises(InvalidInputError, match=expected):
        model.explain(TEXT, "integrated_gradients", method="riemann_left")
    with pytest.raises(InvalidInputError, match=expected):
        normxlogit.explain(model, TEXT, "integrated_gradients", method="riemann_left")


# P03 ------------------------------------------------------------------------------


@pytest.mark.parametrize("width", [0.01, 0.001, 0.0])
def test_a_kernel_too_narrow_for_its_weights_is_refused(width):
    with pytest.raises(InvalidOptionError, match="kernel_width=.* must be at least 0.076"):
        normxlogit.get_method("lime", kernel_width=width)


def test_the_narrowest_kernel_gives_scores_that_are_not_rounding_noise(model):
    narrow = model.explain(TEXT, normxlogit.get_method("lime", kernel_width=0.076, samples=50))
    wide = model.explain(TEXT, normxlogit.get_method("lime", samples=50))
    assert np.abs(narrow.scores).max() > 1e-3 * np.abs(wide.scores).max()


def test_sanity_refuses_a_narrow_kernel_in_one_line(tmp_path, tiny_classifier, texts):
    args = ["-m", str(tiny_classifier), "--method", "lime", "--option", "kernel_width=0.001"]
    result = invoke_in(tmp_path, "sanity", str(texts), *args)
    said = _said(result)
    assert result.exit_code == 2, said
    assert "at least 0.076" in said and "Traceback" not in said


# P04 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "expected"),
    [("preset=pi-soft", "give it as --preset pi-soft"), ("name=x", "give it as --method x")],
)
def test_explain_refuses_an_option_that_is_a_flag(tmp_path, tiny_classifier, option, expected):
    result = _explain_ig(tmp_path, tiny_classifier, option)
    said = _said(result)
    assert result.exit_code == 2, said
    assert expected in said and "Traceback" not in said


def test_a_name_keyword_is_refused_naming_the_method_argument(model):
    with pytest.raises(InvalidInputError, match="a method is chosen by its name alone"):
        model.explain(TEXT, "normxlogit", name="x")
    with pytest.raises(InvalidInputError, match="has no option name"):
        normxlogit.get_method("lime", name="x")


# P05 ------------------------------------------------------------------------------


def _token_id(model, token: str) -> int:
    return model.tokenizer.convert_tokens_to_ids(token)


def test_a_baseline_written_in_digits_is_the_token(model):
    assert _token_id(model, "10") != 10
    method = normxlogit.get_method("integrated_gradients", baseline="10", steps=4)
    assert method.baseline == "10"
    as_text = model.explain(TEXT, method)
    as_token = model.explain(TEXT, "integrated_gradients", baseline=_token_id(model, "10"), steps=4)
    as_id = model.explain(TEXT, "integrated_gradients", baseline=10, steps=4)
    np.testing.assert_allclose(as_text.scores, as_token.scores)
    assert not np.allclose(as_text.scores, as_id.scores)
    assert as_text.settings["baseline"] == "10"


def test_an_id_from_text_is_written_id_colon(model):
    assert normxlogit.get_method("integrated_gradients", baseline="id:10").baseline == 10
    assert normxlogit.get_method("deeplift", baseline="id:10").baseline == 10
    assert normxlogit.get_method("integrated_gradients", baseline=10).baseline == 10


def test_digits_that_are_no_token_name_the_id_form(model):
    # past the vocabulary: the id range, not id:123456789 (refused in turn; round 45 P02)
    with pytest.raises(InvalidInputError, match="ids run from 0 to"):
        model.explain(TEXT, "integrated_gradients", baseline="123456789", steps=2)


def test_the_command_line_reads_a_baseline_as_text(tmp_path, tiny_classifier):
    def baseline(value: str):
        out = tmp_path / f"{value.replace(':', '_')}.json"
        args = ["--method", "integrated_gradients", "--option", f"baseline={value}"]
        result = invoke_in(
            tmp_path, "explain", "-m", str(tiny_classifier), TEXT, *args, "-o", str(out)
        )
        assert result.exit_code == 0, _said(result)
        return json.loads(out.read_text())["settings"]["baseline"]

    assert baseline("10") == "10"
    assert baseline("id:10") == 10


def test_a_bench_string_baseline_stays_a_token(tmp_path):
    model = saved_tiny(tmp_path / "tiny", "bert", "classification")
    methods = '[{name = "integrated_gradients", options = {baseline = "10"}}]'
    config = load_config(write_config(tmp_path, model, methods=methods))
    assert dict(config.experiments[0].methods[0].options)["baseline"] == "10"


# P06 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "options", "expected"),
    [
        ("lime", {"samples": 0}, "samples=0 must be at least 2"),
        ("lime", {"samples": 1}, "samples=1 must be at least 2"),
        ("contextcite", {"ablations": 1}, "ablations=1 must be at least 2"),
        ("contextcite", {"ablations": 10**6}, "at most 100000"),
        ("shapley_sampling", {"samples": 10**6}, "at most 100000"),
        (
            "integrated_gradients",
            {"steps": 1, "method": "riemann_left"},
            "steps=1 must be at least 2 for method='riemann_left'",
        ),
        ("integrated_gradients", {"method": "simpson"}, "method='simpson' is not one of"),
    ],
)
def test_minimums_are_checked_when_the_method_is_built(name, options, expected):
    with pytest.raises(InvalidInputError, match=expected) as refused:
        normxlogit.get_method(name, **options)
    assert "batch_size" not in str(refused.value)


def test_bench_status_refuses_one_lime_sample(tmp_path):
    model = saved_tiny(tmp_path / "tiny", "bert", "classification")
    methods = '["integrated_gradients", {name = "lime", options = {samples = 1}}]'
    with pytest.raises(InvalidInputError, match="samples=1 must be at least 2"):
        load_config(write_config(tmp_path, model, methods=methods))


def test_evaluate_refuses_one_lime_sample_before_any_method_runs(
    tmp_path, tiny_classifier, texts, monkeypatch
):
    import normxlogit.explaining.texts as explaining

    def never(*args, **kwargs):
        raise AssertionError("a method ran before the options were checked")

    monkeypatch.setattr(explaining, "explain_each", never)
    args = ["--method", "integrated_gradients", "--method", "lime", "--metric", "comp_cd"]
    result = invoke_in(
        tmp_path,
        "evaluate",
        str(texts),
        "-m",
        str(tiny_classifier),
        *args,
        "--option",
        "lime.samples=1",
    )
    said = _said(result)
    assert result.exit_code == 2, said
    assert "samples=1 must be at least 2" in said


# P07 ------------------------------------------------------------------------------


def test_a_sanity_result_records_its_methods_options(model):
    from normxlogit.sanity import parameter_randomization

    few = normxlogit.get_method("integrated_gradients", steps=2)
    many = normxlogit.get_method("integrated_gradients", steps=3)
    result = parameter_randomization(model, [TEXT], {"few": few, "many": many}, top_k=2)
    assert result.settings["methods"]["few"]["steps"] == 2
    assert result.settings["methods"]["many"]["steps"] == 3


def test_sanity_saved_as_json_keeps_the_options(tmp_path, tiny_classifier, texts):
    common = ["-m", str(tiny_classifier), "--method", "integrated_gradients"]
    for steps in (2, 5):
        args = [*common, "--option", f"steps={steps}", "-o", f"s{steps}.json"]
        result = invoke_in(tmp_path, "sanity", str(texts), *args)
        assert result.exit_code == 0, _said(result)
    two = json.loads((tmp_path / "s2.json").read_text())["settings"]
    five = json.loads((tmp_path / "s5.json").read_text())["settings"]
    assert two["methods"]["integrated_gradients"]["steps"] == 2
    assert five["methods"]["integrated_gradients"]["steps"] == 5


# P08 ------------------------------------------------------------------------------


def _ones(forward, targets, layers):
    batch = forward.batch
    scores = torch.ones(*batch.input_ids.shape)[:, None].expand(-1, len(layers.indices), -1)
    return broadcast_targets(scores, targets)


def test_scores_on_the_meta_device_are_refused_naming_the_method(model, registries):
    @register_method
    @dataclass
    class OnMeta(AttributionMethod):
        name: ClassVar[str] = "on_meta"
        description: ClassVar[str] = "scores on the meta device"

        def attribute(self, model, forward, targets, layers):
            return _ones(forward, targets, layers).to("meta")

    with pytest.raises(
        InvalidInputError, match="method 'on_meta': attribute.. returned scores on meta"
    ):
        model.explain(TEXT, method="on_meta")


# P09 ------------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["target", "layer", "dropped_tokens", "preset", "contrast"])
def test_an_option_named_like_a_settings_key_is_refused_at_registration(option, registries):
    cls = dataclass(
        type(
            "Clashing",
            (AttributionMethod,),
            {
                "__annotations__": {option: "str"},
                option: "x",
                "name": "clashing",
                "description": "an option named like a settings key",
                "attribute": lambda self, model, forward, targets, layers: None,
            },
        )
    )
    with pytest.raises(InvalidInputError, match=f"option {option} is named like"):
        register_method(cls)


def test_an_option_named_like_explains_batch_size_stays_valid(model, registries):
    @register_method
    @dataclass
    class Batched(AttributionMethod):
        name: ClassVar[str] = "batched"
        description: ClassVar[str] = "a method with a batch_size of its own"
        batch_size: int = 7

        def attribute(self, model, forward, targets, layers):
            return _ones(forward, targets, layers)

    built = model.explain(TEXT, method=normxlogit.get_method("batched", batch_size=3))
    assert built.settings["batch_size"] == 3
    with pytest.raises(InvalidInputError, match="batch_size= is both explain"):
        model.explain(TEXT, method="batched", batch_size=3)


def test_no_built_in_method_has_a_reserved_option():
    for name in normxlogit.list_methods():
        assert not set(method_options(name)) & RESERVED_OPTIONS, name


def test_every_key_an_explanation_adds_to_the_settings_is_reserved(model):
    options = set(method_options("integrated_gradients"))
    made = [
        model.explain(TEXT, "integrated_gradients", steps=2, contrast=1, target=0),
        model.explain(TEXT, "integrated_gradients", steps=2, aggregate="sum"),
        model.explain(TEXT, "integrated_gradients", steps=2, contrast_input="a bad movie"),
    ]
    for explanation in made:
        assert set(explanation.settings) - options <= RESERVED_OPTIONS
