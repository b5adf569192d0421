"""Integrated gradients against Captum and ferret: time and peak memory, as ratios.

    python benchmarks/bench_ig.py [--texts 100] [--runs 3] [--repeats 5] [--threads N]
                                  [--skip-ferret] [--skip-single] [--output FILE]

Both settings explain ``minilm-sst2`` (its LoRA adapter merged into plain BERT weights)
with 50 steps of Gauss-Legendre quadrature from the zero embedding, for the predicted
label, and check that the scores agree, so that only the cost differs.

**One text at a time, against Captum.** ``model.explain(text,
method="integrated_gradients")`` against Captum's ``IntegratedGradients`` on the same
function (the library's ``reading_output``: word embeddings in, the head's logits out),
the same encoded text, the prediction taken first by one forward pass, all 50 steps in
one pass (Captum's default) and the convergence delta returned (the library always
reports it; Captum without it is a third column). Wall time and process CPU time are
medians of ``--repeats`` interleaved runs (the order alternates); peak memory is what
torch allocates during one run (the profiler's allocation events: weights and inputs
already alive are not counted). Texts: the median-length and the longest of the first
``--texts`` SST-2 dev sentences, and filler texts of 128 and 512 tokens.

**Many texts, whole process, against ferret.** Each run is a fresh process that imports
its library, loads the model, explains the first ``--texts`` SST-2 dev sentences and
writes the scores:

- normxlogit: ``normxlogit.load("minilm-sst2").explain(texts,
  method="integrated_gradients", batch_size=16, reduce="sum")``;
- ferret: ``Benchmark(model, tokenizer, explainers=[IntegratedGradientExplainer(...)])``,
  one text per call: ``bench.score(text)`` for the predicted label, then
  ``bench.explain(text, target=label, normalize_scores=False)``. ferret's baseline
  ([CLS] [PAD]... [SEP] embeddings) is replaced by the zero embedding, the one setting
  that differs (it does not change the cost); ferret sums attributions over the hidden
  dimension, hence ``reduce="sum"`` on the other side.

Wall time is measured by this script around each process; peak memory is the process's
peak resident set size (``VmHWM``) and CPU time its user + system time (``getrusage``),
both read by the process as it ends (so the imports and the model load count too); the
table gives medians of ``--runs`` interleaved runs (the order alternates), after one
untimed warm-up run of each on two texts (file cache).

ferret is never a dependency of this project: on first use the script creates its own
virtual environment outside the repository (``$NORMXLOGIT_BENCH_VENV``, default
``~/.cache/normxlogit-bench/ferret-venv``) and installs ``torch==2.13.0`` first (the
CPU wheel; an unpinned torch pulls several GB) and then ``ferret-xai==0.4.2`` (with
``pyarrow<19``, which its numpy<2 pin needs) from PyPI. That
install is the only network access; everything else runs offline. The merged model is
saved to a temporary folder by this process and loaded by ferret's process from there.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEPS = 50
BATCH_SIZE = 16
FERRET_VENV = Path(
    os.environ.get(
        "NORMXLOGIT_BENCH_VENV", Path.home() / ".cache" / "normxlogit-bench" / "ferret-venv"
    )
)
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
FILLER = (
    "the film is a gripping , beautifully acted story that never lets go , although its "
    "second half drags and some of the dialogue feels flat and forced . "
)


# ------------------------------------------------------------------------------ workers
# Run in their own processes: ``--worker normxlogit`` in this project's environment,
# ``--worker ferret`` in ferret's. Only the standard library is imported at module level.


def worker_normxlogit(texts: list[str], threads: int, out: Path) -> dict:
    import torch

    import normxlogit

    torch.set_num_threads(threads)
    model = normxlogit.load("minilm-sst2")
    start, cpu = time.perf_counter(), time.process_time()
    explanations = model.explain(
        texts, method="integrated_gradients", batch_size=BATCH_SIZE, reduce="sum"
    )
    timing = {"explain_s": time.perf_counter() - start, "explain_cpu_s": time.process_time() - cpu}
    out.write_text(
        json.dumps(
            {
                "labels": [model.labels.index(e.label) for e in explanations],
                "scores": [[float(s) for s in e.scores] for e in explanations],
            }
        )
    )
    return timing


def worker_ferret(texts: list[str], threads: int, out: Path, model_dir: Path) -> dict:
    import torch
    from ferret import Benchmark, IntegratedGradientExplainer
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.set_num_threads(threads)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    explainer = IntegratedGradientExplainer(model, tokenizer, multiply_by_inputs=True)
    hidden = model.config.hidden_size

    def zero_baseline(input_len: int) -> torch.Tensor:  # ferret's: [CLS] [PAD]... [SEP]
        return torch.zeros(1, input_len, hidden)

    explainer._generate_baselines = zero_baseline
    bench = Benchmark(model, tokenizer, explainers=[explainer])
    labels, scores = [], []
    start, cpu = time.perf_counter(), time.process_time()
    for text in texts:
        probs = list(bench.score(text).values())
        target = max(range(len(probs)), key=probs.__getitem__)
        (explanation,) = bench.explain(
            text, target=target, show_progress=False, normalize_scores=False
        )
        labels.append(target)
        scores.append([float(s) for s in explanation.scores])
    timing = {"explain_s": time.perf_counter() - start, "explain_cpu_s": time.process_time() - cpu}
    out.write_text(json.dumps({"labels": labels, "scores": scores}))
    return timing


def run_worker(args: argparse.Namespace) -> None:
    import resource

    texts = json.loads(Path(args.texts_file).read_text())
    out = Path(args.scores)
    if args.worker == "normxlogit":
        timing = worker_normxlogit(texts, args.threads, out)
    else:
        timing = worker_ferret(texts, args.threads, out, Path(args.model_dir))
    usage = resource.getrusage(resource.RUSAGE_SELF)  # the whole process, imports included
    timing["rss_mib"] = peak_rss_kib() / 1024
    timing["cpu_s"] = usage.ru_utime + usage.ru_stime
    print(json.dumps(timing))


def peak_rss_kib() -> float:
    """This process's peak resident set size, in KiB.

    ``VmHWM`` belongs to the memory map that ``exec`` made, whereas ``ru_maxrss`` would
    also count the parent's resident set at ``fork`` (Linux carries it across ``exec``).
    """
    import resource

    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1])
    except OSError:
        pass
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


# ------------------------------------------------------------------- ferret environment


#: what ferret's environment holds, after torch: ferret pins numpy<2, and datasets (which it
#: imports) would otherwise get a pyarrow built for numpy 2
FERRET_REQUIREMENTS = ("ferret-xai==0.4.2", "pyarrow<19")


def ferret_python(log) -> Path:
    """Python of the separate environment holding ferret, created on first use."""
    python = FERRET_VENV / "bin" / "python"
    stamp = FERRET_VENV / ".normxlogit-bench-installed"
    wanted = " ".join(FERRET_REQUIREMENTS)
    if stamp.is_file() and stamp.read_text().strip() == wanted:
        return python
    log(f"setting up ferret's environment in {FERRET_VENV} (once; pip install from PyPI)")
    FERRET_VENV.parent.mkdir(parents=True, exist_ok=True)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(FERRET_VENV)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "torch==2.13.0"], check=True)  # the CPU wheel first
    subprocess.run([*pip, *FERRET_REQUIREMENTS], check=True)
    stamp.write_text(wanted + "\n")
    return python


def save_merged_model(folder: Path) -> None:
    """minilm-sst2 as a plain BertForSequenceClassification folder (adapter merged)."""
    import normxlogit

    model = normxlogit.load("minilm-sst2")
    model.model.save_pretrained(folder)
    model.tokenizer.save_pretrained(folder)


# ----------------------------------------------------------------- whole-process runs


def run_process(command: list[str], env: dict) -> dict:
    """Run ``command``: its wall time here, and what it printed (its own peak RSS, CPU)."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:4])} failed:\n{done.stderr[-3000:]}")
    return {"wall_s": wall, **json.loads(done.stdout.strip().splitlines()[-1])}


def whole_process(args, log) -> tuple[str, str]:
    from normxlogit.data import read_sst2

    texts = [e.text for e in read_sst2("dev")[: args.texts]]
    ferret = ferret_python(log)
    here = Path(__file__).resolve()
    env = {**os.environ, **OFFLINE, "TOKENIZERS_PARALLELISM": "false"}
    with tempfile.TemporaryDirectory(prefix="normxlogit-bench-") as tmp:
        tmp = Path(tmp)
        save_merged_model(tmp / "model")
        (tmp / "texts.json").write_text(json.dumps(texts))
        (tmp / "warmup.json").write_text(json.dumps(texts[:2]))

        def command(which: str, texts_file: str) -> list[str]:
            python = sys.executable if which == "normxlogit" else str(ferret)
            return [
                python,
                str(here),
                "--worker",
                which,
                "--texts-file",
                str(tmp / texts_file),
                "--scores",
                str(tmp / f"{which}.json"),
                "--model-dir",
                str(tmp / "model"),
                "--threads",
                str(args.threads),
            ]

        for which in ("normxlogit", "ferret"):  # warm-up: imports into the file cache
            run_process(command(which, "warmup.json"), env)
        results: dict[str, list[dict]] = {"normxlogit": [], "ferret": []}
        for run in range(args.runs):
            order = ("normxlogit", "ferret") if run % 2 == 0 else ("ferret", "normxlogit")
            for which in order:
                measured = run_process(command(which, "texts.json"), env)
                results[which].append(measured)
                log(
                    f"run {run + 1} {which}: {measured['wall_s']:.1f} s wall, "
                    f"{measured['rss_mib']:.0f} MiB peak RSS, {measured['cpu_s']:.1f} s CPU, "
                    f"explain {measured['explain_s']:.1f} s"
                )
        agreement = compare_scores(
            json.loads((tmp / "normxlogit.json").read_text()),
            json.loads((tmp / "ferret.json").read_text()),
        )
    return whole_process_table(results, args), agreement


def compare_scores(ours: dict, theirs: dict) -> str:
    """How far ferret's scores are from ours, relative to each text's largest score."""
    same_label = sum(a == b for a, b in zip(ours["labels"], theirs["labels"], strict=True))
    worst, shapes = 0.0, 0
    for a, b in zip(ours["scores"], theirs["scores"], strict=True):
        if len(a) != len(b):
            shapes += 1
            continue
        scale = max(max(abs(x) for x in a), 1e-12)
        worst = max(worst, max(abs(x - y) for x, y in zip(a, b, strict=True)) / scale)
    total = len(ours["labels"])
    return (
        f"Scores: the predicted label agrees on {same_label}/{total} texts, the token count on "
        f"{total - shapes}/{total}; largest difference {worst:.2e} of the text's largest score."
    )


def whole_process_table(results: dict[str, list[dict]], args) -> str:
    def median(which: str, key: str) -> float:
        return statistics.median(r[key] for r in results[which])

    lines = [
        f"{args.texts} SST-2 dev sentences, whole process, median of {args.runs} interleaved "
        f"runs, {args.threads} thread(s):",
        "",
        "| measure | normxlogit (batch_size=16) | ferret (one text per call) | ratio |",
        "|---|---:|---:|---:|",
    ]
    for key, name, unit in (
        ("wall_s", "wall time", "s"),
        ("rss_mib", "peak RSS", "MiB"),
        ("cpu_s", "CPU time (user + system)", "s"),
        ("explain_s", "explaining alone (wall)", "s"),
    ):
        ours, theirs = median("normxlogit", key), median("ferret", key)
        lines.append(f"| {name} | {ours:.1f} {unit} | {theirs:.1f} {unit} | {ours / theirs:.3f} |")
    return "\n".join(lines)


# -------------------------------------------------------------- one text against Captum


def single_texts(model, limit: int) -> list[tuple[str, str]]:
    """(label, text): the median-length and longest SST-2 sentences, 128 and 512 tokens."""
    from normxlogit.data import read_sst2

    sentences = [e.text for e in read_sst2("dev")[:limit]]
    by_length = sorted(sentences, key=lambda t: len(model.tokenizer(t)["input_ids"]))
    chosen = [("SST-2 median", by_length[len(by_length) // 2]), ("SST-2 longest", by_length[-1])]
    words = (FILLER * 80).split()
    for length in (128, 512):
        count = 1  # the most words whose tokens, specials included, fit in ``length``
        while (
            len(model.tokenizer(" ".join(words[: count + 1]), verbose=False)["input_ids"]) <= length
        ):
            count += 1
        chosen.append((f"filler {length}", " ".join(words[:count])))
    return chosen


def captum_explain(model, text: str, delta: bool):
    """Captum's IntegratedGradients on the library's function: predict, then attribute."""
    import warnings

    from captum.attr import IntegratedGradients

    from normxlogit.methods.gradient import reading_output, word_embeddings

    batch = model.encode([text])
    target = model.forward(batch).logits.argmax(-1)
    function, extra = reading_output(model, batch)
    embeds = word_embeddings(model, batch).detach()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = IntegratedGradients(function).attribute(
            embeds,
            baselines=0.0,
            target=target,
            additional_forward_args=extra,
            n_steps=STEPS,
            return_convergence_delta=delta,
        )
    attributions = result[0] if delta else result
    return attributions.detach().abs().sum(-1)[0].numpy()


def single_text(args, log) -> str:
    import functools

    import numpy as np

    import normxlogit

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_normxlogit import peak_bytes

    model = normxlogit.load("minilm-sst2")
    runs = {
        "normxlogit": lambda text: model.explain(text, method="integrated_gradients").scores,
        "captum": functools.partial(captum_explain, model, delta=True),
        "captum_no_delta": functools.partial(captum_explain, model, delta=False),
    }
    lines = [
        f"One text at a time, {STEPS} steps, predicted label, {args.threads} thread(s); "
        f"time: median of {args.repeats} interleaved runs (wall / process CPU), memory: "
        "torch's peak allocation during one run:",
        "",
        "| text | tokens | normxlogit s | Captum s | ratio (wall / CPU) | Captum without delta s "
        "| ratio (wall / CPU) | normxlogit MiB | Captum MiB | memory ratio | largest score "
        "difference |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, text in single_texts(model, args.texts):
        tokens = len(model.tokenizer(text)["input_ids"])
        ours, reference = runs["normxlogit"](text), runs["captum"](text)  # also the warm-up
        runs["captum_no_delta"](text)
        difference = float(np.abs(ours - reference).max() / np.abs(reference).max())
        wall = {key: [] for key in runs}
        cpu = {key: [] for key in runs}
        for repeat in range(args.repeats):
            keys = list(runs) if repeat % 2 == 0 else list(reversed(runs))
            for key in keys:
                start, start_cpu = time.perf_counter(), time.process_time()
                runs[key](text)
                wall[key].append(time.perf_counter() - start)
                cpu[key].append(time.process_time() - start_cpu)
        wall = {key: statistics.median(v) for key, v in wall.items()}
        cpu = {key: statistics.median(v) for key, v in cpu.items()}
        mib = {
            key: peak_bytes(functools.partial(runs[key], text)) / 2**20
            for key in ("normxlogit", "captum")
        }

        row = (
            f"| {name} | {tokens} | {wall['normxlogit']:.3f} | {wall['captum']:.3f} | "
            f"{_ratios(wall, cpu, 'captum')} | {wall['captum_no_delta']:.3f} | "
            f"{_ratios(wall, cpu, 'captum_no_delta')} | "
            f"{mib['normxlogit']:.0f} | {mib['captum']:.0f} | "
            f"{mib['normxlogit'] / mib['captum']:.3f} | {difference:.1e} |"
        )
        log(row)
        lines.append(row)
    return "\n".join(lines)


def _ratios(wall: dict, cpu: dict, other: str) -> str:
    """normxlogit's wall and CPU time over ``other``'s."""
    return f"{wall['normxlogit'] / wall[other]:.3f} / {cpu['normxlogit'] / cpu[other]:.3f}"


# ------------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=100, help="SST-2 dev sentences")
    parser.add_argument("--runs", type=int, default=3, help="whole-process runs of each")
    parser.add_argument("--repeats", type=int, default=5, help="one-text runs of each")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--skip-single", action="store_true", help="no Captum comparison")
    parser.add_argument("--skip-ferret", action="store_true", help="no ferret comparison")
    parser.add_argument("--output", type=Path, help="also write the tables here")
    parser.add_argument("--worker", choices=("normxlogit", "ferret"), help=argparse.SUPPRESS)
    parser.add_argument("--texts-file", help=argparse.SUPPRESS)
    parser.add_argument("--scores", help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        run_worker(args)
        return

    import torch

    torch.set_num_threads(args.threads)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    sections = []
    if not args.skip_single:
        sections.append(single_text(args, log))
    if not args.skip_ferret:
        table, agreement = whole_process(args, log)
        sections += [table, agreement]
    report = "\n\n".join(sections)
    print(report)
    if args.output:
        args.output.write_text(report + "\n")


if __name__ == "__main__":
    main()
