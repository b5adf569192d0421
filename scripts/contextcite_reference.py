"""ContextCite 0.0.4's own outputs on SmolLM2-135M-Instruct for three BoolQ examples, for
the tests of the project's reimplementation of ContextCite (``tests/context/``).

ContextCite is no dependency of the project: this script imports ``context_cite`` and
runs in an environment of its own; neither the package nor the tests import it. Per
example (ERASER BoolQ ``val``, the annotation ids in ``ANNOTATION_IDS``) the context is
``SENTENCES`` consecutive sentences of the evidence's document, from the first evidence
sentence on (ERASER documents are one sentence a line, tokens space-separated: each
line's tokens joined with single spaces), so the sources are those sentences with the
separators ``[""] + [" "] * (n - 1)`` (``GivenPartitioner``, ContextCite's
``SimpleContextPartitioner`` with its parts and separators filled in, so that NLTK's
splitter is never called); the query is the question with ``?`` appended. It runs
``ContextCiter(model, tokenizer, context, query, partitioner=..., generate_kwargs={
"max_new_tokens": 16, "do_sample": False}, num_ablations=64, ablation_keep_prob=0.5,
batch_size=1)`` with ContextCite's default prompt template and Lasso solver, and records
the chat prompt and its ids, the response and ContextCite's ``_response_ids``, the masks,
the ablated prompts' ids, the per-token logit-probabilities, the regression targets
(``aggregate_logit_probs``), the weights (``get_attributions``) and the bias; then a fresh
``ContextCiter`` with ``num_ablations=32`` (its masks must be the first 32 of the 64) and
its weights and bias; and the unablated prompt's per-token logit-probabilities (one
forward pass of prompt + response through ContextCite's ``_compute_logit_probs``). Writes
``tests/context/data/contextcite-smollm2-boolq.json``.

The model is the project's float32 SmolLM2-135M-Instruct folder (``save_pretrained``),
loaded with ``local_files_only=True`` on the CPU in eval mode (ContextCite's
``torch.cuda.amp.autocast()`` is disabled there, so everything runs in float32).

The reference environment (torch from the same source as ``make setup``)::

    python3.11 -m venv /work/throwaway/contextcite/venv
    /work/throwaway/contextcite/venv/bin/pip install torch==2.13.0
    /work/throwaway/contextcite/venv/bin/pip install context-cite==0.0.4
    OMP_NUM_THREADS=2 /work/throwaway/contextcite/venv/bin/python \\
        scripts/contextcite_reference.py \\
        --model ~/.cache/normxlogit/smollm2-135m-instruct-f32 \\
        --data shared/data/boolq_eraser

ContextCite draws ablation ``i``'s mask from ``np.random.RandomState(i)`` alone, so cases
with as many sources share their masks. Its response is the decoded generation
re-tokenised (``_response_ids``), special tokens included: a response that ends within
``max_new_tokens`` keeps its ``<|im_end|>``, and that token is attributed too. The file
records the greedy ids next to ``_response_ids``.

(``context-cite`` 0.0.4 pulls transformers, datasets, nltk, spacy and scikit-learn
unpinned; the versions used are written in the output. Its ``utils`` calls
``nltk.download("punkt_tab")`` on import, which without a network only prints an error.)
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import platform
import sys
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import torch
from context_cite import ContextCiter
from context_cite.context_citer import DEFAULT_PROMPT_TEMPLATE
from context_cite.context_partitioner import SimpleContextPartitioner
from context_cite.utils import _compute_logit_probs, aggregate_logit_probs
from transformers import AutoModelForCausalLM, AutoTokenizer

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "tests" / "context" / "data" / "contextcite-smollm2-boolq.json"
MODEL = Path.home() / ".cache" / "normxlogit" / "smollm2-135m-instruct-f32"
DATA = REPO / "shared" / "data" / "boolq_eraser"
#: ERASER BoolQ val rows: two "True" answers and one "False"
ANNOTATION_IDS = (9180, 9181, 9183)
#: sentences in each context, from the first evidence sentence on
SENTENCES = 6
#: the most SmolLM2 tokens a context may have
MAX_CONTEXT_TOKENS = 250
GENERATE_KWARGS = {"max_new_tokens": 16, "do_sample": False}
NUM_ABLATIONS = 64
FEWER_ABLATIONS = 32
KEEP_PROB = 0.5
BATCH_SIZE = 1
VERSIONS = ("context-cite", "torch", "transformers", "tokenizers", "numpy", "scikit-learn")


# ------------------------------------------------------------------------------ data
class GivenPartitioner(SimpleContextPartitioner):
    """ContextCite's ``SimpleContextPartitioner`` with given parts and separators (its
    ``get_context`` joins the kept parts, each after its own separator but the first)."""

    def __init__(self, parts: list[str], separators: list[str]) -> None:
        context = "".join(sep + part for sep, part in zip(separators, parts, strict=True))
        super().__init__(context, source_type="sentence")
        self._cache["parts"] = list(parts)
        self._cache["separators"] = list(separators)
        assert self.get_context() == context


def read_documents(path: Path) -> dict[str, list[str]]:
    """Each document's sentences (lines), their tokens joined with single spaces."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        rows = (json.loads(line) for line in lines if line.strip())
        return {
            row["docid"]: [" ".join(s.split()) for s in row["document"].split("\n")] for row in rows
        }


def read_rows(path: Path, ids: tuple[int, ...]) -> list[dict[str, Any]]:
    """The split's rows with these annotation ids, in the order given."""
    rows = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            rows[row["annotation_id"]] = row
    return [rows[i] for i in ids]


def evidence_sentences(
    row: dict[str, Any], docid: str, sentences: list[str], start: int, end: int
) -> list[int]:
    """The window's sentences (indices from its first) holding a token of an evidence
    span of the document (ERASER's ``start_token:end_token``)."""
    first_token = np.cumsum([0] + [len(s.split()) for s in sentences])
    spans = [
        (e["start_token"], e["end_token"])
        for group in row["evidences"]
        for e in group
        if e["docid"] == docid
    ]
    return [
        i - start
        for i in range(start, end)
        if any(a < first_token[i + 1] and first_token[i] < b for a, b in spans)
    ]


def make_input(
    row: dict[str, Any], documents: dict[str, list[str]], tokenizer: Any
) -> dict[str, Any]:
    """Context window, sources, separators, query and evidence of one row."""
    first = row["evidences"][0][0]
    docid = first["docid"]
    sentences = documents[docid]
    start = first["start_sentence"]
    end = min(start + SENTENCES, len(sentences))
    parts = sentences[start:end]
    separators = [""] + [" "] * (len(parts) - 1)
    context = " ".join(parts)
    context_tokens = len(tokenizer.encode(context, add_special_tokens=False))
    fits = 5 <= len(parts) <= 8 and context_tokens < MAX_CONTEXT_TOKENS
    assert fits, f"{row['annotation_id']}: {len(parts)} sentences, {context_tokens} tokens"
    evidences = [
        {k: e[k] for k in ("docid", "start_sentence", "end_sentence", "start_token", "end_token")}
        for group in row["evidences"]
        for e in group
    ]
    return {
        "annotation_id": row["annotation_id"],
        "question": row["query"],
        "query": row["query"] + "?",
        "label": row["classification"],
        "docid": docid,
        "window": [start, end],
        "parts": parts,
        "separators": separators,
        "context": context,
        "context_tokens": context_tokens,
        "eraser_evidences": evidences,
        "evidence_sentences": evidence_sentences(row, docid, sentences, start, end),
    }


# --------------------------------------------------------------------------- running
def load_model(folder: Path) -> tuple[Any, Any]:
    """The float32 model (CPU, eval mode) and its tokenizer, from the local folder."""
    model = AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float32, local_files_only=True
    ).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    return model, tokenizer


def make_citer(model: Any, tokenizer: Any, item: dict[str, Any], ablations: int) -> ContextCiter:
    """A fresh ``ContextCiter`` over the item's sources."""
    return ContextCiter(
        model,
        tokenizer,
        item["context"],
        item["query"],
        partitioner=GivenPartitioner(item["parts"], item["separators"]),
        generate_kwargs=dict(GENERATE_KWARGS),
        num_ablations=ablations,
        ablation_keep_prob=KEEP_PROB,
        batch_size=BATCH_SIZE,
    )


def greedy_ids(model: Any, prompt_ids: list[int]) -> list[int]:
    """The new token ids of the same ``generate`` call ContextCite makes."""
    with torch.no_grad():
        output = model.generate(torch.tensor([prompt_ids]), **GENERATE_KWARGS)[0]
    return output[len(prompt_ids) :].tolist()


def full_logit_probs(model: Any, prompt_ids: list[int], response_ids: list[int]) -> np.ndarray:
    """Per response token logit-probabilities for the unablated prompt: one forward pass,
    sliced as ContextCite's ``_get_response_logit_probs`` slices it."""
    length = len(response_ids)
    ids = torch.tensor([prompt_ids + response_ids])
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
    labels = torch.tensor([response_ids])
    return _compute_logit_probs(logits[:, -(length + 1) : -1], labels)[0].numpy()


def fit(citer: ContextCiter) -> dict[str, Any]:
    """Weights (``get_attributions``) and bias of the whole response, with any warning."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        weights = citer.get_attributions(verbose=False)
        ids_range = citer._indices_to_token_indices()
        weight, bias = citer._get_attributions_for_ids_range(0, len(citer._response_ids))
    assert np.array_equal(weights, weight), "get_attributions differs from the whole range"
    return {
        "attributions": floats(weights),
        "bias": float(bias),
        "attributions_dtype": str(np.asarray(weights).dtype),
        "ids_range": [int(i) for i in ids_range],
        "warnings": sorted({f"{w.category.__name__}: {str(w.message)[:200]}" for w in caught}),
    }


def run_case(model: Any, tokenizer: Any, item: dict[str, Any]) -> dict[str, Any]:
    """ContextCite's outputs for one item, with 64 then 32 ablations."""
    citer = make_citer(model, tokenizer, item, NUM_ABLATIONS)
    prompt_ids, prompt = citer._get_prompt_ids(return_prompt=True)
    response_ids = list(citer._response_ids)
    generated = greedy_ids(model, prompt_ids)
    masks = np.asarray(citer._masks)
    logit_probs = np.asarray(citer._logit_probs)
    assert masks.shape == (NUM_ABLATIONS, citer.num_sources)
    assert logit_probs.shape == (NUM_ABLATIONS, len(response_ids))
    result = fit(citer)
    fewer = make_citer(model, tokenizer, item, FEWER_ABLATIONS)
    assert fewer._response_ids == response_ids
    assert np.array_equal(fewer._masks, masks[:FEWER_ABLATIONS]), "32 masks are not the first 32"
    fewer_result = fit(fewer)
    return {
        **item,
        "num_sources": citer.num_sources,
        "prompt": prompt,
        "prompt_ids": list(prompt_ids),
        "prompt_length": len(prompt_ids),
        "output": citer._output,
        "response": citer.response,
        "response_ids": response_ids,
        "generated_ids": generated,
        "response_ids_equal_generated": response_ids == generated,
        "masks": masks.astype(bool).tolist(),
        "ablated_prompt_ids": [list(citer._get_prompt_ids(mask=m)) for m in masks],
        "logit_probs": [floats(row) for row in logit_probs],
        "targets": floats(aggregate_logit_probs(logit_probs)),
        "full_logit_probs": floats(full_logit_probs(model, prompt_ids, response_ids)),
        **result,
        "ablations_32": {
            **fewer_result,
            "masks": np.asarray(fewer._masks).astype(bool).tolist(),
            "logit_probs_equal_first_32": bool(
                np.array_equal(fewer._logit_probs, logit_probs[:FEWER_ABLATIONS])
            ),
        },
    }


# ---------------------------------------------------------------------------- output
def floats(values: Any) -> list[float]:
    """Plain floats; float32 values as their shortest decimal (exact back in float32)."""
    array = np.asarray(values)
    if array.dtype == np.float32:
        return [float(str(v)) for v in array.reshape(-1)]
    return [float(v) for v in array.reshape(-1)]


def render(value: Any, depth: int = 0) -> str:
    """JSON with lists of scalars on one line each (short enough to read and diff)."""
    pad, inner = " " * depth, " " * (depth + 1)
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {render(v, depth + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}" if items else "{}"
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        return "[\n" + ",\n".join(f"{inner}{render(v, depth + 1)}" for v in value) + f"\n{pad}]"
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def model_sha256(folder: Path) -> str:
    """The weights file's SHA-256."""
    digest = hashlib.sha256()
    with (folder / "model.safetensors").open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def settings(model_folder: Path) -> dict[str, Any]:
    """The run's settings."""
    return {
        "model": model_folder.name,
        "model_sha256": model_sha256(model_folder),
        "dtype": "float32",
        "device": "cpu",
        "torch_threads": torch.get_num_threads(),
        "data": "ERASER BoolQ val.jsonl + docs_val_test.jsonl.gz",
        "annotation_ids": list(ANNOTATION_IDS),
        "window": (
            f"{SENTENCES} document sentences (lines, tokens joined by single spaces) from "
            "the first evidence's start_sentence; separators [''] + [' '] * (n - 1)"
        ),
        "evidence_sentences": "window sentences holding a token of an evidence span",
        "query": "the question + '?'",
        "prompt_template": DEFAULT_PROMPT_TEMPLATE,
        "chat": "tokenizer.apply_chat_template([user prompt], add_generation_prompt=True)",
        "generate_kwargs": GENERATE_KWARGS,
        "num_ablations": NUM_ABLATIONS,
        "fewer_ablations": FEWER_ABLATIONS,
        "ablation_keep_prob": KEEP_PROB,
        "batch_size": BATCH_SIZE,
        "mask_seeds": f"np.random.RandomState(i) for ablation i in 0..{NUM_ABLATIONS - 1}",
        "solver": "context_cite.solver.LassoRegression(lasso_alpha=0.01)",
        "targets": "aggregate_logit_probs(logit_probs), output_type='logit_prob'",
    }


def check(path: Path) -> None:
    """The written file loads back with consistent shapes and finite attributions."""
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["versions"] and data["settings"] and len(data["cases"]) == len(ANNOTATION_IDS)
    for case in data["cases"]:
        n, r = case["num_sources"], len(case["response_ids"])
        masks = np.array(case["masks"])
        assert len(case["parts"]) == len(case["separators"]) == n
        assert masks.shape == (NUM_ABLATIONS, n) and masks.dtype == bool
        assert np.array(case["logit_probs"]).shape == (NUM_ABLATIONS, r)
        assert len(case["targets"]) == len(case["ablated_prompt_ids"]) == NUM_ABLATIONS
        assert len(case["full_logit_probs"]) == r
        assert case["prompt_length"] == len(case["prompt_ids"])
        for run in (case, case["ablations_32"]):
            assert len(run["attributions"]) == n and np.isfinite(run["attributions"]).all()
            assert np.isfinite(run["bias"])
        assert np.array_equal(case["ablations_32"]["masks"], masks[:FEWER_ABLATIONS])
        for mask, ids in zip(masks, case["ablated_prompt_ids"], strict=True):
            assert (ids == case["prompt_ids"]) == bool(mask.all())
    print(f"checked {path} ({path.stat().st_size:,} bytes, {len(data['cases'])} cases)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=MODEL, help="SmolLM2 float32 folder")
    parser.add_argument("--data", type=Path, default=DATA, help="ERASER BoolQ folder")
    parser.add_argument("--out", type=Path, default=OUTPUT, help="the JSON written")
    args = parser.parse_args()
    torch.manual_seed(0)
    model, tokenizer = load_model(args.model.expanduser())
    documents = read_documents(args.data / "docs_val_test.jsonl.gz")
    rows = read_rows(args.data / "val.jsonl", ANNOTATION_IDS)
    cases = []
    for row in rows:
        case = run_case(model, tokenizer, make_input(row, documents, tokenizer))
        print(f"{case['annotation_id']}: {case['response']!r} {np.round(case['attributions'], 4)}")
        cases.append(case)
    data = {
        "made_by": "scripts/contextcite_reference.py, in ContextCite's own environment",
        "versions": {name: version(name) for name in VERSIONS},
        "python": sys.version.split()[0],
        "platform": platform.machine(),
        "settings": settings(args.model.expanduser()),
        "cases": cases,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(data) + "\n", encoding="utf-8")
    check(args.out)


if __name__ == "__main__":
    main()
