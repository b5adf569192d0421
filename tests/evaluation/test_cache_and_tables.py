"""The converted-weights cache, metric ranges, summary tables, progress and saved results."""

from __future__ import annotations

import copy as copy_module
import json
import os
import pickle
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import normxlogit
from normxlogit.builtin import smollm2
from normxlogit.common.cache import MANIFEST, cached_folder, lock_path, verify

ROOT = Path(__file__).resolve().parents[2]

# A stand-in for the GGUF conversion: a tiny LLaMA from the config the test saved, plus
# the MiniLM tokenizer, written into the folder the cache hands over. Every call appends
# its process id to conversions.log so the tests can count the conversions.
FAKE_CONVERSION = textwrap.dedent(
    """
    import os, time
    from pathlib import Path

    def fake_convert(folder, workdir, pause=0.0):
        import torch
        import transformers as T
        from normxlogit.builtin.sources import minilm_dir

        with open(Path(workdir) / "conversions.log", "a") as log:
            log.write(f"{os.getpid()}\\n")
        time.sleep(pause)  # widen the window in which a second process arrives
        config = T.LlamaConfig.from_pretrained(Path(workdir) / "tiny-config")
        torch.manual_seed(0)
        T.LlamaForCausalLM(config).save_pretrained(folder)
        T.AutoTokenizer.from_pretrained(minilm_dir()).save_pretrained(folder)
    """
)

# One process of the concurrency test: wait until both are ready, then do a first load.
WORKER = FAKE_CONVERSION + textwrap.dedent(
    """
    import sys
    workdir, me = Path(sys.argv[1]), sys.argv[2]
    from normxlogit.builtin.smollm2 import load_smollm2

    (workdir / f"ready-{me}").touch()
    while not all((workdir / f"ready-{i}").exists() for i in ("a", "b")):
        time.sleep(0.01)
    model, tokenizer = load_smollm2(convert=lambda folder: fake_convert(folder, workdir, 1.0))
    ids = tokenizer("a tiny test", return_tensors="pt")
    logits = model(**ids).logits
    print("ok", tuple(logits.shape))
    """
)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty $NORMXLOGIT_CACHE and a tiny LLaMA config; returns the work folder."""
    import transformers as T

    from tests.conftest import DECODER, tokenizer

    monkeypatch.setenv("NORMXLOGIT_CACHE", str(tmp_path / "cache"))
    T.LlamaConfig(vocab_size=len(tokenizer()), pad_token_id=0, **DECODER).save_pretrained(
        tmp_path / "tiny-config"
    )
    return tmp_path


def fake_convert(workdir: Path):
    namespace: dict = {}
    exec(FAKE_CONVERSION, namespace)  # the same code the worker processes run
    return lambda folder: namespace["fake_convert"](folder, workdir)


def conversions(workdir: Path) -> int:
    log = workdir / "conversions.log"
    return len(log.read_text().split()) if log.exists() else 0


def cache_folder(workdir: Path) -> Path:
    return workdir / "cache" / smollm2.CACHE_NAME


def test_two_processes_loading_for_the_first_time_convert_once_and_both_succeed(cache):
    script = cache / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "NORMXLOGIT_CACHE": str(cache / "cache"), "PYTHONPATH": str(ROOT)}
    workers = [
        subprocess.Popen(
            [sys.executable, str(script), str(cache), me],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for me in ("a", "b")
    ]
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
        assert out.startswith("ok"), (out, err)
    assert conversions(cache) == 1  # the second process waited for the first one's cache
    folder = cache_folder(cache)
    assert verify(folder) is None  # complete: every file matches the manifest's hashes
    assert (folder / MANIFEST).is_file() and (folder / "model.safetensors").is_file()
    leftovers = [p.name for p in folder.parent.iterdir() if p != folder]
    assert leftovers == [lock_path(folder).name]  # no staging folder left behind


def test_a_truncated_safetensors_file_is_detected_and_rebuilt_with_a_warning(cache):
    convert = fake_convert(cache)
    first, _ = smollm2.load_smollm2(convert=convert)
    folder = cache_folder(cache)
    weights = folder / "model.safetensors"
    size = weights.stat().st_size
    # a new, truncated file (truncating in place would pull the pages from under the
    # loaded model's memory map)
    truncated = folder / "truncated"
    truncated.write_bytes(weights.read_bytes()[: size // 2])
    os.replace(truncated, weights)
    assert "model.safetensors" in verify(folder, hashes=False)
    with pytest.warns(normxlogit.NormXLogitWarning, match=re.escape(str(folder))):
        again, _ = smollm2.load_smollm2(convert=convert)
    assert conversions(cache) == 2
    assert weights.stat().st_size == size and verify(folder) is None
    for a, b in zip(first.parameters(), again.parameters(), strict=True):
        assert a.shape == b.shape and bool((a == b).all())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a complete cache loads silently, unconverted
        smollm2.load_smollm2(convert=convert)
    assert conversions(cache) == 2


def test_a_corrupted_file_of_the_right_size_is_rebuilt_when_loading_fails(cache):
    convert = fake_convert(cache)
    smollm2.load_smollm2(convert=convert)
    folder = cache_folder(cache)
    config = folder / "config.json"
    text = config.read_text()
    broken = folder / "broken"
    broken.write_text("}" * len(text.encode()))
    os.replace(broken, config)  # same size: only the hashes can tell
    assert verify(folder, hashes=False) is None and "config.json" in verify(folder)
    with pytest.warns(normxlogit.NormXLogitWarning, match="sha256"):
        smollm2.load_smollm2(convert=convert)
    assert conversions(cache) == 2 and verify(folder) is None


def test_loading_the_model_and_asking_for_its_folder_share_one_cache(cache, monkeypatch):
    """The default conversion records the GGUF it came from, whichever asks first: the
    model's load or the folder's users (adapters, benchmarks), so neither rebuilds it."""
    monkeypatch.setattr(smollm2, "_gguf_source", lambda: {"gguf": "fake.gguf", "bytes": 1})
    monkeypatch.setattr(smollm2, "_convert", fake_convert(cache))
    smollm2.load_smollm2()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "the cache folder is broken ..." would fail here
        folder = smollm2.smollm2_folder()
        smollm2.load_smollm2()
    assert conversions(cache) == 1
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["source"] == {"gguf": "fake.gguf", "bytes": 1}


def test_a_cache_without_a_manifest_is_rebuilt(cache):
    """A folder from an interrupted or older build (the old code wrote no manifest)."""
    convert = fake_convert(cache)
    smollm2.load_smollm2(convert=convert)
    folder = cache_folder(cache)
    (folder / MANIFEST).unlink()
    with pytest.warns(normxlogit.NormXLogitWarning, match="no normxlogit-cache.json"):
        smollm2.load_smollm2(convert=convert)
    assert conversions(cache) == 2 and verify(folder) is None


def test_stale_staging_folders_of_killed_processes_are_ignored_and_cleaned(cache):
    root = cache / "cache"
    name = smollm2.CACHE_NAME
    stale = [root / f".{name}.staging-999999-deadbeef", root / f".{name}.abc123"]
    for folder in stale:
        folder.mkdir(parents=True)
        (folder / "model.safetensors").write_bytes(b"half a file")
    lock_path(root / name).touch()  # a lock file left by a killed process does not block
    model, tokenizer = smollm2.load_smollm2(convert=fake_convert(cache))
    assert model.config.model_type == "llama" and len(tokenizer) > 0
    assert not any(folder.exists() for folder in stale)
    assert verify(cache_folder(cache)) is None and conversions(cache) == 1


def test_a_failed_conversion_leaves_no_cache_folder(cache):
    def failing(folder):
        (folder / "config.json").write_text("{}")
        raise RuntimeError("converter crashed")

    with pytest.raises(RuntimeError, match="converter crashed"):
        cached_folder("failing", failing)
    root = cache / "cache"
    assert not (root / "failing").exists()
    assert [p.name for p in root.iterdir()] == [".failing.lock"]
    calls = []
    folder = cached_folder("failing", lambda f: calls.append((f / "x.bin").write_bytes(b"1")))
    assert calls and verify(folder) is None and (folder / "x.bin").read_bytes() == b"1"
    assert cached_folder("failing", lambda f: calls.append(None)) == folder and len(calls) == 1


def test_a_cache_built_from_another_source_is_rebuilt(cache):
    """A new release of the weights package (another GGUF) rebuilds the cache once."""
    builds = []

    def build(folder):
        builds.append(folder)
        (folder / "weights.bin").write_bytes(b"w" * len(builds))

    old = {"gguf": "model.gguf", "bytes": 10}
    folder = cached_folder("sourced", build, source=old)
    assert cached_folder("sourced", build, source=old) == folder and len(builds) == 1
    with pytest.warns(normxlogit.NormXLogitWarning, match="built from"):
        cached_folder("sourced", build, source={"gguf": "model.gguf", "bytes": 11})
    assert len(builds) == 2 and (folder / "weights.bin").read_bytes() == b"ww"


def test_an_unwritable_cache_folder_names_the_variable_to_set(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("NORMXLOGIT_CACHE", str(blocker / "cache"))
    with pytest.raises(normxlogit.UnknownModelError, match="NORMXLOGIT_CACHE"):
        cached_folder("anything", lambda folder: None)


# ------------------------------------------------------------------ ranges
TEXTS = [
    "the film was a quiet and lovely surprise",
    "dull plot",
    "an awful, boring mess of a movie that never ends",
    "a warm, funny and wise story",
    "nothing works in this tired sequel at all",
]


def test_declared_ranges_are_true_bounds():
    from normxlogit.evaluation import metric_info

    inf = float("inf")
    expected = {
        "comp_cd": (-1, 1),  # p(y|x) - p(y|x'): negative when removing tokens helps
        "suff_cd": (-1, 1),
        "comp_acc": (-1, 1),  # accuracy in [0, 1]; Pearson's r in [-1, 1] for regression
        "suff_acc": (-1, 1),
        "deletion": (0, 1),  # flip probability
        "insertion": (0, 1),
        "soft_ns": (0, 1),  # the change kept, clamped at 0, over the zero baseline's
        "pi_soft_ns": (0, 1),
        "soft_nc": (0, inf),  # over the zero baseline's change, which can be smaller
        "pi_soft_nc": (0, inf),
        "evidence_ap": (0, 1),
        "evidence_dot": (-inf, inf),  # raw scores are unbounded
    }
    for name, bounds in expected.items():
        assert tuple(metric_info(name).value_range) == bounds, name
    assert metric_info("pi_soft_nc").in_range(3.5) and not metric_info("soft_ns").in_range(1.2)
    assert metric_info("comp_cd").in_range(-0.4) and metric_info("comp_cd").in_range(float("nan"))
    with pytest.raises(normxlogit.InvalidInputError, match="empty"):
        normxlogit.evaluation.MetricInfo("x", "", True, (1, 0), None, "mean")


def _assert_in_ranges(result):
    from normxlogit.evaluation import metric_info

    checked = set()
    for metric, group in result.frame.groupby("metric"):
        info = metric_info(metric)
        if info.across_instances == "accuracy" and group["gold"].notna().any():
            continue  # a regression model's rows hold predictions; their r is checked below
        outside = [v for v in group["value"] if not info.in_range(v)]
        assert not outside, (metric, info.value_range, outside[:5])
        checked.add(metric)
    for _, row in result.curves().iterrows():
        assert metric_info(row["metric"]).in_range(row["value"]), row.to_dict()
    for metric in result.summary().metrics:
        for value in result.summary()[metric]:
            assert metric_info(metric).in_range(value), (metric, value)
    return checked


def test_every_value_of_every_metric_lies_in_its_declared_range():
    from normxlogit.evaluation import Protocol, list_metrics
    from tests.conftest import explainable, sharp_model

    rng = np.random.default_rng(0)
    protocol = Protocol(samples=3, pis=(0.1, 0.5, 0.9), ratios=(0.2, 0.6))
    classifier = sharp_model()
    base = classifier.explain(TEXTS, method="random")
    signed = [
        _with_scores(e, rng.normal(0, 5, len(e.tokens)), "signed_random") for e in base
    ]  # raw, signed scores: the dot product can be negative
    evidence = [(rng.random(len(e.tokens)) < 0.4).astype(float) for e in base]
    # the sanity metrics re-run the method that made an explanation: a registered one
    sanity = {"sanity_spearman", "sanity_top_k"}
    # the segment metrics read segments (and segment indices as evidence): a run of their own
    segment = {m for m in list_metrics() if m.startswith("segment_")}
    result = normxlogit.evaluate(
        classifier,
        {"random": base, "signed_random": signed},
        [m for m in list_metrics() if m not in sanity | segment],
        labels=[0, 1, 2, 0, 1],
        evidence=evidence,
        protocol=protocol,
        batch_size=2,
        progress=False,
    )
    rerun = normxlogit.evaluate(classifier, {"normxlogit": classifier.explain(TEXTS)}, sanity)
    words = [text.split() for text in TEXTS]  # every word a segment
    segmented = {
        "normxlogit": classifier.explain(TEXTS, segments=words),
        "shapley_sampling": classifier.explain(
            TEXTS, method="shapley_sampling", samples=3, segments=words
        ),
    }
    segment_run = normxlogit.evaluate(
        classifier,
        segmented,
        sorted(segment),
        evidence=[[0, len(w) - 1] for w in words],
        protocol=protocol.with_options(lds_ablations=6, drop_k=(1, 2)),
        progress=False,
    )
    seen = _assert_in_ranges(result) | _assert_in_ranges(rerun) | _assert_in_ranges(segment_run)
    assert seen == set(list_metrics())
    with pytest.raises(normxlogit.InvalidInputError, match="not a registered method"):
        normxlogit.evaluate(classifier, {"signed_random": signed}, ["sanity_spearman"])
    regression = explainable("bert", "regression")
    explanations = regression.explain(TEXTS, method="random")
    gold = [0.5, 3.0, 4.5, 2.0, 1.0]
    result = normxlogit.evaluate(
        regression, explanations, ["comp_acc", "suff_acc"], labels=gold, protocol=protocol
    )
    _assert_in_ranges(result)
    decoder = explainable("llama", "causal_lm")
    explanations = decoder.explain(TEXTS, method="random")
    soft = ["soft_nc", "soft_ns", "pi_soft_nc", "pi_soft_ns", "deletion", "comp_cd"]
    result = normxlogit.evaluate(decoder, explanations, soft, protocol=protocol)
    assert _assert_in_ranges(result) == set(soft)


def _with_scores(explanation, scores, method):
    from dataclasses import replace

    return replace(explanation, scores=np.asarray(scores, dtype=float), method=method)


# ------------------------------------------------------------ summary table
def _table():
    import pandas as pd

    from normxlogit.evaluation import SummaryTable, metric_info

    values = pd.DataFrame(
        {"comp_cd": [0.2, 0.5, 0.1], "suff_cd": [0.3, 0.1, 0.2], "pi_soft_nc": [1.5, 3.5, 0.9]},
        index=["a", "normxlogit", "c"],
    )
    return SummaryTable(values, {m: metric_info(m) for m in values.columns})


def test_summary_behaves_like_the_dataframe_it_shows(tmp_path):
    import pandas as pd
    from rich.console import Console

    table = _table()
    column = table["comp_cd"]
    assert isinstance(column, pd.Series) and list(column.index) == ["a", "normxlogit", "c"]
    assert column["normxlogit"] == 0.5
    assert table.loc["normxlogit", "comp_cd"] == 0.5 and table.at["c", "suff_cd"] == 0.2
    assert table.iloc[0, 1] == 0.3
    assert list(table.columns) == ["comp_cd", "suff_cd", "pi_soft_nc"]
    assert list(table.index) == ["a", "normxlogit", "c"] and table.shape == (3, 3)
    assert len(table) == 3 and list(table) == ["comp_cd", "suff_cd", "pi_soft_nc"]
    assert "suff_cd" in table and "recall" not in table
    assert table.mean()["comp_cd"] == pytest.approx(0.8 / 3)  # any pandas method
    assert table["comp_cd"].idxmax() == "normxlogit"
    np.testing.assert_allclose(np.asarray(table), table.frame.to_numpy())
    assert isinstance(table.frame, pd.DataFrame) and table.frame is table.values
    copy = table.to_frame()
    copy.loc["a", "comp_cd"] = 9.0
    assert table.loc["a", "comp_cd"] == 0.2  # to_frame() is a copy
    pd.testing.assert_frame_equal(table.frame, table.to_frame())
    # a selection of metrics is still a table: it keeps sorting and colouring itself
    two = table[["suff_cd", "pi_soft_nc"]]
    assert two.metrics == ["suff_cd", "pi_soft_nc"] and two.ranking("suff_cd")[0] == "normxlogit"
    # ... and its own methods keep working
    assert table.ranking("suff_cd") == ["normxlogit", "c", "a"]
    assert "| normxlogit | **0.500** | **0.100** | **3.500** |" in table.to_markdown()
    assert "background-color" in table._repr_html_() and table.styled() is not None
    console = Console(record=True, width=120)
    console.print(table)
    assert "pi_soft_nc (AUC ↑)" in console.export_text()
    assert table.to_csv().splitlines()[0] == "method,comp_cd,suff_cd,pi_soft_nc"
    table.to_csv(tmp_path / "t.csv")
    assert pd.read_csv(tmp_path / "t.csv", index_col="method").loc["c", "pi_soft_nc"] == 0.9
    data = json.loads(table.to_json())
    assert data["metrics"]["pi_soft_nc"]["range"] == [0, None]  # unbounded: valid JSON
    table.to_json(tmp_path / "t.json")
    assert json.loads((tmp_path / "t.json").read_text()) == data
    for copied in (copy_module.deepcopy(table), pickle.loads(pickle.dumps(table))):
        assert copied.ranking("comp_cd") == table.ranking("comp_cd")
    with pytest.raises(KeyError):
        table["recall"]
    with pytest.raises(AttributeError):
        _ = table.no_such_attribute


def test_summary_of_a_real_result_is_indexable():
    from tests.conftest import sharp_model

    model = sharp_model()
    explanations = model.explain(TEXTS[:3], method="normxlogit") + model.explain(
        TEXTS[:3], method="random"
    )
    summary = normxlogit.evaluate(model, explanations, ["comp_cd", "suff_cd"]).summary()
    assert list(summary["comp_cd"].index) == ["normxlogit", "random"]
    assert summary.loc["random", "suff_cd"] == summary["suff_cd"]["random"]
    assert summary.best("comp_cd") in summary.index


# ---------------------------------------------------------------- progress
def test_progress_is_monotonic_fine_grained_and_reaches_the_total():
    from normxlogit.evaluation import Protocol
    from tests.conftest import sharp_model

    model = sharp_model()
    explanations = model.explain(TEXTS, method="normxlogit") + model.explain(TEXTS, method="random")
    updates = []
    result = normxlogit.evaluate(
        model,
        explanations,
        ["comp_cd", "comp_acc", "suff_cd", "soft_ns", "pi_soft_nc"],
        labels=[0, 1, 2, 0, 1],
        protocol=Protocol(samples=2, pis=(0.2, 0.5, 0.8)),
        batch_size=2,
        rows_per_forward=8,
        progress=updates.append,
    )
    assert result.forward_rows > 0
    # in texts' worth of work (what the command line's bar counts), rising to len(texts)
    assert updates[-1] == pytest.approx(len(TEXTS))
    assert all(b > a for a, b in zip(updates, updates[1:], strict=False))
    assert len(updates) > 20  # every forward pass, not once per chunk
    steps = np.diff([0.0, *updates])
    assert steps.max() < 0.15 * len(TEXTS)  # no 0% -> 80% -> 100% jumps


def test_the_planned_work_is_the_work_done():
    from normxlogit.evaluation import Protocol
    from normxlogit.evaluation.progress import planned_work
    from normxlogit.evaluation.registry import metric_class
    from tests.conftest import explainable

    model = explainable("llama", "causal_lm")
    explanations = model.explain(TEXTS[:3], method="random")
    protocol = Protocol(samples=2, pis=(0.3, 0.6)).resolved(model)
    metrics = ["comp_cd", "deletion", "insertion", "soft_nc", "pi_soft_ns"]
    result = normxlogit.evaluate(model, explanations, metrics, protocol=protocol, batch_size=2)
    scorers = [metric_class(m)() for m in metrics]
    planned = sum(sum(planned_work(scorers, protocol, 1, n)) for n in (2, 1))
    assert planned == result.forward_rows + 3  # + the clean pass of each text


def test_progress_true_and_false_run(capsys):
    from tests.conftest import sharp_model

    model = sharp_model()
    explanations = model.explain(TEXTS[:2], method="normxlogit")
    quiet = normxlogit.evaluate(model, explanations, ["comp_cd"], progress=False)
    assert capsys.readouterr().err == ""
    shown = normxlogit.evaluate(model, explanations, ["comp_cd"], progress=True)
    np.testing.assert_array_equal(quiet.frame["value"], shown.frame["value"])


# ------------------------------------------------------------ saved results
def test_loading_anything_but_a_saved_result_raises_a_clear_error(tmp_path):
    from normxlogit.evaluation import EvaluationResult
    from tests.conftest import sharp_model

    model = sharp_model()
    explanations = model.explain(TEXTS[:2], method="normxlogit")
    saved = normxlogit.evaluate(model, explanations, ["comp_cd"]).save(tmp_path / "ok.json")
    assert len(EvaluationResult.load(saved).frame) == 2 * 9
    good = json.loads(saved.read_text())

    def broken(name: str, content) -> Path:
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content if isinstance(content, str) else json.dumps(content))
        return path

    def rows(change):
        data = json.loads(json.dumps(good))
        change(data)
        return data

    cases = {
        "truncated.json": (saved.read_text()[: len(saved.read_text()) // 2], "cut short"),
        "explanation.json": (explanations[0].to_json(), "no 'metrics', 'protocol', 'rows'"),
        "list.json": ([1, 2, 3], "expected a JSON object, found a list"),
        "binary.json": (b"\x89PNG\r\n\x1a\n\xff\xfe", "is a PNG image, not a saved"),
        "latin1.json": (b'{"a": "caf\xe9"}', "not UTF-8"),
        "rows_dict.json": (rows(lambda d: d.update(rows={"a": 1})), "'rows' must be a list"),
        "row_text.json": (rows(lambda d: d["rows"].__setitem__(0, "x")), "rows[0] is a str"),
        "no_value.json": (rows(lambda d: d["rows"][3].pop("value")), "rows[3] has no value"),
        "text_value.json": (
            rows(lambda d: d["rows"][1].update(value="high")),
            "rows[1]: 'value' must be a number",
        ),
        "metric.json": (
            rows(lambda d: d["rows"][0].update(metric="recall")),
            "metric 'recall', not among",
        ),
        "metrics.json": (rows(lambda d: d.update(metrics="comp_cd")), "'metrics' must be a list"),
        "protocol.json": (
            rows(lambda d: d["protocol"].update(routing="sometimes")),
            "its protocol",
        ),
        "protocol_list.json": (rows(lambda d: d.update(protocol=[1])), "'protocol' must be"),
    }
    for name, (content, problem) in cases.items():
        path = broken(name, content)
        with pytest.raises(normxlogit.common.errors.InvalidFileError) as caught:
            EvaluationResult.load(path)
        message = str(caught.value)
        assert str(path) in message and problem in message, (name, message)
    with pytest.raises(normxlogit.InvalidInputError, match="does not exist"):
        EvaluationResult.load(tmp_path / "missing.json")
    with pytest.raises(normxlogit.InvalidInputError, match="is a folder"):
        EvaluationResult.load(tmp_path)


# ------------------------------------------------------------------ README
@pytest.mark.real
def test_the_readme_python_block_runs_as_pasted(tmp_path):
    """The first Python block of the README, run as a script (it loads minilm-sst2)."""
    readme = (ROOT / "README.md").read_text()
    block = re.findall(r"```python\n(.*?)```", readme, re.S)[0]
    script = tmp_path / "readme_block.py"
    script.write_text(block + "\nprint('label:', explanation.label, len(many))\n")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "label: positive 3" in done.stdout
    assert (tmp_path / "e.json").is_file()
