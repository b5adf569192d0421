"""Explain with several methods, then score the explanations: the one path that the
command line (``normxlogit evaluate``), the bench's workers and the page all take.

:func:`explain_texts` explains texts with each method (texts of one target share
batches, each batch timed, so a text's cost is its share of the batch it ran in);
:func:`explain_generations` does the same for generations, every method explaining the
tokens the first one wrote; :func:`evaluate_texts` hands the metrics only what they read
(gold labels, evidence mapped onto tokens) and scores (a generation's steps are scored by
:func:`~normxlogit.generation.evaluate_generations`); :func:`explain_and_evaluate` is
both in one call, ferret's explain-then-evaluate for this package.
"""

from __future__ import annotations

import numbers
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Sized
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from .common.errors import InvalidInputError, NormXLogitWarning, refuse_surrogate
from .common.numbering import regrouped, text_name, texts_named
from .common.options import MAX_INTEGER
from .common.outputs import (
    checked_choice,
    lone_item,
    short_value,
    type_phrase,
    unordered_phrase,
    zero_d_phrase,
)
from .common.progress import Report
from .common.words import text_word_count, word_spans
from .evaluation import EvaluationResult, Protocol, evaluate, metric_info
from .evaluation.context import ExplanationSet, check_one_setting, checked_explanations
from .evaluation.evaluate import (
    check_aligned,
    check_evidence_kinds,
    default_metrics,
    metrics_for_evidence,
    metrics_for_segment_evidence,
    refuse_mapping,
)
from .evaluation.evidence import evidence_word_indices
from .evaluation.protocol import given_protocol
from .evaluation.registry import first_refusal, given_metrics
from .explaining.contrast_rule import (
    contrast_is_target_refusal,
    contrast_is_target_warning,
    flagging_contrast_is_target,
)
from .explaining.generation import CONTINUATION_ARGUMENT
from .explaining.steps import DEFAULT_MAX_NEW_TOKENS, checked_explain_steps
from .explaining.texts import explain, forward_batches
from .explanations.explanation import Explanation
from .explanations.segments import SEGMENT_REDUCTIONS
from .methods import AttributionMethod, get_method, method_options
from .methods.base import rebuilt_fix, refuse_repeated_names
from .model.adapter import ExplainableModel, check_model
from .model.inputs import TextInput, check_texts

#: what the caller shows while a method works: given the method's name and how many units
#: it will report (texts, or a generation's steps), a context that yields the report to
#: call (None: report nothing); the page also checks for a cancel there
ProgressFactory = Callable[[str, int], AbstractContextManager[Report | None]]


@dataclass(frozen=True)
class MetricNeeds:
    """What a set of metrics reads besides the explanations."""

    labels: bool  # the gold labels (accuracy and correlation metrics)
    evidence: bool  # human evidence (BLiMP's alignment metrics, segment plausibility)
    #: the metrics that read evidence segment indices (segment plausibility), not words
    segment_evidence: tuple[str, ...] = ()


def metric_needs(metrics: Sequence[str]) -> MetricNeeds:
    """Whether any of ``metrics`` needs gold labels, and whether any needs evidence;
    unknown names fail here, before anything runs."""
    infos = [metric_info(name) for name in metrics]
    return MetricNeeds(
        labels=any(info.needs_labels for info in infos),
        evidence=any(info.needs_evidence for info in infos),
        segment_evidence=tuple(
            info.name for info in infos if info.needs_evidence and info.evidence == "segments"
        ),
    )


def check_segment_evidence(needs: MetricNeeds, evidence_segments: Any) -> None:
    """Segment plausibility gets its evidence segment indices from ``evidence_segments``:
    word indices (``evidence_words``) read as segment indices would give a wrong number."""
    if needs.segment_evidence and evidence_segments is None:
        raise InvalidInputError(
            f"segment plausibility ({', '.join(needs.segment_evidence)}) reads each text's "
            "evidence segments: pass evidence_segments=[[0, 2], [1], ...] (segment indices, "
            "one list per text)"
        )


@dataclass
class Explained:
    """Each method's explanations of the same inputs, in input order, with their cost."""

    explanations: dict[str, list[Any]] = field(default_factory=dict)
    #: per method and input: the seconds of the batch it ran in, shared among its texts
    seconds: dict[str, list[float]] = field(default_factory=dict)
    #: per method and input: how many inputs shared that batch
    batch_sizes: dict[str, list[int]] = field(default_factory=dict)
    #: methods that could not explain these inputs (another architecture's method), and why
    skipped: dict[str, str] = field(default_factory=dict)


def methods_by_name(
    names: Sequence[str], seed: int | None = None, options: Mapping[str, Any] | None = None
) -> dict[str, AttributionMethod]:
    """Each named method built once, seeded where it takes a seed."""
    built = {}
    for name in names:
        settings = dict(options or {})
        if seed is not None and "seed" in method_options(name):
            settings["seed"] = seed
        built[name] = get_method(name, **settings)
    return built


def _checked_texts(texts: Sequence[TextInput], what: str = "texts") -> list[TextInput]:
    """``explain_texts``' texts, each refused as explain refuses it (None, a number, a NaN
    cell); none at all is an empty result (a bench unit with nothing left to explain)."""
    if (
        isinstance(texts, Sized)
        and not isinstance(texts, str)
        and getattr(texts, "ndim", None) != 0  # np.array("a film"): refused as explain does
        and len(texts) == 0
    ):
        return []
    return check_texts(texts, what)[0]


def explain_texts(
    model: ExplainableModel,
    texts: Sequence[TextInput],
    methods: Sequence[str] | Mapping[str, str | AttributionMethod],
    targets: Sequence[str | int | None] | None = None,
    *,
    contrasts: Sequence[str | int | None] | None = None,
    contrast_inputs: Sequence[TextInput] | None = None,
    layer: Any = None,
    batch_size: int = 16,
    max_tokens_per_batch: int | None = None,
    skip: tuple[type[Exception], ...] = (),
    progress: ProgressFactory | None = None,
    flag_only: bool = False,
    segments: str | Sequence[Any] | None = None,
    segment_reduce: str = "sum",
) -> Explained:
    """Explain every text with each method, for its own target (None: the prediction)
    and against its own contrast (None: none), or under its contrast input too
    (``contrast_inputs``: one per text). ``methods``: method names, or ``{name: method}``
    (an instance, or a name), as :func:`explain_and_evaluate` takes them.

    ``segments``: ``"sentences"``, or each text's segments (one entry per text), as
    :func:`~normxlogit.explaining.texts.explain` takes them; ``segment_reduce`` is the
    token methods' reduction (a segment method scores segments itself).

    The texts go through the model in the batches :func:`explain` would make (texts of one
    target and contrast together, longest first), each timed. A method that raises one of
    ``skip`` is recorded in :attr:`Explained.skipped` and the others go on.

    A text whose target is its contrast explains nothing (see
    :mod:`~normxlogit.explaining.contrast_rule`): it is flagged (NaN scores,
    ``settings["contrast_is_target"]``) and one warning names the flagged texts; when
    that is every text, the call is refused. ``flag_only``: flagged, and nothing said
    or refused (the bench, which explains a chunk at a time, reports them itself).
    """
    check_model(model, "explain_texts")
    # read by position, as lists are: Series whose indexes differ are refused, as
    # explain_and_evaluate refuses them, and a DataFrame or mapping (read by its keys)
    _refuse_misaligned_series(
        texts, targets=targets, contrasts=contrasts, contrast_inputs=contrast_inputs
    )
    _refuse_unordered_texts(
        texts, targets=targets, contrasts=contrasts, contrast_inputs=contrast_inputs
    )
    for name, values in (
        ("targets", targets),
        ("contrasts", contrasts),
        ("contrast_inputs", contrast_inputs),
    ):
        refuse_mapping(name, values)
    contrast_inputs = _per_text("contrast_inputs", contrast_inputs, "text")
    texts = _checked_texts(texts)
    wanted = _per_text("targets", targets, "text", hashable=True)
    versus = _per_text("contrasts", contrasts, "text", hashable=True)
    wanted = wanted if wanted is not None else [None] * len(texts)
    versus = versus if versus is not None else [None] * len(texts)
    if len(wanted) != len(texts) or len(versus) != len(texts):
        raise InvalidInputError(
            f"{len(texts)} texts but {len(wanted)} targets and {len(versus)} contrasts; "
            "give one per text"
        )
    if contrast_inputs is not None and len(contrast_inputs) != len(texts):
        given = len(contrast_inputs)
        raise InvalidInputError(
            f"{len(texts)} texts but {given} contrast input{'' if given == 1 else 's'}; give "
            "one per text"
        )
    segment_reduce = _check_segments(segments, segment_reduce, len(texts), "texts")
    built = checked_methods(methods)
    refuse_missing_tagger(built, model)
    batches = forward_batches(model, texts, wanted, batch_size, max_tokens_per_batch, versus)
    explained = Explained()
    said = False
    for name, method in built.items():
        made: list[Any] = [None] * len(texts)
        seconds, sizes = [0.0] * len(texts), [0] * len(texts)
        done = 0
        try:
            with _reporting(progress, name, len(texts)) as report, flagging_contrast_is_target():
                for batch in batches:
                    start = time.perf_counter()
                    group = explain(
                        model,
                        [texts[i] for i in batch],
                        method,
                        wanted[batch[0]],
                        layer,
                        contrast=versus[batch[0]],
                        contrast_input=(
                            None if contrast_inputs is None else [contrast_inputs[i] for i in batch]
                        ),
                        batch_size=batch_size,
                        max_tokens_per_batch=max_tokens_per_batch,
                        **_segment_options(method, segments, segment_reduce, batch),
                    )
                    share = (time.perf_counter() - start) / len(batch)
                    for index, explanation in zip(batch, group, strict=True):
                        made[index], seconds[index], sizes[index] = explanation, share, len(batch)
                    done += len(batch)
                    if report is not None:
                        report(done)
        except skip as error:
            explained.skipped[name] = str(error)
            continue
        flagged = [i for i, e in enumerate(made) if e.contrast_is_target]
        if flagged and not flag_only and not said:  # every method flags the same texts
            if len(flagged) == len(made):
                raise InvalidInputError(
                    contrast_is_target_refusal(made, all(t is None for t in wanted))
                )
            warnings.warn(
                contrast_is_target_warning(len(made), flagged, explanations=made),
                NormXLogitWarning,
                stacklevel=2,
            )
            said = True
        explained.explanations[name] = made
        explained.seconds[name], explained.batch_sizes[name] = seconds, sizes
    return explained


def explain_generations(
    model: ExplainableModel,
    prompts: TextInput | Sequence[TextInput],
    methods: Sequence[str] | Mapping[str, str | AttributionMethod],
    continuations: Sequence[str | Sequence[int] | None] | None = None,
    *,
    contrasts: Sequence[str | Sequence[int] | None] | None = None,
    contrast_inputs: Sequence[str | None] | None = None,
    max_new_tokens: int | None = None,
    layer: Any = None,
    batch_size: int = 16,
    max_tokens_per_batch: int | None = None,
    explain_steps: Sequence[int] | None = None,
    skip: tuple[type[Exception], ...] = (),
    progress: ProgressFactory | None = None,
    segments: str | Sequence[Any] | None = None,
    segment_reduce: str = "sum",
) -> Explained:
    """Explain each prompt's continuation step by step with each method (a segment
    method: the whole answer at once, see ``segments`` in :func:`explain_texts`), taken
    as :func:`explain_texts` takes them.

    A prompt without a continuation is generated by the first method that explains it
    (greedily, ``max_new_tokens`` at most); every later method explains those same tokens,
    so the methods' explanations can be compared and evaluated side by side. ``contrasts``:
    a contrast continuation per prompt (one token per step); ``contrast_inputs``: a
    contrast prompt per prompt (see :func:`~normxlogit.explaining.texts.explain`).
    ``explain_steps``: only these steps of each generation (e.g. those the metrics score).

    Prompts with a given continuation and no contrast are explained together (a prefix
    method batches their steps across prompts), each charged an equal share of the time;
    the others one at a time.
    """
    check_model(model, "explain_generations")
    # read by position: Series whose indexes differ are refused, as explain_texts does
    _refuse_misaligned_series(
        prompts,
        what="prompts",
        continuations=continuations,
        contrasts=contrasts,
        contrast_inputs=contrast_inputs,
    )
    # a set of prompts beside per-prompt values: which gets which would change by run
    _refuse_unordered_texts(
        prompts,
        "prompts",
        continuations=continuations,
        contrasts=contrasts,
        contrast_inputs=contrast_inputs,
    )
    single = isinstance(prompts, (str, tuple))  # one prompt (or pair), as explain_texts
    prompts = _checked_texts(prompts, "prompts")  # every prompt, before the first is generated
    explain_steps = checked_explain_steps(explain_steps)  # read once (a generator too)
    given = _per_prompt("continuations", continuations, single, len(prompts))
    versus = _per_prompt("contrasts", contrasts, single, len(prompts))
    others = _per_prompt("contrast_inputs", contrast_inputs, single, len(prompts))
    for name, values, raw in (
        ("continuations", given, continuations),
        ("contrasts", versus, contrasts),
        ("contrast_inputs", others, contrast_inputs),
    ):
        if raw is not None and len(values) != len(prompts):
            raise InvalidInputError(_count_refusal(name, values, len(prompts)))
    segment_reduce = _check_segments(segments, segment_reduce, len(prompts), "prompts")
    _refuse_surrogates(
        prompts=prompts, continuations=given, contrasts=versus, contrast_inputs=others
    )
    for name, values in (("continuations", given), ("contrasts", versus)):
        _refuse_id_entries(name, values)
    built = checked_methods(methods)
    refuse_missing_tagger(built, model)
    # the contrast-length refusal names this call's argument, continuations=
    naming = CONTINUATION_ARGUMENT.set("continuations")
    try:
        return _explain_each_generation(
            model,
            prompts,
            built,
            given,
            versus,
            others,
            single,
            layer=layer,
            max_new_tokens=max_new_tokens,
            batch_size=batch_size,
            max_tokens_per_batch=max_tokens_per_batch,
            explain_steps=explain_steps,
            progress=progress,
            segments=segments,
            segment_reduce=segment_reduce,
            skip=skip,
        )
    finally:
        CONTINUATION_ARGUMENT.reset(naming)


def _explain_each_generation(
    model: ExplainableModel,
    prompts: list[Any],
    built: Mapping[str, AttributionMethod],
    given: list[Any],
    versus: list[Any],
    others: list[Any],
    single: bool,
    **options: Any,
) -> Explained:
    """explain_generations' work, its arguments checked: each method over every prompt
    (see there)."""
    layer, max_new_tokens = options["layer"], options["max_new_tokens"]
    batch_size, max_tokens_per_batch = options["batch_size"], options["max_tokens_per_batch"]
    explain_steps, progress, skip = options["explain_steps"], options["progress"], options["skip"]
    segments, segment_reduce = options["segments"], options["segment_reduce"]
    explained = Explained()
    for name, method in built.items():
        made: list[Any] = [None] * len(prompts)
        seconds, sizes = [0.0] * len(prompts), [1] * len(prompts)
        try:
            for group in _generation_groups(given, versus, others):
                writes = given[group[0]] is None
                units = sum(
                    _explained_count(_steps(model, given[i], max_new_tokens), explain_steps)
                    for i in group
                )
                # each prompt named as in the whole call, not by its place in the group
                named = texts_named(regrouped(group) if not single else None)
                with _reporting(progress, name, units) as report, named:
                    start = time.perf_counter()
                    group_made = explain(
                        model,
                        [prompts[i] for i in group],
                        method,
                        None,
                        layer,
                        generate=writes,
                        max_new_tokens=max_new_tokens if writes else None,
                        continuation=None if writes else [given[i] for i in group],
                        contrast=versus[group[0]],
                        contrast_input=None if others[group[0]] is None else [others[group[0]]],
                        batch_size=batch_size,
                        max_tokens_per_batch=max_tokens_per_batch,
                        explain_steps=explain_steps,
                        progress=report,
                        **_segment_options(method, segments, segment_reduce, group),
                    )
                share = (time.perf_counter() - start) / len(group)
                for index, explanation in zip(group, group_made, strict=True):
                    made[index], seconds[index], sizes[index] = explanation, share, len(group)
        except skip as error:
            explained.skipped[name] = str(error)
            continue
        for index, explanation in enumerate(made):
            if given[index] is None:  # the next methods explain what this one wrote
                given[index] = _written(explanation)
        explained.explanations[name] = made
        explained.seconds[name], explained.batch_sizes[name] = seconds, sizes
    return explained


def _is_id(value: Any) -> bool:
    """Whether ``value`` is a token id (an int, a NumPy integer; never a bool)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _refuse_unordered_texts(texts: Any, what: str = "texts", **per_text: Any) -> None:
    """Texts given as a set (no order) beside per-text values read by position: which
    text gets which value would change from run to run; refused naming the argument
    (``what``: "texts", or "prompts" for explain_generations)."""
    unordered = unordered_phrase(texts)
    given = [name for name, values in per_text.items() if values is not None]
    if unordered and given:
        raise InvalidInputError(
            f"{what} are {unordered}, which has no order, so {given[0]} would be paired with "
            f"them at random; give the {what} as a list, in the order of the "
            f"{given[0]}"
        )


def _count_refusal(name: str, values: list[Any], prompts: int) -> str:
    """The refusal of ``name`` (a per-prompt argument) with a count other than the
    prompts': that argument named, with its own fix (one prompt's token ids as a list
    inside the list where its entries are ids)."""

    def counted(count: int, word: str) -> str:
        return f"{count} {word}{'' if count == 1 else 's'}"

    entry = {"continuations": "continuation", "contrasts": "contrast"}.get(name)
    ids = [lone_item(value) for value in values if _is_id(lone_item(value))]
    if entry and ids and len(ids) == len(values):
        fix = (
            f"one prompt's {entry} as token ids in a list inside the list "
            f"({name}=[{[int(v) for v in ids]!r}])"
            if prompts == 1
            else f"each prompt's {entry} as a text or a list of token ids"
        )
    else:
        fix = f"one {_ONE_ENTRY.get(name, 'entry')} per prompt"
    return (
        f"{counted(prompts, 'prompt')} but {name} has {counted(len(values), 'entry')}".replace(
            "entrys", "entries"
        )
        + f"; give {fix}"
    )


def _refuse_id_entries(name: str, values: list[Any]) -> None:
    """Refuse a flat list of token ids given for several prompts (``continuations=[5,
    6]``): each entry is one prompt's continuation or contrast, a text or a list of ids,
    and counting an int's steps would end in a TypeError."""
    from .explaining.steps import check_continuation

    what = "continuation" if name == "continuations" else "contrast"
    for index, value in enumerate(values):
        value = lone_item(value)
        if value is None:
            continue
        if _is_id(value):
            shown = [[int(lone_item(v))] if _is_id(lone_item(v)) else v for v in values]
            raise InvalidInputError(
                f"{name}[{index}] is the int {value}; each prompt's {what} is a text or a "
                f"list of token ids (e.g. {name}={shown!r})"
            )
        try:
            check_continuation(value, what)
        except InvalidInputError as error:
            raise InvalidInputError(f"{name}[{index}]: {error}") from None


def _per_prompt(name: str, values: Any, single: bool, count: int) -> list[Any]:
    """One value per prompt: None for each where none is given; a single prompt's text
    (a str, never split into characters) as its one value. For several prompts a str is
    refused, as one value is (it would be read a character per prompt)."""
    if values is None:
        return [None] * count
    if single and isinstance(lone_item(values), str):  # np.array(" good"): the text held
        return [lone_item(values)]
    if single and getattr(values, "ndim", None) == 1 and hasattr(values, "tolist"):
        listed = values.tolist()  # np.array([5, 6]), torch.tensor([5, 6]): ids, as explain's
        if listed and all(isinstance(v, numbers.Number) for v in listed):
            values = listed  # ids, or ids with a float (np.array([5., 6.])), refused below
    ids = isinstance(values, (list, tuple)) and values  # [5, 6]: one prompt's token ids
    # a 0-d array or tensor entry (np.array(5), torch.tensor(6)): the id it holds
    if (
        single
        and name in ("continuations", "contrasts")
        and ids
        and all(_is_id(lone_item(v)) for v in values)
    ):
        return [[int(lone_item(v)) for v in values]]
    numeric = ids and all(isinstance(lone_item(v), numbers.Number) for v in values)
    if single and name in ("continuations", "contrasts") and numeric:  # [5.0, 6]: a stray
        at, stray = next(
            (i, lone_item(v)) for i, v in enumerate(values) if not _is_id(lone_item(v))
        )
        raise InvalidInputError(  # named as explain names it, not counted as prompts
            f"{name} holds token ids and, at [{at}], {type_phrase(stray)} {stray!r:.40}; "
            "token ids are whole numbers (ints): give a text or a list of ints"
        )
    return _per_text(name, values, "prompt")


#: what one entry of a per-text argument is, for the refusal of a single value
_ONE_ENTRY = {
    "targets": "target (a label name, an index, a list of them, or None)",
    "contrasts": "contrast (or None)",
    "contrast_inputs": "contrast input",
    "continuations": "continuation (or None)",
}


def _per_text(name: str, values: Any, per: str, *, hashable: bool = False) -> list[Any] | None:
    """``values`` (the argument ``name``) as a list with one entry per text (``per``:
    "text", "prompt"), read by position; None stays None. One str (read a character per
    text) or a value that is no list at all (``targets=1``) is refused in one line;
    ``hashable``: each entry is a target or contrast, a list of them kept as a tuple (the
    texts are grouped by it) and any other unhashable entry refused as the target is."""
    values = lone_item(values)  # np.array(1): refused as the 1 it holds
    if values is None:
        return None
    entry = _ONE_ENTRY.get(name, "entry")
    if unordered := unordered_phrase(values):
        raise InvalidInputError(
            f"{name} is {unordered}, which has no order, so its entries would be paired with "
            f"the {per}s at random; give a list with one {entry} per {per}"
        )
    if isinstance(values, (str, bytes)):
        raise InvalidInputError(
            f"{name} is one {'text' if isinstance(values, str) else 'bytes value'} "
            f"({values!r:.60}); give a list with one {entry} per {per}"
        )
    if not isinstance(values, Iterable):
        single = (
            f" (the same target for every text: model.explain(texts, target={values!r}))"
            if name == "targets"
            and isinstance(values, numbers.Integral)
            and not isinstance(values, bool)
            else ""
        )
        if single:
            single = single.replace(f"target={values!r}", f"target={int(values)}")
        raise InvalidInputError(
            f"{name} must be a list with one {entry} per {per}, got {type_phrase(values)} "
            f"{values!r:.60}{single}"
        )
    listed = list(values)  # by position (a Series by its index else)
    # a 0-d array or tensor entry (np.array(2), torch.tensor(0)): the value it holds
    listed = [lone_item(value) for value in listed]
    if not hashable:
        return listed
    from .common.targets import check_contrast, check_target

    checked = []
    for number, value in enumerate(listed):
        if isinstance(value, list):
            value = tuple(value)  # as a tuple is taken: one score column each
        if getattr(value, "ndim", 0) and hasattr(value, "tolist"):  # a numpy int is one index
            raise InvalidInputError(
                f"{name}[{number}] is {type_phrase(value)}; give it as a list "
                f"({name}[{number}].tolist()): one {entry} per {per}"
            )
        try:
            hash(value)
        except TypeError:  # a dict, a set: refused as the target argument refuses it
            (check_target if name == "targets" else check_contrast)(value)
            raise InvalidInputError(
                f"{name}[{number}] is {type_phrase(value)}; give one {entry} per {per}"
            ) from None
        checked.append(value)
    return checked


def _check_segments(segments: Any, reduce: Any, count: int, what: str) -> str:
    """``reduce``, the reduction, checked as ``explain`` checks it (a 0-d array read as the
    name it holds), once ``segments`` is None, ``"sentences"``, or one entry per input
    (refused here, before the first method runs)."""
    reduce = checked_choice(reduce, "segment_reduce", SEGMENT_REDUCTIONS)
    if segments is None and reduce != "sum":
        raise InvalidInputError(
            f"segment_reduce={reduce!r} reduces segments, but none were given; pass "
            "segments='sentences' or each text's segments"
        )
    if segments is None or isinstance(segments, str):
        return reduce
    if not isinstance(segments, Sequence) or len(segments) != count:
        given = len(segments) if isinstance(segments, Sequence) else type(segments).__name__
        raise InvalidInputError(
            f"{count} {what} but segments holds {given} entries; give 'sentences', or one "
            f"list of segments per {what[:-1]}"
        )
    return reduce


def _segment_options(
    method: AttributionMethod, segments: Any, reduce: str, picked: Sequence[int]
) -> dict[str, Any]:
    """``explain``'s segment arguments for the inputs ``picked``: ``"sentences"`` for
    each, or each one's own segments; the reduction for a token method only (a segment
    method scores segments itself)."""
    if segments is None:
        return {}
    own = segments if isinstance(segments, str) else [segments[i] for i in picked]
    native = getattr(method, "needs_segments", False)
    return {"segments": own, "segment_reduce": "sum" if native else reduce}


def _written(explanation: Any) -> list[int]:
    """The tokens a generation wrote: after its prompt, or a segment method's whole
    answer (``settings["answer_ids"]``)."""
    if isinstance(explanation, Explanation):
        return list(explanation.settings["answer_ids"])
    return explanation.input_ids[explanation.prompt_length :]


def _generation_groups(
    given: Sequence[Any], versus: Sequence[Any], others: Sequence[Any]
) -> list[list[int]]:
    """The prompts explained in one call: those with a continuation and no contrast (of
    either kind) together; each other prompt alone (it is generated, or has its own
    contrast)."""
    together = [
        given[i] is not None and versus[i] is None and others[i] is None for i in range(len(given))
    ]
    plain = [i for i, joins in enumerate(together) if joins]
    alone = [[i] for i, joins in enumerate(together) if not joins]
    return ([plain] if plain else []) + alone


def evaluate_texts(
    model: ExplainableModel,
    explanations: Explained | Mapping[str, Sequence[Explanation]] | Sequence[Explanation],
    metrics: Sequence[str] | None = None,
    *,
    labels: Sequence[Any] | None = None,
    evidence_words: Sequence[Sequence[int] | None] | None = None,
    evidence_segments: Sequence[Sequence[int]] | None = None,
    protocol: Protocol | None = None,
    batch_size: int = 16,
    rows_per_forward: int | None = None,
    tokens_per_forward: int | None = None,
    max_tokens_per_batch: int | None = None,
    progress: bool | Callable[[float], None] | None = None,
) -> EvaluationResult:
    """Score each method's explanations with ``metrics`` (default: the model's). The
    metrics get the gold labels only when one of them reads them, and human evidence (word
    indices per text) mapped onto each explanation's tokens only when one needs it; segment
    plausibility gets ``evidence_segments`` (segment indices per text) as they are."""
    check_model(model, "evaluate_texts")
    for name, values in (
        ("labels", labels),
        ("evidence_words", evidence_words),
        ("evidence_segments", evidence_segments),
    ):
        refuse_mapping(name, values)  # as explain_and_evaluate refuses them
    refuse_unlisted_evidence(evidence_words, evidence_segments)
    explanations = _grouped(explanations)
    if labels is not None:  # counted as evaluate counts them, read by a metric or not
        check_aligned("labels", labels, len(ExplanationSet.build(explanations).texts), False)
    metrics = given_metrics(metrics)  # a lone name is a list of one, as evaluate takes it
    if metrics is None:  # given evidence adds the metrics that read it, as for evaluate
        chosen = metrics_for_evidence(model, None, evidence_words, name="evidence_words")
        segmented = any(
            getattr(e, "segments", None) is not None for es in explanations.values() for e in es
        )
        chosen = metrics_for_segment_evidence(model, None, chosen, evidence_segments, segmented)
    else:  # as given (the command line passes its file's evidence column whatever it asks)
        chosen = list(metrics)
    needs = metric_needs(chosen)
    check_segment_evidence(needs, evidence_segments)
    evidence = None
    if needs.segment_evidence:
        evidence = list(evidence_segments)  # evaluate refuses a mix with token evidence
        _check_given_segment_evidence(explanations, evidence)
    elif needs.evidence:
        first = next(iter(explanations.values()), [])
        evidence = evidence_over_tokens(model, [e.text for e in first], evidence_words)
    return evaluate(
        model,
        explanations,
        chosen,
        labels=labels if needs.labels else None,
        evidence=evidence,
        protocol=protocol,
        batch_size=batch_size,
        rows_per_forward=rows_per_forward,
        tokens_per_forward=tokens_per_forward,
        max_tokens_per_batch=max_tokens_per_batch,
        progress=progress,
    )


def _grouped(explanations: Any) -> dict[Any, list[Explanation]]:
    """``evaluate_texts``'s explanations by method, taken as ``evaluate`` takes them (what
    :func:`explain_texts` returns, a dict by method, or a list grouped by each one's
    method); any other shape refused in one line before any work."""
    checked = checked_explanations(explanations)
    if isinstance(checked, dict):
        return checked
    groups: dict[Any, list[Explanation]] = {}
    for item in checked:
        groups.setdefault(item.method, []).append(item)
    for name, items in groups.items():  # grouped by name alone: one setting each
        check_one_setting(name, items, named=False)
    return groups


#: what each kind of evidence holds per text, as its refusals of one value spell it
_EVIDENCE_LISTS = {
    "evidence_words": "one list of word indices per text, in the texts' order (for one "
    "text: [[1, 2]])",
    "evidence_segments": "one list of segment indices per text, e.g. [[0, 2], [1]]",
}


def _unlisted(name: str, values: Any) -> str:
    """The refusal of ``name`` given as one value rather than a list per text."""
    return f"{name} is {type_phrase(values)}; give {_EVIDENCE_LISTS[name]}"


def refuse_unlisted_evidence(evidence_words: Any, evidence_segments: Any) -> None:
    """Evidence given as one string (``"01"``) or a mapping, refused before any work
    whatever the metrics: under the defaults no metric reads it, so it would be dropped
    unsaid (a metric that reads it refuses it the same way)."""
    for name, values in (
        ("evidence_words", evidence_words),
        ("evidence_segments", evidence_segments),
    ):
        unlisted = values is not None and not isinstance(values, Iterable)  # 3
        if unlisted or isinstance(values, (str, bytes, Mapping)):
            raise InvalidInputError(_unlisted(name, values))
        if held := zero_d_phrase(values):  # torch.tensor(1): iterating it fails
            raise InvalidInputError(f"{name} is {held}; give {_EVIDENCE_LISTS[name]}")


def checked_evidence_words(
    texts: Sequence[Any], evidence_words: Sequence[Sequence[int] | None] | None
) -> list[set[int]]:
    """Each text's evidence word indices, refused unless there is one list per text whose
    indices are words of it: what needs no model, so it is checked before any explaining."""
    refuse_unlisted_evidence(evidence_words, None)
    words = list(evidence_words) if evidence_words is not None else [None] * len(texts)
    if len(words) != len(texts):
        raise InvalidInputError(
            f"{len(words)} evidence entries for {len(texts)} texts; give one per text"
        )
    # a 0-d array holding None (np.array(None, dtype=object)) is no evidence either
    missing = next((n for n, w in enumerate(words) if lone_item(w) is None), None)
    if missing is not None:
        raise InvalidInputError(
            f"{text_name(missing)} has no evidence words, which the evidence metrics need: "
            "pass evidence_words=[[0, 3], ...] (whitespace-word indices, one list per text)"
        )
    checked = []
    for number, (text, given) in enumerate(zip(texts, words, strict=True)):
        chosen = set(evidence_word_indices(given, number))
        count = text_word_count(text)
        wrong = sorted(w for w in chosen if not 0 <= w < count)
        if wrong:
            raise InvalidInputError(
                f"evidence word index {short_value(wrong[0])} is out of range for {text!r:.80}, "
                f"which has {count} words (whitespace-separated, counted from 0)"
            )
        checked.append(chosen)
    return checked


def evidence_over_tokens(
    model: ExplainableModel,
    texts: Sequence[Any],
    evidence_words: Sequence[Sequence[int] | None] | None,
) -> list[list[int]]:
    """Each text's evidence words (whitespace-word indices; a pair's count through its
    first text, then its second) as a 0/1 vector over the model's tokens of that text,
    chat prompt and special tokens included (see ``Encoder.token_words``)."""
    words = checked_evidence_words(texts, evidence_words)
    vectors = []
    unread: list[tuple[int, int, int]] = []  # (text index, words left out, of how many)
    tokenless: list[tuple[int, int, str]] = []  # (text index, word index, the word)
    for number, (text, chosen) in enumerate(zip(texts, words, strict=True)):
        located = model.encoder.token_words(text)  # the tokens the model reads
        read = {w for w in located if w is not None}
        last = max(read, default=-1)  # words after the last one read were cut off
        past = {w for w in chosen - read if w > last}
        if past:
            unread.append((number, len(past), len(chosen)))
        parts = (text,) if isinstance(text, str) else text
        pieces = [part[a:b] for part in parts for a, b in word_spans(part)]
        tokenless += [(number, w, pieces[w]) for w in sorted(chosen - read - past)]
        vectors.append([int(w is not None and w in chosen) for w in located])
    if unread:
        _warn_unread_evidence(model, unread)
    if tokenless:
        _warn_tokenless_evidence(tokenless)
    return vectors


def _warn_tokenless_evidence(tokenless: list[tuple[int, int, str]]) -> None:
    """Evidence words the tokenizer gives no token (invisible or control characters only)
    are left out of the scores, said once: they are no truncation."""
    import warnings

    from .common.errors import NormXLogitWarning

    shown = ", ".join(f"{text_name(n)}: word {w} {word!r}" for n, w, word in tokenless[:5])
    more = f" and {len(tokenless) - 5} more" if len(tokenless) > 5 else ""
    words = "evidence word holds" if len(tokenless) == 1 else "evidence words hold"
    warnings.warn(
        f"{len(tokenless)} {words} no token the model reads, only invisible or control "
        f"characters ({shown}{more}); left out of the scores",
        NormXLogitWarning,
        stacklevel=3,
    )


def _warn_unread_evidence(model: ExplainableModel, unread: list[tuple[int, int, int]]) -> None:
    """Evidence words past what the model reads are left out of the scores, said once."""
    import warnings

    from .common.errors import NormXLogitWarning

    shown = ", ".join(f"{text_name(n)}: {out} of {total}" for n, out, total in unread[:5])
    more = f" and {len(unread) - 5} more texts" if len(unread) > 5 else ""
    count = sum(out for _, out, _ in unread)
    words = "evidence word lies" if count == 1 else "evidence words lie"
    warnings.warn(
        f"{count} {words} past the "
        f"{model.encoder.max_length} tokens the model reads ({shown}{more}); the scores "
        "cover the part it read",
        NormXLogitWarning,
        stacklevel=3,
    )


@dataclass
class Evaluated:
    """What :func:`explain_and_evaluate` made: the explanations and their scores."""

    explained: Explained
    result: EvaluationResult


def refuse_regressor_label(model: ExplainableModel, explain_label: bool, flag: str = "") -> None:
    """``explain_label`` on a regressor, refused: it has one output, explained whatever
    the gold value (a number, no label to explain). ``flag`` names the option as the
    caller spells it (the CLI's ``--explain-label``)."""
    from .model.tasks import TaskKind

    if explain_label and model.task.kind is TaskKind.REGRESSION:
        named = flag or "explain_label"
        raise InvalidInputError(
            f"{named} explains each text's gold label, and a regressor has one output "
            f"({model.task.labels[0]!r}), so there is no label to explain: its prediction is "
            f"explained already; leave {named} out"
        )


def _refuse_before_explaining(
    model: ExplainableModel,
    texts: Sequence[Any],
    metrics: Sequence[str],
    needs: MetricNeeds,
    labels: Sequence[Any] | None,
    evidence_words: Sequence[Sequence[int] | None] | None,
    segments: Any,
    protocol: Protocol,
    explain_label: bool,
) -> None:
    """What the scoring would refuse once every method had explained every text (minutes
    to hours with IG, LIME or ReAGent), refused first: gold labels the model has no output
    for (also when explained, ``explain_label``, and no metric reads them), token and
    segment evidence metrics together, evidence words that are no words of their text,
    segment metrics without segments."""
    from .evaluation.context import check_gold_labels
    from .evaluation.registry import metric_class

    check_evidence_kinds(metrics)
    if (needs.labels or explain_label) and labels is not None:  # explain_label: targets
        check_gold_labels(model, list(labels))
    if needs.evidence and not needs.segment_evidence:
        checked_evidence_words(texts, evidence_words)
    if segments is not None:
        return
    needing = [name for name in metrics if metric_class(name).needs_segments]
    needing += ["unit='segment'"] if protocol.unit == "segment" else []
    if needing:
        raise InvalidInputError(
            f"{needing[0]} reads segments, and none were given: pass segments='sentences' (or "
            "each text's segments)"
        )


def _check_given_segment_evidence(
    explanations: Mapping[Any, Sequence[Explanation]], evidence: list[Any]
) -> None:
    """``evaluate_texts``' evidence segments checked against the explanations' segments
    under the parameter's own name (``evaluate`` would name them ``evidence[i]``)."""
    from .evaluation.segment_plausibility import segment_evidence

    for items in explanations.values():  # a count that differs is evaluate's to refuse
        for number, item in enumerate(items[: len(evidence)]):
            if getattr(item, "segments", None) is not None:
                count = len(item.segments.texts)
                segment_evidence(evidence[number], count, f"evidence_segments[{number}]")


def _refuse_segment_evidence(
    texts: Sequence[Any], needs: MetricNeeds, evidence_segments: Any, segments: Any
) -> None:
    """Evidence segments that do not fit the texts' segments (one list per text, indices
    of its segments), refused before explaining: the segments follow from ``segments=``
    alone (the sentence split is a rule, no model)."""
    from .evaluation.segment_plausibility import segment_evidence
    from .model.segments import resolve_segments

    if not needs.segment_evidence or evidence_segments is None or segments is None:
        return
    if not isinstance(evidence_segments, Sequence) or isinstance(evidence_segments, str):
        raise InvalidInputError(_unlisted("evidence_segments", evidence_segments))
    if len(evidence_segments) != len(texts):
        raise InvalidInputError(
            f"{len(evidence_segments)} evidence_segments entries for {len(texts)} texts; give "
            "one list of segment indices per text"
        )
    for number, (text, given) in enumerate(zip(texts, evidence_segments, strict=True)):
        spec = segments if isinstance(segments, str) else segments[number]
        count = len(resolve_segments(text, spec, f"segments[{number}]").spans)
        segment_evidence(given, count, f"evidence_segments[{number}]")


def _refuse_segment_methods(
    methods: Mapping[str, Any], segments: Any, metrics: Sequence[str]
) -> None:
    """A segment method (leave_one_out, ...) without ``segments=``, or with a metric that
    cannot score its explanations (the sanity checks), is refused before the other
    methods explain every text, not after. A method given by name (``{key: "lime"}``) is
    read as its class."""
    from .evaluation.registry import metric_class
    from .methods import method_class

    kinds = {
        name: method_class(method) if isinstance(method, str) else method
        for name, method in methods.items()
    }
    native = [name for name, kind in kinds.items() if getattr(kind, "needs_segments", False)]
    if native and segments is None:
        raise InvalidInputError(
            f"{native[0]!r} scores segments; pass segments='sentences' (or each text's segments)"
        )
    # the names the explanations will carry (Explanation.method), which the metrics read
    made_by = sorted({getattr(kind, "name", name) for name, kind in kinds.items()})
    for metric in metrics:
        if (reason := metric_class(metric).explanation_refusal(made_by)) is not None:
            raise InvalidInputError(reason)


def _seeded(protocol: Protocol | None, seed: int | None) -> Protocol:
    """The protocol with ``seed`` as its seed: given twice, the two must agree (the
    protocol's default seed gives way), so neither is silently ignored. A 0-d array is
    read as the number it holds; a seed that is no whole number is refused as ``seed=``
    (the caller's word), not as a protocol setting."""
    seed = lone_item(seed)  # np.array(3), torch.tensor(3): the seed held
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
        raise InvalidInputError(
            f"seed={short_value(seed)} is {type_phrase(seed)}; give a whole number (an int), "
            "e.g. seed=0"
        )
    if seed is not None and abs(int(seed)) > MAX_INTEGER:
        raise InvalidInputError(f"seed={short_value(seed)} is too large; at most {MAX_INTEGER}")
    seed = None if seed is None else int(seed)
    if protocol is None:
        return Protocol(seed=0 if seed is None else seed)
    protocol = given_protocol(protocol)  # a dict or text refused in one line
    if seed is None or seed == protocol.seed:
        return protocol
    if protocol.seed != Protocol().seed:
        raise InvalidInputError(
            f"seed={seed} and the protocol's seed={protocol.seed} disagree; give the seed "
            "once, as seed= or as Protocol(seed=...)"
        )
    return protocol.with_options(seed=seed)


def _is_series(values: Any) -> bool:
    """A pandas Series (known by its index, without importing pandas here)."""
    return type(values).__name__ == "Series" and hasattr(values, "index")


def _refuse_misaligned_series(texts: Any, what: str = "texts", **columns: Any) -> None:
    """Texts and their labels or evidence given as pandas Series are paired by position,
    as lists are; two Series whose indexes differ (one sorted, one filtered) would pair
    each text with another row's label without a word, so they are refused (``what``:
    "texts", or "prompts" for explain_generations)."""
    if not _is_series(texts):
        return
    for name, values in columns.items():
        if _is_series(values) and not texts.index.equals(values.index):
            raise InvalidInputError(
                f"{what} and {name} are pandas Series with different indexes, and they are "
                f"paired by position, not by index; align them first ({name}="
                f"{name}.reindex({what}.index)), or pass lists in one order"
            )


def explain_and_evaluate(
    model: ExplainableModel,
    texts: Sequence[TextInput],
    methods: Sequence[str] | Mapping[str, str | AttributionMethod] = ("normxlogit", "random"),
    metrics: Sequence[str] | None = None,
    *,
    labels: Sequence[Any] | None = None,
    evidence_words: Sequence[Sequence[int] | None] | None = None,
    evidence_segments: Sequence[Sequence[int]] | None = None,
    explain_label: bool = False,
    protocol: Protocol | None = None,
    seed: int | None = None,
    batch_size: int = 16,
    max_tokens_per_batch: int | None = None,
    explain_progress: ProgressFactory | None = None,
    progress: bool | Callable[[float], None] | None = None,
    segments: str | Sequence[Any] | None = None,
    segment_reduce: str = "sum",
) -> Evaluated:
    """Explain ``texts`` with each method, then score the explanations.

    Args:
        methods: method names (seeded with ``seed`` where they take one), or
            ``{name: method}``.
        seed: seeds the named methods and the metrics' draws: it is the protocol's seed
            (``protocol``'s own when left out, else 0); a protocol whose seed is set to
            another value is refused rather than one of the two ignored.
        metrics: default: the model's (``comp_cd``, ``suff_cd``; a regressor's ``comp_acc``,
            ``suff_acc``), with ``token_f1``, ``token_iou`` and ``auprc`` when
            ``evidence_words`` gives every text evidence and no ``segments`` are given, or
            ``segment_hit_1``, ``segment_hit_3`` and ``segment_auprc`` when
            ``evidence_segments`` gives every text evidence segments and ``segments`` are
            given; evidence no metric reads is warned of, naming what reads it.
        labels: gold labels, one per text (accuracy metrics, correlations).
        evidence_words: per text, the indices of its whitespace words that are the human
            evidence (the alignment metrics).
        evidence_segments: per text, the indices of its evidence segments (segment
            plausibility: ``segment_hit_1``, ``segment_hit_3``, ``segment_auprc``).
        explain_label: explain each text's gold label instead of the prediction.
        segments: ``"sentences"``, or each text's segments, as :func:`explain_texts`
            takes them: a segment method (``leave_one_out``) needs them, and so do the
            segment metrics (``segment_drop``) and ``Protocol(unit="segment")``.
        segment_reduce: how a token method's scores become a segment's, as for
            :func:`explain_texts`.
        explain_progress: what shows the explaining, per method (see :data:`ProgressFactory`).
        progress: what shows the scoring, as for :func:`~normxlogit.evaluate`.
    """
    check_model(model, "explain_and_evaluate")
    # np.array(1), torch.tensor(1), np.array(None, dtype=object): named as what was given
    # (as evaluate_texts names them), never read as the lone value or as no labels
    for name, values in (
        ("labels", labels),
        ("evidence_words", evidence_words),
        ("evidence_segments", evidence_segments),
    ):
        held = zero_d_phrase(values)
        if held:
            raise InvalidInputError(
                f"{name} must be a list with one entry per text, got {held}; give one entry "
                f"per text, or leave {name} out"
            )
    _refuse_misaligned_series(
        texts, labels=labels, evidence_words=evidence_words, evidence_segments=evidence_segments
    )
    _refuse_unordered_texts(
        texts, labels=labels, evidence_words=evidence_words, evidence_segments=evidence_segments
    )
    texts, _ = check_texts(texts)  # a generator read once, a lone text as a list of one
    metrics = given_metrics(metrics)  # a lone name is a list of one, as evaluate takes it
    for name, values in (
        ("labels", labels),
        ("evidence_words", evidence_words),
        ("evidence_segments", evidence_segments),
    ):
        refuse_mapping(name, values)
    refuse_unlisted_evidence(evidence_words, evidence_segments)
    labels, evidence_words, evidence_segments = (
        _read_once(labels),
        _read_once(evidence_words),
        _read_once(evidence_segments),
    )
    # evidence segments add the segment metrics to the defaults where segments are
    # explained, evidence words the token metrics (as the command line's evidence column
    # does) where not; evidence no metric reads is warned of, with why and what reads it
    segmented = segments is not None
    chosen = metrics_for_segment_evidence(
        model, metrics, _given_or_default(model, metrics), evidence_segments, segmented
    )
    chosen = metrics_for_evidence(
        model, chosen if segmented else metrics, evidence_words, segmented, "evidence_words",
        kind="tokens",
    )  # fmt: skip
    if not chosen:  # refused before any explaining, as evaluate would after it
        raise InvalidInputError("no metrics asked for; see normxlogit.evaluation.list_metrics()")
    reason = first_refusal(model, chosen)
    if reason is not None:
        raise InvalidInputError(reason)
    refuse_regressor_label(model, explain_label)
    needs = metric_needs(chosen)
    if labels is not None:  # read by a metric or not, a count that differs is misaligned
        check_aligned("labels", labels, len(texts), False, "the texts' order")
    if (needs.labels or explain_label) and labels is None:  # a count checked above
        raise InvalidInputError(
            "the metrics asked for (or explain_label) need labels: pass labels=[...] with one "
            "entry per text"
        )
    check_segment_evidence(needs, evidence_segments)
    segment_reduce = _check_segments(segments, segment_reduce, len(texts), "texts")
    protocol = _seeded(protocol, seed)
    _refuse_before_explaining(
        model, texts, chosen, needs, labels, evidence_words, segments, protocol, explain_label
    )
    _refuse_segment_evidence(texts, needs, evidence_segments, segments)
    methods = checked_methods(methods, protocol.seed)
    _refuse_segment_methods(methods, segments, chosen)
    explained = explain_texts(
        model,
        texts,
        methods,
        list(labels) if explain_label and labels is not None else None,
        batch_size=batch_size,
        max_tokens_per_batch=max_tokens_per_batch,
        progress=explain_progress,
        segments=segments,
        segment_reduce=segment_reduce,
    )
    result = evaluate_texts(
        model,
        explained.explanations,
        chosen,
        labels=labels,
        evidence_words=evidence_words,
        evidence_segments=evidence_segments,
        protocol=protocol,
        batch_size=batch_size,
        max_tokens_per_batch=max_tokens_per_batch,
        progress=progress,
    )
    return Evaluated(explained, result)


def _given_or_default(model: ExplainableModel, metrics: Sequence[str] | None) -> list[str]:
    """The metrics asked for, or the model's defaults."""
    return list(metrics) if metrics is not None else list(default_metrics(model))


def _read_once(values: Any) -> Any:
    """An iterator or generator of per-text values as a list: the checks before explaining
    and the scoring after both read them, and an iterator would be empty the second time.
    Anything else is passed on as given, for the checks to judge."""
    return list(values) if isinstance(values, Iterator) else values


def refuse_missing_tagger(
    methods: Mapping[str, AttributionMethod], model: ExplainableModel
) -> None:
    """A ReAGent whose pos sampler cannot run here (no spaCy, and no cached groups of the
    model's tokenizer), or whose probes cannot watch this model's outputs (a regressor, a
    classifier of no more labels than its stopping top k), refused before any method runs:
    else the methods before it would be computed and then lost. The fix is spelt as these
    functions take a method's options: an instance in ``methods={name: ...}``."""
    from .methods.reagent import model_refusal, tagger_refusal

    for key, method in methods.items():
        sampler = method_option_fix(key, method, "sampler").format(
            name="sampler", value="'uniform'"
        )
        if (reason := tagger_refusal([method], model.tokenizer, sampler)) is not None:
            raise InvalidInputError(reason)
        fix = method_option_fix(key, method, "stopping_condition_top_k")
        if (reason := model_refusal([method], model, fix)) is not None:
            raise InvalidInputError(reason)


def method_option_fix(key: str, method: AttributionMethod, option: str) -> str:
    """How to set ``option`` (``{name}``) to ``{value}`` of the method under ``key`` where
    methods are given by name or instance (no keyword passes a method's options through),
    keeping the instance's other options that differ from their defaults."""
    named = _braced(repr(str(key)))
    return f"pass methods={{{{{named}: {rebuilt_fix(method, option)}}}}}"


def _braced(text: str) -> str:
    """``text`` with its braces doubled, to sit in a format string as it is."""
    return text.replace("{", "{{").replace("}", "}}")


#: how the functions that explain with several methods take them
METHODS_USAGE = (
    "give a list of method names, or a dict of name -> method "
    "(normxlogit.get_method(name, **options), or a method name)"
)


def checked_methods(methods: Any, seed: int | None = None) -> dict[str, AttributionMethod]:
    """Each method built once (not once per batch), from what ``explain_and_evaluate``
    and the sanity checks take: a list of names (seeded with ``seed`` where they take one;
    a lone name is a list of one) or ``{name: method}`` (an instance, or a name, seeded
    as in a list; the sanity checks' ``_methods`` builds them alike). Anything else, or
    none, is refused in one line before any work."""
    if isinstance(methods, Mapping):
        if not methods:
            raise InvalidInputError(f"methods: an empty dict; {METHODS_USAGE}")
        return {str(name): _method_of(name, method, seed) for name, method in methods.items()}
    methods = lone_item(methods)  # np.array("random"): the one name
    if isinstance(methods, str):  # a lone name is a list of one, as for metrics
        methods = [methods]
    if not isinstance(methods, Iterable):
        raise InvalidInputError(f"methods={methods!r:.60}: {METHODS_USAGE}")
    names = [lone_item(name) for name in methods]  # np.array("random"): the name it holds
    if not names:
        raise InvalidInputError(f"methods: an empty list; {METHODS_USAGE}")
    for name in names:
        if isinstance(name, AttributionMethod):  # one with options: the dict form
            raise InvalidInputError(
                f"methods: {type(name).__name__}(...) is a method instance, and a list holds "
                f"method names; give a method with options in a dict by name: methods={{"
                f"{name.name!r}: normxlogit.get_method({name.name!r}, **options), ...}} "
                "(the others as name: name)"
            )
        if not isinstance(name, str):
            raise InvalidInputError(
                f"methods: {name!r:.60} is {type_phrase(name)}, not a method name; {METHODS_USAGE}"
            )
    names = [str(name) for name in names]  # numpy's str_ keys print as np.str_('x')
    refuse_repeated_names(names, "run")
    return methods_by_name(names, seed)


def _method_of(name: Any, method: Any, seed: int | None = None) -> AttributionMethod:
    """``methods[name]`` as a method: an instance as it is (its own seed), a name built
    as a listed name is (seeded with ``seed`` where it takes one)."""
    if isinstance(method, AttributionMethod):
        return method
    if isinstance(method, str):
        return methods_by_name([method], seed)[method]
    if isinstance(method, type) and issubclass(method, AttributionMethod):
        raise InvalidInputError(
            f"methods[{name!r}] is the class {method.__name__}, not a method; give an "
            f"instance, normxlogit.get_method({method.name!r}, **options), or its name"
        )
    raise InvalidInputError(
        f"methods[{name!r}] is {type_phrase(method)}, not a method; {METHODS_USAGE}"
    )


def _refuse_surrogates(**texts: Sequence[Any]) -> None:
    """No prompt, continuation or contrast text holds a lone surrogate, refused before any
    method runs (no tokenizer encodes one; counting a continuation's steps ended in a
    TypeError)."""
    for kind, values in texts.items():
        for index, value in enumerate(values):
            if isinstance(value, str):
                refuse_surrogate(value, f"{kind}[{index}]")


def _steps(
    model: ExplainableModel, continuation: str | Sequence[int] | None, max_new_tokens: int | None
) -> int:
    """How many steps a generation will report: those it writes, or its continuation's."""
    if continuation is None:
        return DEFAULT_MAX_NEW_TOKENS if max_new_tokens is None else max_new_tokens
    if isinstance(continuation, str):
        return len(model.tokenizer(continuation, add_special_tokens=False)["input_ids"])
    return len(continuation)


def _explained_count(steps: int, explain_steps: Sequence[int] | None) -> int:
    """How many of a generation's ``steps`` steps ``explain_steps`` picks (None: all)."""
    if explain_steps is None:
        return steps
    return len({s for s in explain_steps if 0 <= s < steps})


@contextmanager
def _reporting(progress: ProgressFactory | None, name: str, units: int) -> Iterator[Report | None]:
    if progress is None:
        yield None
        return
    with progress(name, units) as report:
        yield report
