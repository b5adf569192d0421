"""``normxlogit.evaluate``: protocols, perturbations, metrics and result tables."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

import normxlogit
from normxlogit.common.errors import InvalidInputError
from normxlogit.evaluation import EvaluationResult, Protocol, list_metrics, metric_info
from normxlogit.evaluation.context import ExplanationSet, build_context
from normxlogit.evaluation.hard import hard_outcome
from tests.conftest import explainable, sharp_model

TEXTS = [
    "the film was a quiet and lovely surprise",
    "dull plot",
    "an awful, boring mess of a movie that never ends",
]


def with_scores(explanations, scores, method):
    return [
        replace(e, scores=np.asarray(s, dtype=float), method=method)
        for e, s in zip(explanations, scores, strict=True)
    ]


def ramp(explanations):
    """Scores that rank tokens left to right (position 0 highest)."""
    return [-np.arange(len(e.tokens), dtype=float) for e in explanations]


class Recorder:
    """Wraps ``run_backbone`` to keep every input it is given."""

    def __init__(self, model):
        self.model, self.calls = model, []
        self.original = model.run_backbone

    def __enter__(self):
        def recording(**inputs):
            self.calls.append(
                {k: v.detach().clone() for k, v in inputs.items() if torch.is_tensor(v)}
            )
            return self.original(**inputs)

        self.model.run_backbone = recording
        return self

    def __exit__(self, *exc):
        del self.model.run_backbone

    def real_rows(self, key="input_ids"):
        """Every recorded row's real (unpadded) part, in no particular order: the runner
        packs rows by length, so a row's place in a pass says nothing."""
        rows = []
        for call in self.calls:
            # a pass without padding runs without a mask
            masks = call.get("attention_mask", torch.ones(call[key].shape[:2])).bool()
            for values, mask in zip(call[key], masks, strict=True):
                rows.append(tuple(values[mask].tolist()))
        return rows

    def stacked(self, key):
        width = max(c[key].shape[1] for c in self.calls)
        padded = [
            torch.nn.functional.pad(
                c[key], (0, 0) * (c[key].dim() - 2) + (0, width - c[key].shape[1])
            )
            for c in self.calls
        ]
        return torch.cat(padded)


def context_for(model, explanations, protocol=None, labels=None):
    explained = ExplanationSet.build(explanations)
    protocol = (protocol or Protocol()).resolved(model)
    return build_context(
        model, protocol, explained, list(range(len(explained.texts))), labels, None, -1, 7
    )


# ----------------------------------------------------------------- protocol
def test_protocol_defaults_follow_the_papers_and_resolve_per_model():
    protocol = Protocol()
    assert protocol.ratios == tuple(round(0.1 * k, 1) for k in range(1, 10))
    assert protocol.pis[0] == 0.05 and protocol.pis[-1] == 0.95 and len(protocol.pis) == 19
    assert protocol.samples == 15 and protocol.steps == 20 and protocol.step == 0.05
    assert protocol.protect == "first" and protocol.routing == "dynamic"
    encoder = protocol.resolved(explainable("bert", "classification"))
    decoder = protocol.resolved(explainable("llama", "causal_lm"))
    assert (encoder.replacement, encoder.distribution) == ("mask", "labels")
    assert (decoder.replacement, decoder.distribution) == ("delete", "vocabulary")


def test_protocol_refuses_bad_settings_and_round_trips():
    with pytest.raises(normxlogit.InvalidInputError, match="routing"):
        Protocol(routing="sometimes")
    with pytest.raises(normxlogit.InvalidInputError, match="unknown protocol setting"):
        Protocol().with_options(colour="red")
    with pytest.raises(normxlogit.InvalidInputError, match="pis"):
        Protocol(pis=(0.0, 0.5))
    protocol = Protocol(seed=3, ratios=(0.2, 0.5), routing="fixed")
    assert Protocol.from_dict(protocol.to_dict()) == protocol


# ------------------------------------------------------- hard perturbations
def test_masking_perturbs_the_top_int_len_k_tokens_never_cls_or_padding():
    model = explainable("bert", "classification")
    base = model.explain(TEXTS, method="random")
    explanations = with_scores(base, ramp(base), "ramp")
    ctx = context_for(model, explanations, Protocol(ratios=(0.3, 0.6)))
    batch = ctx.batch
    with Recorder(model) as recorder:
        hard_outcome(ctx, (0.3, 0.6), top=True)
    got = recorder.real_rows()
    assert len(got) == len(TEXTS) * 2  # one row per text x ratio (one method)
    mask_id = model.tokenizer.mask_token_id
    expected = []
    for b in range(len(TEXTS)):
        real = batch.input_ids[b, batch.attention_mask[b].bool()]
        for k in (0.3, 0.6):
            n = int(len(real) * k)
            # ramp scores: the eligible tokens right after [CLS] go first; [SEP] is
            # eligible; [CLS] and padding are untouched
            row = real.clone()
            row[1 : 1 + n] = mask_id
            expected.append(tuple(row.tolist()))
    assert sorted(got) == sorted(expected)
    # a pass is cut to its longest row: no column of padding alone; a pass without
    # padding runs without a mask
    for call in recorder.calls:
        if "attention_mask" in call:
            assert bool(call["attention_mask"].bool().any(0).all())
            assert not bool(call["attention_mask"].bool().all())


def test_sufficiency_masks_everything_but_the_top_tokens_and_sep_is_eligible():
    model = explainable("bert", "classification")
    base = model.explain(TEXTS[1:2], method="random")
    explanations = with_scores(base, ramp(base), "ramp")
    ctx = context_for(model, explanations, Protocol(ratios=(0.25,)))
    with Recorder(model) as recorder:
        hard_outcome(ctx, (0.25,), top=False)
    row = recorder.calls[0]["input_ids"][0]
    length = len(base[0].tokens)
    n = int(length * 0.25)
    masked = (row == model.tokenizer.mask_token_id).nonzero().squeeze(-1).tolist()
    assert masked == list(range(1 + n, length))  # the last one is [SEP]
    assert base[0].tokens[-1] == "[SEP]"


def test_deletion_removes_the_top_tokens_and_keeps_the_reading_position():
    model = explainable("llama", "classification")
    base = model.explain(TEXTS, method="random")
    explanations = with_scores(base, ramp(base), "ramp")
    ctx = context_for(model, explanations, Protocol(ratios=(0.5,)))
    assert ctx.protocol.replacement == "delete"
    with Recorder(model) as recorder:
        outcome = hard_outcome(ctx, (0.5,), top=True)
    expected_ids, expected_positions = [], []
    for item in base:
        ids = model.tokenizer.convert_tokens_to_ids(item.tokens)
        n = int(len(ids) * 0.5)
        # ramp: the first n eligible tokens go; the first token is BOS-like only if special
        start = 1 if item.special[0] else 0
        kept = ids[:start] + ids[start + n :]
        expected_ids.append(tuple(kept))
        expected_positions.append(tuple(range(len(kept))))
    assert sorted(recorder.real_rows()) == sorted(expected_ids)
    assert sorted(recorder.real_rows("position_ids")) == sorted(expected_positions)
    assert outcome.predicted.shape == (1, len(TEXTS), 1)


def test_batched_evaluation_matches_one_text_at_a_time():
    model = sharp_model()
    explanations = model.explain(TEXTS, method="normxlogit")
    together = normxlogit.evaluate(model, explanations, ["comp_cd", "suff_cd"], batch_size=3)
    alone = normxlogit.evaluate(
        model, explanations, ["comp_cd", "suff_cd"], batch_size=1, rows_per_forward=2
    )
    np.testing.assert_allclose(together.frame["value"], alone.frame["value"], atol=1e-5)


def test_a_text_held_twice_is_scored_once_per_instance():
    """Datasets repeat texts (STS-B does): lists in the same order align by position."""
    model = sharp_model()
    texts = [TEXTS[0], TEXTS[1], TEXTS[0]]
    result = normxlogit.evaluate(
        model,
        {
            "a": model.explain(texts, method="normxlogit"),
            "b": model.explain(texts, method="random"),
        },
        ["comp_cd", "comp_acc"],
        labels=[0, 1, 1],
    )
    frame = result.frame
    assert sorted(set(frame["instance"])) == [0, 1, 2]
    assert len(frame) == 2 * 2 * 3 * 9  # methods x metrics x instances x ratios
    rows = frame[(frame["method"] == "a") & (frame["metric"] == "comp_cd")]
    first, third = (rows[rows["instance"] == i]["value"].to_numpy() for i in (0, 2))
    np.testing.assert_allclose(first, third)  # the same text, scored the same, once each
    shuffled = model.explain([TEXTS[1], TEXTS[0], TEXTS[0]], method="random")
    with pytest.raises(normxlogit.InvalidInputError, match="same text twice"):
        normxlogit.evaluate(
            model, {"a": model.explain(texts, method="normxlogit"), "b": shuffled}, ["comp_cd"]
        )


# -------------------------------------------------------------- the oracle
def leave_one_out(model, texts):
    """Scores from masking one token at a time: the drop of the predicted label."""
    out = []
    for text in texts:
        batch = model.encode([text])
        with torch.no_grad():
            clean = model.forward(batch).logits.softmax(-1)[0]
            label = int(clean.argmax())
            length = batch.input_ids.shape[1]
            ids = batch.input_ids.repeat(length, 1)
            ids[torch.arange(length), torch.arange(length)] = model.tokenizer.mask_token_id
            inputs = {**model.backbone_inputs(batch), "input_ids": ids}
            inputs = {
                k: (v.repeat(length, 1) if k != "input_ids" else v) for k, v in inputs.items()
            }
            states = model.run_backbone(**inputs).last_hidden_state[:, 0]
            probs = model.output_logits(states).softmax(-1)[:, label]
        out.append((clean[label] - probs).numpy())
    return out


def test_an_oracle_beats_random_and_its_reverse_loses_on_comprehensiveness():
    model = sharp_model()
    texts = TEXTS + ["a warm, funny and wise story", "nothing works in this tired sequel at all"]
    base = model.explain(texts, method="random")
    oracle = leave_one_out(model, texts)
    explanations = {
        "oracle": with_scores(base, oracle, "oracle"),
        "random": base,
        "reverse": with_scores(base, [-s for s in oracle], "reverse"),
    }
    summary = normxlogit.evaluate(model, explanations, ["comp_cd"]).summary()
    values = summary.values["comp_cd"]
    assert values["oracle"] > values["random"] > values["reverse"]
    assert summary.ranking("comp_cd") == ["oracle", "random", "reverse"]


# ------------------------------------------------------------------- soft
def test_soft_masks_zero_only_eligible_embeddings_at_the_calibrated_rate():
    from normxlogit.evaluation.soft import soft_scores

    model = explainable("bert", "classification")
    base = model.explain(TEXTS[:1], method="normxlogit")
    samples = 200
    ctx = context_for(model, base, Protocol(samples=samples, pis=(0.4,)))
    with Recorder(model) as recorder:
        soft_scores(ctx, (0.4,), complement=False)
    embeds = recorder.stacked("inputs_embeds")
    clean = model.model.get_input_embeddings()(ctx.batch.input_ids)[0]
    zeroed = embeds.abs().sum(-1) == 0
    special = torch.tensor(base[0].special)
    reference, baseline, draws = zeroed[0], zeroed[1], zeroed[2:]
    assert not reference.any()
    assert torch.equal(baseline, ~special)  # the zero baseline: every eligible token
    assert draws.shape[0] == samples and not (draws & special).any()
    untouched = ~draws
    assert torch.equal(embeds[2:][untouched], clean.expand_as(embeds[2:])[untouched])
    kept = untouched[:, ~special].float().mean()
    assert abs(float(kept) - 0.4) < 0.06  # calibrated: mean keep probability is pi


def test_stochastic_metrics_repeat_with_a_seed_and_change_with_another():
    model = sharp_model()
    explanations = model.explain(TEXTS, method="normxlogit")
    protocol = Protocol(samples=4, pis=(0.3, 0.7))
    metrics = ["soft_ns", "pi_soft_nc"]
    first = normxlogit.evaluate(model, explanations, metrics, protocol=protocol)
    again = normxlogit.evaluate(model, explanations, metrics, protocol=protocol)
    other = normxlogit.evaluate(
        model, explanations, metrics, protocol=protocol.with_options(seed=1)
    )
    np.testing.assert_array_equal(first.frame["value"], again.frame["value"])
    assert not np.allclose(first.frame["value"], other.frame["value"])
    assert other.protocol.seed == 1 and first.protocol.seed == 0


# ----------------------------------------------------------- result tables
def test_result_frame_summary_and_round_trip(tmp_path):
    model = explainable("bert", "classification")
    explanations = model.explain(TEXTS, method="normxlogit") + model.explain(TEXTS, method="random")
    labels = [0, 1, 2]
    result = normxlogit.evaluate(
        model,
        explanations,
        ["comp_cd", "suff_acc", "deletion"],
        labels=labels,
        protocol=Protocol(ratios=(0.2, 0.5)),
    )
    frame = result.frame
    assert set(frame["metric"]) == {"comp_cd", "suff_acc", "deletion"}
    assert len(frame[frame.metric == "comp_cd"]) == 2 * 3 * 2  # methods x texts x ratios
    assert len(frame[frame.metric == "deletion"]) == 2 * 3 * 20
    summary = result.summary()
    assert summary.methods == ["normxlogit", "random"]
    assert summary.metrics == ["comp_cd", "suff_acc", "deletion"]
    assert "comp_cd (AOPC ↑)" in summary.to_markdown()
    assert "deletion (AUC ↑)" in summary.to_markdown()
    saved = EvaluationResult.load(result.save(tmp_path / "result.json"))
    assert saved.protocol == result.protocol
    np.testing.assert_allclose(saved.summary().values, summary.values)


def _hand_made_result(rng) -> EvaluationResult:
    """Two methods on four instances: comp_cd over ratios, pi_soft_nc over pi on two
    scored steps of a generation, and a regression model's comp_acc (gold values)."""
    import pandas as pd

    rows = []
    for instance in range(4):
        for method in ("a", "b"):
            for x in (0.1, 0.5, 0.9):
                rows.append((instance, method, "comp_cd", "ratio", x, rng.random(), np.nan, 0))
                rows.append((instance, method, "comp_acc", "ratio", x, rng.random(), 1.0, 0))
            for step in (0, 5):
                for x in (0.25, 0.5, 0.75):
                    value = rng.random()
                    rows.append((instance, method, "pi_soft_nc", "pi", x, value, np.nan, step))
    columns = ["instance", "method", "metric", "axis", "x", "value", "gold", "step"]
    frame = pd.DataFrame(rows, columns=columns).assign(text="")
    frame.loc[frame["metric"] == "comp_acc", "gold"] = frame["instance"] + 0.5
    return EvaluationResult(frame, Protocol(), ["comp_cd", "pi_soft_nc", "comp_acc"])


def test_instance_summaries_average_to_the_summary_and_give_standard_errors():
    result = _hand_made_result(np.random.default_rng(0))
    summaries = result.instance_summaries()
    assert list(summaries.columns) == ["comp_cd", "pi_soft_nc", "comp_acc"]
    assert summaries.index.names == ["method", "instance"] and len(summaries) == 8
    # each instance's own AOPC / AUC (a generation's steps averaged first), by hand
    frame = result.frame
    one = frame[(frame["method"] == "b") & (frame["instance"] == 2)]
    comp = one[one["metric"] == "comp_cd"]["value"].mean()
    soft = one[one["metric"] == "pi_soft_nc"].groupby("x")["value"].mean()
    trapezoid = getattr(np, "trapezoid", None) or np.trapz
    assert summaries.loc[("b", 2), "comp_cd"] == pytest.approx(comp)
    assert summaries.loc[("b", 2), "pi_soft_nc"] == pytest.approx(trapezoid(soft, soft.index))
    # their mean is the table's number; a correlation across instances has none
    summary = result.summary()
    for metric in ("comp_cd", "pi_soft_nc"):
        for method in ("a", "b"):
            mean = summaries.loc[method, metric].mean()
            assert mean == pytest.approx(summary.loc[method, metric])
    assert summaries["comp_acc"].isna().all() and np.isfinite(summary["comp_acc"]).all()
    errors = result.standard_errors()
    assert list(errors.index) == ["a", "b"]
    values = summaries.loc["a", "pi_soft_nc"].to_numpy()
    assert errors.loc["a", "pi_soft_nc"] == pytest.approx(values.std(ddof=1) / 2)
    assert errors["comp_acc"].isna().all()
    # one instance gives no spread
    single = EvaluationResult(frame[frame["instance"] == 0], Protocol(), result.metrics)
    assert single.standard_errors().isna().all().all()


def test_paired_differences_are_a_paired_t_test():
    from scipy import stats

    result = _hand_made_result(np.random.default_rng(1))
    summaries = result.instance_summaries()
    paired = result.paired_differences("a")
    assert list(paired["method"]) == ["b"] * 3
    row = paired.set_index("metric").loc["pi_soft_nc"]
    differences = (summaries.loc["b", "pi_soft_nc"] - summaries.loc["a", "pi_soft_nc"]).to_numpy()
    assert row["difference"] == pytest.approx(differences.mean())
    assert row["standard_error"] == pytest.approx(differences.std(ddof=1) / 2)
    assert row["instances"] == 4
    reference = stats.ttest_rel(summaries.loc["b", "pi_soft_nc"], summaries.loc["a", "pi_soft_nc"])
    assert row["p_value"] == pytest.approx(reference.pvalue)
    # the paired error is the spread of the differences, not of either method alone
    assert result.standard_errors().loc["b", "pi_soft_nc"] != pytest.approx(row["standard_error"])
    # a correlation has no per-instance number: nothing to pair
    acc = paired.set_index("metric").loc["comp_acc"]
    assert acc["instances"] == 0 and np.isnan(acc["p_value"])
    with pytest.raises(normxlogit.InvalidInputError, match="no method .c. to compare against"):
        result.paired_differences("c")


def test_paired_differences_use_only_instances_both_have():
    import pandas as pd

    from normxlogit.evaluation.stats import paired_differences

    index = pd.MultiIndex.from_product([["a", "b"], [0, 1, 2]], names=["method", "instance"])
    summaries = pd.DataFrame({"m": [1.0, 2.0, 3.0, 1.5, np.nan, 3.5]}, index=index)
    row = paired_differences(summaries, "a").iloc[0]
    assert (row["instances"], row["difference"]) == (2, pytest.approx(0.5))
    # every difference the same: no spread, and certainly not zero
    assert (row["standard_error"], row["p_value"]) == (0.0, 0.0)
    alone = paired_differences(summaries.drop(index=[("b", 0), ("b", 2)]), "a").iloc[0]
    assert alone["instances"] == 0 and np.isnan(alone["difference"])


def test_metrics_carry_their_metadata():
    assert set(list_metrics()) >= {
        "comp_cd",
        "comp_acc",
        "suff_cd",
        "suff_acc",
        "soft_nc",
        "soft_ns",
        "pi_soft_nc",
        "pi_soft_ns",
        "insertion",
        "deletion",
        "evidence_ap",
        "evidence_dot",
    }
    assert metric_info("comp_cd").higher_is_better and not metric_info("suff_cd").higher_is_better
    assert (
        not metric_info("insertion").higher_is_better and metric_info("deletion").higher_is_better
    )
    assert metric_info("pi_soft_nc").axis == "pi" and metric_info("pi_soft_nc").summary == "auc"


def test_clear_errors():
    model = explainable("bert", "classification")
    explanations = model.explain(TEXTS[:2], method="normxlogit")
    with pytest.raises(normxlogit.InvalidInputError, match="unknown metric"):
        normxlogit.evaluate(model, explanations, ["comp_xyz"])
    with pytest.raises(normxlogit.InvalidInputError, match="labels"):
        normxlogit.evaluate(model, explanations, ["comp_acc"])
    with pytest.raises(normxlogit.InvalidInputError, match="2 texts"):
        normxlogit.evaluate(model, explanations, ["comp_acc"], labels=[0])
    words = [e.aggregate_words() for e in model.explain(["unbelievably dull"], method="normxlogit")]
    with pytest.raises(normxlogit.InvalidInputError, match="tokenisation"):
        normxlogit.evaluate(model, words, ["comp_cd"])


# ------------------------------------------------------ tasks and metrics
def test_insertion_and_deletion_curves_run_over_twenty_steps():
    model = sharp_model()
    explanations = model.explain(TEXTS, method="normxlogit")
    result = normxlogit.evaluate(model, explanations, ["deletion", "insertion"])
    frame = result.frame
    steps = sorted(set(frame["x"]))
    assert len(steps) == 20 and steps[0] == pytest.approx(0.05) and steps[-1] == pytest.approx(1)
    assert set(frame["value"]) <= {0.0, 1.0}  # a flip or not
    inserted_all = frame[(frame.metric == "insertion") & np.isclose(frame.x, 1.0)]
    assert (inserted_all["value"] == 0).all()  # everything back: the prediction is the clean one
    summary = result.summary().values
    assert 0 <= summary.loc["normxlogit", "deletion"] <= 0.95


def test_regression_accuracy_is_a_pearson_correlation_and_confidence_drop_is_refused():
    model = explainable("bert", "regression")
    explanations = model.explain(TEXTS, method="normxlogit")
    gold = [0.5, 3.0, 4.5]
    result = normxlogit.evaluate(model, explanations, ["comp_acc"], labels=gold)
    rows = result.frame[np.isclose(result.frame.x, 0.5)]
    np.testing.assert_allclose(rows["gold"], gold)
    curve = result.curves()
    expected = np.corrcoef(rows["value"], gold)[0, 1]
    assert curve[np.isclose(curve.x, 0.5)]["value"].item() == pytest.approx(expected)
    with pytest.raises(normxlogit.InvalidInputError, match="regression"):
        normxlogit.evaluate(model, explanations, ["comp_cd"])
    assert normxlogit.evaluate(model, explanations, labels=gold).metrics == ["comp_acc", "suff_acc"]
    # refused before any work: a metric that applies does not run first
    for metric in ("soft_nc", "pi_soft_ns", "deletion"):
        with pytest.raises(normxlogit.InvalidInputError, match=f"^{metric} .*regression"):
            normxlogit.evaluate(model, explanations, ["comp_acc", metric], labels=gold)


def test_evidence_alignment_per_layer_leaves_out_the_masked_target():
    model = explainable("bert", "masked_lm")
    texts = ["the keys to the cabinet [MASK] on the table", "she [MASK] herself"]
    explanations = model.explain(texts, method="normxlogit", layer="all")
    evidence = []
    for item in explanations:
        vector = np.zeros(len(item.tokens))
        vector[2] = 1  # "keys" / "herself"-side word as the evidence
        evidence.append(vector)
    result = normxlogit.evaluate(
        model, explanations, ["evidence_ap", "evidence_dot"], evidence=evidence
    )
    frame = result.frame
    layers = model.num_layers + 1
    assert len(frame[frame.metric == "evidence_ap"]) == len(texts) * layers
    item = explanations[0]
    target = item.tokens.index("[MASK]")
    last = frame[(frame.metric == "evidence_ap") & (frame.instance == 0) & (frame.x == layers - 1)]
    scores = np.delete(item.scores[-1], target)
    expected = normxlogit.metrics.average_precision(scores, np.delete(evidence[0], target))
    assert last["value"].item() == pytest.approx(expected)
    softmax = normxlogit.evaluate(
        model,
        explanations,
        ["evidence_dot"],
        evidence=evidence,
        protocol=Protocol(dot_product="softmax"),
    )
    assert softmax.protocol.dot_product == "softmax"
    raw = result.summary().values["evidence_dot"].iloc[0]
    assert softmax.summary().values["evidence_dot"].iloc[0] != pytest.approx(raw)
    with pytest.raises(normxlogit.InvalidInputError, match="zeros and ones"):
        normxlogit.evaluate(model, explanations, ["evidence_ap"], evidence=[[1, 0], [0, 1]])


def test_soft_metrics_on_a_decoder_use_the_vocabulary_and_both_routings():
    model = explainable("llama", "causal_lm")
    explanations = model.explain(TEXTS, method="normxlogit")
    protocol = Protocol(samples=3, pis=(0.2, 0.8))
    dynamic = normxlogit.evaluate(model, explanations, ["pi_soft_ns"], protocol=protocol)
    fixed = normxlogit.evaluate(
        model, explanations, ["pi_soft_ns"], protocol=protocol.with_options(routing="fixed")
    )
    assert dynamic.protocol.distribution == "vocabulary"
    assert fixed.protocol.routing == "fixed"
    assert np.isfinite(dynamic.frame["value"]).all() and np.isfinite(fixed.frame["value"]).all()
    assert not np.allclose(dynamic.frame["value"], fixed.frame["value"])
    assert ((dynamic.frame["value"] >= 0) & (dynamic.frame["value"] <= 1)).all()


def test_fixed_routing_is_refused_where_attention_cannot_be_replayed():
    model = explainable("deberta-v2", "classification")
    explanations = model.explain(TEXTS[:1], method="normxlogit")
    with pytest.raises(normxlogit.UnsupportedModelError, match="fixed routing"):
        normxlogit.evaluate(
            model, explanations, ["soft_ns"], protocol=Protocol(routing="fixed", samples=2)
        )


def test_summary_table_sorts_and_colours_by_metric_direction():
    import pandas as pd
    from rich.console import Console

    from normxlogit.evaluation import SummaryTable

    values = pd.DataFrame(
        {"comp_cd": [0.2, 0.5, 0.1], "suff_cd": [0.3, 0.1, 0.2]}, index=["a", "b", "c"]
    )
    table = SummaryTable(values, {m: metric_info(m) for m in values.columns})
    assert table.ranking("comp_cd") == ["b", "a", "c"]
    assert table.ranking("suff_cd") == ["b", "c", "a"]  # lower is better
    assert table.sort_by("suff_cd").methods == ["b", "c", "a"]
    markdown = table.to_markdown()
    assert "| b | **0.500** | **0.100** |" in markdown
    console = Console(record=True, width=120)
    console.print(table)
    assert "suff_cd (AOPC ↓)" in console.export_text()
    assert "background-color" in table._repr_html_()
    assert '"higher_is_better": false' in table.to_json()


def test_expected_retained_is_the_sum_of_the_rescaled_scores():
    """E[R] (pi-Soft table 2): the rescaled keep probabilities summed over the eligible
    tokens; a descriptive quantity (no best) that perturbs nothing."""
    model = explainable("bert", "classification")
    base = model.explain(TEXTS, method="normxlogit")
    explanations = with_scores(base, ramp(base), "ramp")
    with Recorder(model) as recorder:
        result = normxlogit.evaluate(model, explanations, ["expected_retained"])
    assert not recorder.calls  # reads the scores alone: no clean pass, no perturbed rows
    values = result.frame.sort_values("instance")["value"].to_numpy()
    for explanation, value in zip(explanations, values, strict=True):
        eligible = ~np.asarray(explanation.special)
        scores = np.asarray(explanation.scores)[eligible]
        unit = (scores - scores.min()) / (scores.max() - scores.min())
        assert value == pytest.approx(unit.sum(), rel=1e-5)
    info = metric_info("expected_retained")
    assert info.higher_is_better is None and not info.ranked and info.arrow == ""
    summary = result.summary()
    assert "**" not in summary.to_markdown()  # nothing is bold: nothing is best
    assert "(mean)" in summary.header("expected_retained")
    import io

    from rich.console import Console

    shown = io.StringIO()
    Console(file=shown, width=200).print(summary)  # the terminal view marks no best
    assert "expected_retained" in shown.getvalue()
    with pytest.raises(InvalidInputError, match="descriptive"):
        summary.ranking("expected_retained")
