"""Round thirty-eight of new-user probes, probe b: a ReAGent refusal for a folder
classifier came after the grid's earlier experiments had run (P01); an explanation file
without ``settings.contrast_input`` but with its tokens and alignment loaded as a plain
one (P02); the page's faithfulness refusal for a contrast-input run pointed to
plausibility metrics it does not offer (P03); ``--versus`` dropped a method N/A in one
experiment from that experiment's table without a word (P04); a BLiMP pair whose target
or foil reads as the unknown token was explained against ``[UNK]`` (P05)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

import normxlogit
from normxlogit import Explanation
from normxlogit.bench import load_config
from normxlogit.common.errors import InvalidFileError, InvalidInputError, NormXLogitError
from normxlogit.sanity.metrics import explain_again

from .bench.helpers import COMPLETE
from .conftest import build_model, fresh_tokenizer, sharp_model


def _reagent_grid(folder: Path, models: list[Path | str], options: str = "") -> Path:
    data = folder / "d.tsv"
    data.write_text("text\tlabel\na good film\tpos\nthe plot is thin\tneg\n")
    experiments = "".join(
        f'[[experiments]]\nmodel = "{model}"\ndataset = "{data}"\n' for model in models
    )
    config = folder / "c.toml"
    config.write_text(
        'seeds = [0]\nmetrics = ["comp_cd"]\n[[methods]]\nname = "reagent"\n'
        f'options = {{ sampler = "uniform", num_probes = 1{options} }}\n{experiments}'
    )
    return config


# ------------------------------------------------------------------ P01
def test_p01_a_folder_classifier_is_refused_when_the_config_is_read(
    tmp_path, tiny_masked_lm, tiny_classifier
):
    config = _reagent_grid(tmp_path, [tiny_masked_lm, tiny_classifier])
    with pytest.raises(NormXLogitError) as caught:
        load_config(config)
    assert "experiment 2: method reagent" in str(caught.value)
    assert "options = { stopping_condition_top_k = 1 }" in str(caught.value)


def test_p01_a_folder_regressor_is_refused_when_the_config_is_read(tmp_path):
    model = build_model("bert", "classification")
    model.config.num_labels = 1
    model.config.problem_type = "regression"
    model.save_pretrained(tmp_path / "reg")
    fresh_tokenizer().save_pretrained(tmp_path / "reg")
    with pytest.raises(NormXLogitError, match="cannot explain a regression model"):
        load_config(_reagent_grid(tmp_path, [tmp_path / "reg"]))


def test_p01_bench_status_refuses_before_any_run(tmp_path, tiny_classifier):
    from .conftest import invoke_in

    config = _reagent_grid(tmp_path, [tiny_classifier])
    said = invoke_in(tmp_path, "bench", "status", str(config), "--store", "s.sqlite")
    assert said.exit_code != 0
    assert "stopping_condition_top_k = 1" in said.output


def test_p01_folder_models_reagent_can_run_are_read(tmp_path, tiny_classifier, tiny_masked_lm):
    below = _reagent_grid(
        tmp_path, [tiny_classifier, tiny_masked_lm], ", stopping_condition_top_k = 1"
    )
    assert len(load_config(below).experiments) == 2


# ------------------------------------------------------------------ P02
@pytest.fixture(scope="module")
def against_input(tmp_path_factory):
    model = sharp_model()
    path = tmp_path_factory.mktemp("p02") / "e.json"
    model.explain(
        "a good film indeed", "gradient_x_input", contrast_input="a bad film indeed"
    ).save(path)
    return model, json.loads(path.read_text())


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s.pop("contrast_input"),
        lambda s: s.update(contrast_input=""),
        lambda s: s.pop("contrast_alignment"),
        lambda s: s.pop("contrast_input_tokens"),
    ],
    ids=["input-removed", "input-blank", "alignment-removed", "tokens-removed"],
)
def test_p02_a_file_with_a_partial_contrast_input_record_is_refused(tmp_path, against_input, edit):
    _, saved = against_input
    data = json.loads(json.dumps(saved))
    edit(data["settings"])
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidFileError, match="contrast-input record is incomplete"):
        Explanation.load(path)


def test_p02_the_saved_file_still_loads(tmp_path, against_input):
    _, saved = against_input
    path = tmp_path / "e.json"
    path.write_text(json.dumps(saved))
    assert Explanation.load(path).settings["contrast_input"] == "a bad film indeed"


def test_p02_sanity_refuses_an_edited_contrast_input_text(tmp_path, against_input):
    model, saved = against_input
    data = json.loads(json.dumps(saved))
    data["settings"]["contrast_input"] = "a dull boring film"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidInputError, match="not its recorded contrast_input_tokens"):
        explain_again(model, [Explanation.load(path)])


# ------------------------------------------------------------------ P03
def test_p03_the_page_names_the_sanity_metrics_not_plausibility(against_input):
    from normxlogit.serve.phrasing import page_named

    model, saved = against_input
    explanation = Explanation.from_dict(saved)
    with pytest.raises(InvalidInputError) as caught:
        normxlogit.evaluate(model, [explanation], ["comp_cd"])
    said = page_named(str(caught.value))
    assert "plausibility" not in said
    assert "sanity metrics (sanity_spearman, sanity_top_k)" in said
    assert "contrast_input=" not in said


# ------------------------------------------------------------------ P04
def test_p04_a_method_na_in_one_experiment_is_named_under_its_table():
    from normxlogit.bench.report import paired_table

    differences = pd.DataFrame(
        {
            "method": ["normxlogit"],
            "metric": ["comp_cd"],
            "instances": [4],
            "difference": [0.1],
            "standard_error": [0.05],
            "p_value": [0.5],
        }
    )
    result = SimpleNamespace(
        experiment=SimpleNamespace(name="tgpt:ev.tsv"),
        frame=pd.DataFrame({"method": ["random", "normxlogit"]}),
        skipped={"attnlrp": "attnlrp has no rules for gpt2."},
        paired_differences=lambda versus: differences,
        **COMPLETE,
    )
    table = paired_table(result, "random")
    assert table is not None and "| normxlogit |" in table
    assert "attnlrp: N/A here, left out: attnlrp has no rules for gpt2." in table


# ------------------------------------------------------------------ P05
def test_p05_a_pair_whose_foil_reads_as_unknown_is_left_out():
    from normxlogit.data.blimp import BlimpPair
    from normxlogit.data.masked_pairs import mask_pair

    tokenizer = fresh_tokenizer()
    known = [w for w in ("cat", "dog", "film", "good", "bad") if w in tokenizer.get_vocab()]
    assert known, "the test tokenizer has none of the words"
    word = known[0]
    assert tokenizer.tokenize("☃") == [tokenizer.unk_token]

    def pair(good: str, bad: str) -> BlimpPair:
        fields = BlimpPair.__dataclass_fields__
        values = {name: None for name in fields}
        values.update(good=good, bad=bad)
        return BlimpPair(**{name: values[name] for name in fields})

    assert mask_pair(pair(f"the {word} here", "the ☃ here"), tokenizer) is None
    assert mask_pair(pair("the ☃ here", f"the {word} here"), tokenizer) is None
