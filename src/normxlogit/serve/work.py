"""The work behind the page's buttons, run as jobs: explain a text with several methods,
evaluate those explanations, and show which tokens a curve's point perturbed.

Each explain job leaves a *run* (the explanations it made, kept in memory) that the
evaluation and the perturbation view refer to by id, so nothing is computed twice and
the page never sends scores back.
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..common.errors import InvalidInputError, NormXLogitError
from ..common.numbering import one_text_named
from ..explanations.generation import GenerationExplanation
from ..model.tasks import TaskKind
from .jobs import Job
from .models import ModelPool
from .payloads import evaluation_payload, payload
from .phrasing import page_named

#: runs kept for the page to evaluate (the oldest are forgotten first)
KEPT_RUNS = 32
#: why a segment method cannot explain a request without segments (after its name)
NEEDS_SEGMENTS = (
    "scores segments: under Segments choose sentences, or one per line and list the text's segments"
)


@dataclass
class Run:
    """What one explain job made: each method's explanation of the same input."""

    id: str
    model: str
    explanations: dict[str, Any]  # method -> Explanation or GenerationExplanation
    errors: dict[str, str] = field(default_factory=dict)

    def explanation(self, method: str) -> Any:
        if method not in self.explanations:
            raise InvalidInputError(
                f"this run has no explanation by {method!r}; it has "
                f"{', '.join(self.explanations) or 'none'}"
            )
        return self.explanations[method]


class Runs:
    """The latest :data:`KEPT_RUNS` runs, by id."""

    def __init__(self) -> None:
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def add(self, model: str, explanations: dict[str, Any], errors: dict[str, str]) -> Run:
        with self._lock:
            run = Run(f"r{next(self._ids)}", model, explanations, errors)
            self._runs[run.id] = run
            while len(self._runs) > KEPT_RUNS:
                self._runs.popitem(last=False)
            return run

    def get(self, run_id: str) -> Run:
        with self._lock:
            if run_id not in self._runs:
                raise InvalidInputError(
                    f"run {run_id!r} is gone (the page keeps the last {KEPT_RUNS}); explain again"
                )
            return self._runs[run_id]


@dataclass(frozen=True)
class ExplainRequest:
    """What the page asks to explain (checked by the app before it gets here)."""

    model: str
    text: str | tuple[str, str]
    methods: tuple[str, ...]
    target: str | None = None  # None: the prediction; "all": every label; else a label
    contrast: str | None = None  # a label / token; a generation's contrast continuation
    contrast_input: str | None = None  # the same target under this input too
    layer: str | None = None  # None: the final layer; "all": every layer
    generate: bool = False
    max_new_tokens: int = 16
    continuation: str | None = None
    #: None, "sentences", or the text's segments as written in it
    segments: str | tuple[str, ...] | None = None
    segment_reduce: str = "sum"  # how token methods' scores become a segment's


def model_info(pool: ModelPool, name: str) -> dict[str, Any]:
    """What the page shows about a model and which inputs it offers (loads the model)."""
    from ..evaluation import list_metrics

    model = pool.get(name)
    kind = model.task.kind
    refusals = {metric: _refusal(metric, model) for metric in list_metrics()}
    return {
        "name": name,
        "task": kind.value,
        "labels": list(model.labels),
        "layers": model.num_layers,
        "generates": kind is TaskKind.CAUSAL_LM and not model.labels,
        "mask_token": model.tokenizer.mask_token if kind is TaskKind.MASKED_LM else None,
        # metrics that mean nothing for this model, and why (the page greys them out)
        "unavailable": {metric: why for metric, why in refusals.items() if why is not None},
    }


def _refusal(metric: str, model: Any) -> str | None:
    """Why ``metric`` means nothing for ``model`` (None: it applies); a registered metric
    whose ``refusal()`` fails is greyed out with that failure, naming it, rather than
    failing the model's load for a metric no one asked for."""
    from ..evaluation.registry import metric_class

    try:
        return metric_class(metric).refusal(model)
    except InvalidInputError as failure:
        return str(failure)


def _the_one_text(job_work):
    """The page explains one text (or pair) at a time: messages call it "the text", and
    name the page's controls (:func:`page_named`)."""

    @functools.wraps(job_work)
    def named(*args, **kwargs):
        with one_text_named(True):
            try:
                return job_work(*args, **kwargs)
            except InvalidInputError as error:
                said = page_named(str(error))
                if said == str(error):
                    raise
                raise InvalidInputError(said) from None

    return named


@_the_one_text
def explain_job(pool: ModelPool, runs: Runs, request: ExplainRequest, job: Job) -> dict:
    """Explain ``request.text`` with every method, one after the other; a method that
    does not apply to the model is reported beside the others, not as a failure."""
    from ..workflows import explain_generations, explain_texts

    job.report(0.0, f"loading {request.model}" if not pool.is_loaded(request.model) else "")
    model = pool.get(request.model)
    job.report(0.02)
    refused = _segment_refusals(request)
    refused |= _tagger_refusals(model, [n for n in request.methods if n not in refused])
    if len(refused) == len(request.methods):  # one line, each reason once
        reasons = {why: [n for n in refused if refused[n] == why] for why in refused.values()}
        raise InvalidInputError("; ".join(_said_of(n, why) for why, n in reasons.items()))
    methods = {name: name for name in request.methods if name not in refused}
    progress = _method_progress(model, job, list(methods))
    segments = None if request.segments is None else _segments_of(request)
    target = _target(request.target, model)
    _check_contrasts(model, request, target)
    _check_segments(model, request)
    if request.generate or request.continuation is not None:
        if target is not None:
            raise InvalidInputError(
                "a generation's targets are its own tokens, one per step; explain the "
                "prediction (or explain one next token without generating)"
            )
        explained = explain_generations(
            model,
            [request.text],  # type: ignore[list-item]  (the app refuses pairs here)
            methods,
            [request.continuation],
            contrasts=[request.contrast],
            contrast_inputs=[request.contrast_input],
            max_new_tokens=request.max_new_tokens if request.generate else None,
            layer=request.layer,
            skip=(NormXLogitError,),  # e.g. a method made for another architecture
            progress=progress,
            segments=segments,
            segment_reduce=request.segment_reduce,
        )
    else:
        explained = explain_texts(
            model,
            [request.text],
            methods,
            [target],
            contrasts=[_contrast(request.contrast)],
            contrast_inputs=None if request.contrast_input is None else [request.contrast_input],
            layer=request.layer,
            skip=(NormXLogitError,),
            progress=progress,
            segments=segments,
            segment_reduce=request.segment_reduce,
        )
    skipped = {**refused, **{n: page_named(why) for n, why in explained.skipped.items()}}
    made = {name: explanations[0] for name, explanations in explained.explanations.items()}
    if not made:
        raise InvalidInputError(
            "no method could explain this input: "
            + "; ".join(f"{name}: {why}" for name, why in skipped.items())
        )
    run = runs.add(request.model, made, skipped)
    drawn = [
        {**payload(explanation), "seconds": round(explained.seconds[name][0], 3)}
        for name, explanation in made.items()
    ]
    return {
        "run": run.id,
        "model": request.model,
        "explanations": drawn,
        "errors": skipped,
        "prediction": _prediction(drawn[0]),
    }


def _segment_refusals(request: ExplainRequest) -> dict[str, str]:
    """The segment methods that cannot run on this request, and why, in the page's words
    (checked once, before any work)."""
    from ..methods.base import method_class

    refused = {}
    for name in request.methods:
        if not getattr(method_class(name), "needs_segments", False):
            continue
        if request.segments is None:
            refused[name] = NEEDS_SEGMENTS
        elif request.layer is not None:
            refused[name] = "reads the model's output, not a layer: choose Layers: final layer"
    return refused


#: the page runs ReAGent with its default (pos) sampler: the other samplers are options
PAGE_SAMPLER_FIX = "explain with ReAGent from the command line with --option sampler=uniform"
#: the page runs ReAGent with its default options: the others are the command line's
PAGE_OPTION_FIX = "explain with ReAGent from the command line with --option {name}={value}"


def _tagger_refusals(model: Any, methods: list[str]) -> dict[str, str]:
    """A ReAGent whose pos sampler cannot run here (no spaCy, no cached groups of this
    model's tokenizer), or whose probes cannot watch this model's outputs (a regressor, a
    classifier of no more labels than its stopping top k), refused beside the other
    methods before any of them runs."""
    from ..methods import get_method
    from ..methods.reagent import model_refusal, tagger_refusal

    refused = {}
    for name in methods:
        method = get_method(name)
        reason = model_refusal([method], model, PAGE_OPTION_FIX) or tagger_refusal(
            [method], model.tokenizer, PAGE_SAMPLER_FIX
        )
        if reason is not None:
            refused[name] = reason
    return refused


def _check_segments(model: Any, request: ExplainRequest) -> None:
    """The request's segments found in its text and read by the model, checked once (not
    once per method, each repeating the reason), segments numbered from 1."""
    import re

    from ..explaining.segments import resolved

    if request.segments is None:
        return
    if isinstance(request.segments, str):
        spec: Any = request.segments
    else:  # as explain gets them: a pair's placed in its second text
        (spec,) = _segments_of(request)
    try:
        resolved(model, [request.text], [spec], True)
    except InvalidInputError as error:
        said = re.sub(r"\bsegments\[(\d+)\]", lambda m: f"segment {int(m[1]) + 1}", str(error))
        raise InvalidInputError(said) from None


def _said_of(names: list[str], why: str) -> str:
    """``why`` (a verb first: "scores segments: ...") said of one method or several."""
    if len(names) == 1:
        return f"{names[0]} {why}"
    verb, rest = why.split(" ", 1)
    return f"{', '.join(names)} {verb.removesuffix('s')} {rest}"


def _segments_of(request: ExplainRequest) -> str | list[list]:
    """``explain``'s segments for the request's one input. With a text pair, segments
    found in the pair's second text in order are placed there (as a data set's passage
    segments are); others must each lie in one of the two texts only."""
    from ..data.files import segment_spec

    if isinstance(request.segments, str):
        return request.segments
    given = list(request.segments or ())
    if not isinstance(request.text, tuple):
        return [given]
    first, second = request.text
    placed = segment_spec(request.text, given)
    for number, piece in enumerate(placed, 1):
        if isinstance(piece, str) and piece in first and piece in second:
            raise InvalidInputError(
                f"segment {number} ({piece[:40]!r}) is in both the text and the second text, "
                "and the page cannot tell which is meant: make it longer so that it is in "
                "one of them only"
            )
    return [placed]


def _method_progress(model: Any, job: Job, methods: list[str]):
    """The job's progress while each method works: its share of the bar, its name in the
    message, and a cancel checked before every forward pass."""

    @contextmanager
    def progress(name: str, units: int) -> Iterator[Any]:
        index, share = methods.index(name), 1.0 / len(methods)
        doing = f"{name} ({index + 1}/{len(methods)})"
        job.report(0.02 + 0.98 * index * share, doing)

        def report(done: int) -> None:
            job.report(0.02 + 0.98 * (index + min(done / max(units, 1), 1.0)) * share)

        with cancellable(model, job, doing):
            yield report

    return progress


@_the_one_text
def evaluate_job(
    pool: ModelPool, runs: Runs, run_id: str, metrics: list[str], job: Job, unit: str = "token"
) -> dict:
    """Faithfulness curves of every explanation of a run, with progress per forward pass;
    ``unit``: what the metrics rank and perturb, tokens or the explanations' segments."""
    from ..evaluation import Protocol, evaluate

    run = runs.get(run_id)
    check_evaluable(run, unit, metrics)
    model = pool.get(run.model)
    with cancellable(model, job, "evaluating"):
        result = evaluate(
            model,
            {name: [explanation] for name, explanation in run.explanations.items()},
            metrics=metrics,
            protocol=Protocol(unit=unit),
            progress=job.report,  # called with the texts done so far: here, out of one
        )
    return {"run": run_id, "unit": unit, **evaluation_payload(result)}


def check_evaluable(run: Run, unit: str, metrics: Sequence[str] = ()) -> None:
    """A run's explanations are of one kind (a segment method explains a generation's
    whole answer, a token method each step), and each has segments where the units are
    segments or a metric removes segments."""
    from ..evaluation.context import unrankable
    from ..evaluation.registry import metric_class
    from ..evaluation.segment_checks import SegmentCheck
    from ..sanity.metrics import SanityMetric

    refused = [name for name, e in run.explanations.items() if unrankable(e)]
    if refused:  # evaluate's own fix, leaving them out, is no field of the page's
        named = ", ".join(refused)
        raise InvalidInputError(
            f"{named} gave NaN or infinite scores, which rank no tokens, so this run cannot "
            f"be evaluated; explain again without {named}"
        )
    answers = [n for n, e in run.explanations.items() if not isinstance(e, GenerationExplanation)]
    if answers and len(answers) < len(run.explanations):
        raise InvalidInputError(
            f"{', '.join(answers)} explained the whole answer and the other methods each "
            "step, so their curves do not compare; explain them in separate runs"
        )
    sanity = [m for m in metrics if issubclass(metric_class(m), SanityMetric)]
    if sanity and len(answers) < len(run.explanations):  # a generation's steps
        raise InvalidInputError(
            f"{', '.join(sanity)} {'explains' if len(sanity) == 1 else 'explain'} each text "
            "again, which a generation's steps "
            "cannot be: leave them out of this run's metrics, or explain the prompt's next "
            "token (not a generation) to check the methods"
        )
    missing = [name for name, e in run.explanations.items() if e.segments is None]
    checks = [m for m in metrics if issubclass(metric_class(m), SegmentCheck)]
    if not missing or not (unit == "segment" or checks):
        return
    needing = "segment units need" if unit == "segment" else f"{', '.join(checks)} removes"
    raise InvalidInputError(
        f"{needing} segments, and {', '.join(missing)} has none: explain again with "
        "Segments: sentences or one per line"
    )


@contextmanager
def cancellable(model: Any, job: Job, doing: str) -> Iterator[None]:
    """Check for a cancel before every forward pass of ``model`` (IG, LIME or ReAGent
    run hundreds in one explanation, between which the explain loop reports nothing),
    and count them in the job's message so a long method shows it is alive."""
    passes = 0

    def check(*_: Any) -> None:
        nonlocal passes
        passes += 1
        job.report(message=f"{doing} · forward pass {passes}")

    # every pass through the transformer runs its first block (explain's own passes run
    # the backbone and head apart, not the model's forward)
    first = model.blocks[0] if model.blocks is not None else model.backbone
    handle = first.register_forward_pre_hook(check)
    try:
        yield
    finally:
        handle.remove()


def perturbed(pool: ModelPool, runs: Runs, run_id: str, method: str, metric: str, ratio: float):
    """Which tokens ``metric`` perturbs at ``ratio`` for ``method``'s explanation."""
    from ..evaluation.hard import perturbed_tokens

    run = runs.get(run_id)
    explanation = run.explanation(method)
    if isinstance(explanation, GenerationExplanation):
        raise InvalidInputError(
            "a generation perturbs each step's own context; pick a classification run"
        )
    try:
        mask = perturbed_tokens(pool.get(run.model), explanation, metric, ratio)
    except InvalidInputError as error:  # e.g. a run against a contrast input: the page's words
        raise InvalidInputError(page_named(str(error))) from None
    return {"method": method, "metric": metric, "ratio": ratio, "perturbed": mask}


def _target(target: str | None, model: Any) -> Any:
    from ..common.targets import ALL, requested_target

    wanted = requested_target(target)
    if wanted == ALL and not model.labels:
        raise InvalidInputError(
            "'all labels' needs a model with a label set; this one predicts tokens"
        )
    return wanted


def _check_contrasts(model: Any, request: ExplainRequest, target: Any) -> None:
    """The request's contrast and contrast input, checked once against the model (not
    once per method, each repeating the reason)."""
    from ..common.targets import check_pairing
    from ..model.targets import output_column
    from ..model.tasks import TaskKind

    if request.contrast_input is not None and not request.contrast_input.strip():
        raise InvalidInputError(
            "the contrast input (against the input) is blank; give the edited text, or "
            "leave it empty"
        )
    if request.contrast_input is not None and isinstance(request.text, tuple):
        raise InvalidInputError(
            "the contrast input (against the input) is one text, and this input is a pair; "
            "leave the second text empty, or explain the pair against an edited pair in "
            "Python: model.explain((first, second), contrast_input=(first2, second2))"
        )
    if request.contrast_input is not None:  # said once, not once per method
        from ..explaining.contrast_inputs import refuse_unchanged

        stepwise = request.generate or request.continuation is not None
        try:
            refuse_unchanged(
                model.tokenizer, [request.text], [request.contrast_input], True, stepwise
            )
        except InvalidInputError as error:
            named = str(error).replace("contrast_input", "the contrast input (against the input)")
            raise InvalidInputError(named) from None
    if request.continuation is not None and request.contrast == request.continuation:
        raise InvalidInputError(
            "the contrast (rather than) is the continuation itself: the difference of an "
            "output with itself is zero at every token, so there is nothing to explain; give "
            "a contrast continuation that differs"
        )
    contrast = _contrast(request.contrast)
    if contrast is None or request.generate or request.continuation is not None:
        return  # a generation's contrast is a continuation, checked with its steps
    if model.task.kind is TaskKind.REGRESSION:
        raise InvalidInputError(
            "a regression model has one output, so there is nothing to contrast it with; "
            "leave the contrast (rather than) empty, or compare two inputs (against the input)"
        )
    check_pairing(target, contrast)
    for item in [contrast] if isinstance(contrast, (str, int)) else contrast:
        try:
            output_column(model, item, role="contrast")
        except InvalidInputError as error:
            raise InvalidInputError(f"contrast (rather than): {error}") from None


def _contrast(contrast: str | None) -> Any:
    """The contrast box's text (empty: no contrast). Whitespace is kept, as the command
    line keeps it: a language model's space token, and an unknown label of a classifier
    (refused by name), never a plain explanation returned without a word."""
    from ..common.targets import check_contrast

    return None if not contrast else check_contrast(contrast)


def _prediction(drawn: dict[str, Any]) -> dict[str, Any]:
    """The model's prediction (the same for every method), from a drawn explanation."""
    if drawn["kind"] == "generation":
        return {"generated": drawn["generated_text"]}
    return {"label": drawn["label"], "value": drawn["value"], "probs": drawn["probs"]}
