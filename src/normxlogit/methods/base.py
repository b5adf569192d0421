"""The attribution-method registry and the interface every method implements.

Methods register themselves with :func:`register_method` and describe what they can do
with class-level capability flags, so callers ask ``method.per_label`` instead of
checking types. Options are dataclass fields: unknown or invalid options are rejected with
a message that lists the accepted ones.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import Tensor

from ..common.code_identity import forget_fingerprints
from ..common.counts import integer_text
from ..common.errors import (
    InvalidInputError,
    InvalidOptionError,
    UnknownMethodError,
)
from ..common.extensions import REASON, guard_hooks, is_reason
from ..common.fields import check_one_name, check_replacing, json_problem, name_problem
from ..common.fields import shown_value as _shown
from ..common.options import convert_options
from ..common.outputs import lone_item, short_value
from ..explanations.base import RECORDED_NOT_OPTIONS
from ..model.adapter import AttentionSink, ExplainableModel, ForwardResult
from ..model.targets import Targets

LayerSpec = None | int | str


@dataclass(frozen=True)
class Layers:
    """Layers to score (0 = embeddings, L = final); ``axis`` keeps a layer axis in results."""

    indices: tuple[int, ...]
    axis: bool

    @classmethod
    def resolve(cls, layer: LayerSpec, num_layers: int) -> Layers:
        layer = lone_item(layer)  # np.array(1), np.array("all"): the value held
        if layer is None:
            return cls((num_layers,), axis=False)
        if isinstance(layer, str):
            if layer == "all":
                return cls(tuple(range(num_layers + 1)), axis=True)
            if (index := integer_text(layer)) is not None:
                layer = index
        if isinstance(layer, numbers.Integral) and not isinstance(layer, bool):
            layer = int(layer)  # NumPy's integers too: from np.arange over the layers
            index = layer + num_layers + 1 if layer < 0 else layer
            if 0 <= index <= num_layers:
                return cls((index,), axis=False)
        if isinstance(layer, int | str) and not isinstance(layer, bool):
            raise InvalidInputError(
                f"layer {short_value(layer)} does not exist; use 0 (embeddings) to "
                f"{num_layers} (last), a negative index, or 'all'"
            )
        raise InvalidInputError(
            f"layer {short_value(layer)} is no layer: give an index, 0 (embeddings) to "
            f"{num_layers} (last) or negative, or 'all'"
        )

    @property
    def is_final_only(self) -> bool:
        return not self.axis and len(self.indices) == 1

    def is_final_layer(self, num_layers: int) -> bool:
        """Only the model's final layer (``num_layers``), as the default explains."""
        return self.is_final_only and self.indices[0] == num_layers


@dataclass
class Attribution:
    """Scores ``[B, L, T, K]`` plus per-text, per-target diagnostics ``[B, K]``."""

    scores: Tensor
    diagnostics: dict[str, Tensor] = field(default_factory=dict)


@dataclass
class AttributionMethod(ABC):
    """One way of scoring tokens. Subclasses are dataclasses whose fields are options.

    ``attribute`` returns scores ``[B, len(layers), T, K]`` for the batch of ``forward``
    (padding positions included; callers drop them) and the ``K`` target columns, or an
    :class:`Attribution` that adds diagnostics ``[B, K]`` (such as a convergence delta).
    The scores are a torch tensor: anything else (a NumPy array, a list) or another shape
    is refused with a message naming the method; a tensor that still requires grad is
    detached.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    per_label: ClassVar[bool] = True  # scores change with the target
    signed: ClassVar[bool] = True  # scores can be negative
    supports_layers: ClassVar[bool] = False  # accepts layer=... other than the final one
    needs_gradients: ClassVar[bool] = False
    single_forward: ClassVar[bool] = True  # costs the one forward pass explain already runs
    #: a token's score for a target depends only on the tokens up to it (on a causal
    #: model), so one pass over a whole generation explains every step
    prefix_invariant: ClassVar[bool] = False
    #: scores are the reading position's row of token-to-token maps that
    #: :meth:`token_maps` returns for every row at once; on a causal model row ``p``
    #: depends only on tokens up to ``p``, so one pass explains every generation step
    reads_rows: ClassVar[bool] = False
    #: reads head-averaged attention weights: explain's forward pass returns them
    #: (``ForwardResult.attentions``, eager attention), so the method runs no pass of its own
    reads_attention: ClassVar[bool] = False
    #: scores depend on the token ids alone, never on the model's states (the random
    #: baseline): a generation's prefixes then need no forward pass of their own
    reads_token_ids_only: ClassVar[bool] = False
    #: why the method has no contrastive form although its scores follow the target
    #: (None: ``contrast=`` works, through :meth:`Targets.pick`)
    no_contrast: ClassVar[str | None] = None
    #: options that only say how much goes through the model at once (rows, tokens or
    #: samples per pass): speed and memory change with them, results only by float
    #: rounding, so stored results are not keyed by them (a GPU run with larger passes
    #: fills the cells a CPU run started)
    execution_options: ClassVar[frozenset[str]] = frozenset()

    @abstractmethod
    def attribute(
        self, model: ExplainableModel, forward: ForwardResult, targets: Targets, layers: Layers
    ) -> Tensor | Attribution: ...

    def __post_init__(self) -> None:
        """Options with a declared range (:func:`bounded`) are checked however the method
        is built (get_method, the class called directly, dataclasses.replace), so every
        entry point refuses them before any work; a subclass's own ``__post_init__``
        calls this one."""
        check_ranges(self)

    def attention_reader(self, layers: Layers, rows: Tensor | None = None) -> AttentionSink | None:
        """What explain's forward pass hands each block's head-averaged attention weights
        to, for a method that ``reads_attention`` (None for the others). ``rows`` ``[B,
        R]``: the positions whose rows the scores are read from, when only those matter."""
        return None

    def token_maps(self, model: ExplainableModel, forward: ForwardResult, layers: Layers) -> Tensor:
        """Maps ``[B, len(layers), T, T]`` (row: reading position, column: token) whose
        reading-position row is this method's score; only where ``reads_rows``."""
        raise NotImplementedError(f"{self.name} does not read its scores from token maps")

    def settings(self) -> dict[str, Any]:
        """Options as recorded in every explanation."""
        return dataclasses.asdict(self)

    def final_layer_settings(self, settings: dict[str, Any]) -> dict[str, Any]:
        """``settings`` as recorded for an explanation at the final layer only: a method
        whose option does not apply there records what it computed (default: as given)."""
        return settings


#: a field's metadata key holding its declared range (:func:`bounded`)
RANGE = "normxlogit_range"


@dataclass(frozen=True)
class Range:
    """The values an option may take: ``low`` and ``high`` inclusive (None: no bound),
    each with why it is the bound, for the refusal."""

    low: float | None = None
    high: float | None = None
    why_low: str = ""
    why_high: str = ""

    def problem(self, value: float) -> str | None:
        """What is wrong with ``value`` (None: it is in range)."""
        if self.low is not None and not value >= self.low:
            return f"must be at least {self.low}" + (f" ({self.why_low})" if self.why_low else "")
        if self.high is not None and not value <= self.high:
            return f"is too large: at most {self.high}" + (
                f" ({self.why_high})" if self.why_high else ""
            )
        return None


def bounded(
    default: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    why_low: str = "",
    why_high: str = "",
) -> Any:
    """A numeric option's dataclass field with its range declared beside it
    (``steps: int = bounded(50, low=1, high=10_000)``): checked whenever the method is
    built, so ``get_method``, the command line's checks and ``bench status`` refuse the
    same values before any work."""
    return field(default=default, metadata={RANGE: Range(low, high, why_low, why_high)})


def declared_range(cls: type, option: str) -> Range | None:
    """The range declared for ``option`` of method class ``cls`` (None: none declared)."""
    for found in dataclasses.fields(cls):
        if found.name == option:
            return found.metadata.get(RANGE)
    return None


def check_ranges(method: AttributionMethod) -> None:
    """Refuse an option outside its declared range, in one line naming the method, the
    option and the bound."""
    for found in dataclasses.fields(method):
        declared = found.metadata.get(RANGE)
        value = getattr(method, found.name, None)
        if declared is None or isinstance(value, bool) or not isinstance(value, numbers.Real):
            continue
        if (problem := declared.problem(value)) is not None:
            raise InvalidOptionError(
                f"method {method.name!r} option {found.name}={short_value(value)} {problem}"
            )


_METHODS: dict[str, type[AttributionMethod]] = {}


def _method_key(name: str) -> str:
    """The form every lookup turns a method name into: lower case, '-' as '_'."""
    return name.lower().replace("-", "_")


def register_method(cls: Any = None, *, replace: bool = False) -> Any:
    """Class decorator: make a method available by its ``name``.

    The name must be written as lookups find it (lower case, ``_`` not ``-``), with no
    spaces around it and no invisible characters. A name already registered (a built-in's
    included) is refused unless ``replace=True`` (``@register_method(replace=True)``).
    The class also needs a ``description`` (a non-blank string), flags that are True or
    False, an ``attribute`` of its own, and must be built with no arguments (its options
    are dataclass fields with defaults); a class without them is refused here, not when
    ``explain`` first uses it. An option may not be named like what explanations record
    beside the options, or like get_method's own parameters (:data:`RESERVED_OPTIONS`:
    ``target``, ``layer``, ``contrast``, ``name``, ``preset``...); one named like another
    keyword of ``explain`` (``batch_size``) is set on the built method
    (``get_method(name, batch_size=8)``). A numeric option may declare its range
    (:func:`bounded`), checked whenever the method is built; a class with a
    ``__post_init__`` of its own calls ``super().__post_init__()``.
    """
    if cls is None:  # @register_method(replace=True)
        return lambda given: register_method(given, replace=replace)
    if not (isinstance(cls, type) and issubclass(cls, AttributionMethod)):
        raise InvalidInputError(
            f"register_method needs a subclass of AttributionMethod, got {_shown(cls)}"
        )
    name = getattr(cls, "name", None)
    if not isinstance(name, str):
        raise InvalidInputError(
            f"register_method needs a class with a name (a string class attribute, "
            f"name = 'my_method'); {cls.__qualname__} has "
            + ("none" if name is None else f"{type(name).__name__} {name!r}")
        )
    if not name.strip():
        raise InvalidInputError(f"method {cls.__qualname__} has a blank name {name!r}")
    problem = name_problem(name)
    if problem is not None:
        raise InvalidInputError(f"method name {name!r} is {problem}")
    key = _method_key(name)
    if key != name:
        raise InvalidInputError(
            f"method name {name!r} is looked up as {key!r} (lower case, '_' for '-'); "
            f"name the method {key!r}"
        )
    _check_method_class(cls, name)
    check_replacing("method", name, cls, _METHODS.get(key), replace)
    check_one_name("method", name, cls, _METHODS)
    guard_method(cls)
    forget_fingerprints()  # its attributes may have changed since it was first registered
    _METHODS[key] = cls
    return cls


def guard_method(cls: type[AttributionMethod]) -> None:
    """Make a user's method class say a failure in its own hooks (``attribute()``,
    ``settings()``, a segment method's ``plan()``...) in one line naming the method and the
    hook (:func:`~normxlogit.common.extensions.guard_hooks`): done when it is registered,
    and by ``explain`` for an instance of a class never registered."""
    guard_hooks(cls, "method", _registered_name, _RETURNS)


def _registered_name(owner: Any) -> str:
    return str(getattr(owner, "name", type(owner).__name__))


def _is_segment_method(value: Any) -> bool:
    return isinstance(value, AttributionMethod) and getattr(value, "needs_segments", False) is True


#: what the hooks whose results explain reads return: a user's is refused in one line
#: otherwise (settings() is checked where it is read, :func:`method_settings`)
_RETURNS = {
    "for_task": (_is_segment_method, "a SegmentMethod (self, or one with other options)"),
    "excess_draws": (is_reason, f"{REASON} the draws cannot serve"),
    "unvaried_draws": (is_reason, f"{REASON} some segments never vary in the draws"),
}


def method_settings(method: AttributionMethod, *, final_layer: bool = False) -> dict[str, Any]:
    """``method.settings()``, as every explanation records it: a dict of JSON values
    (keyed by strings), checked when the explanation is made so that its ``save()``
    cannot fail after the work is done. ``final_layer``: the explanation is of the final
    layer only (:meth:`AttributionMethod.final_layer_settings` says what was computed)."""
    settings = method.settings()
    if final_layer and isinstance(settings, dict):
        settings = method.final_layer_settings(settings)
    if not isinstance(settings, dict):
        raise InvalidInputError(
            f"method {method.name!r}: settings() returned {_shown(settings)}; it returns a "
            "dict of the options recorded in every explanation"
        )
    if (problem := json_problem(settings, "settings()")) is not None:
        raise InvalidInputError(
            f"method {method.name!r}: {problem}; settings hold JSON values (str, int, "
            "float, bool, None, and lists or string-keyed dicts of them)"
        )
    return settings


#: the capability flags every method has (True or False); the page and ``normxlogit
#: methods`` show them
_FLAGS = (
    "per_label",
    "signed",
    "supports_layers",
    "needs_gradients",
    "single_forward",
    "prefix_invariant",
    "reads_rows",
    "reads_attention",
    "reads_token_ids_only",
    "needs_segments",
)


def _check_method_class(cls: type[AttributionMethod], name: str) -> None:
    """Refuse, at registration, a method class that ``normxlogit methods``, the page or
    ``explain`` could not use: no description, a flag that is no bool, an abstract method
    left unimplemented, or an ``__init__`` that needs arguments (a method is built with its
    options alone, each a dataclass field with a default)."""
    description = getattr(cls, "description", None)
    if not isinstance(description, str) or not description.strip():
        raise InvalidInputError(
            f"register_method needs a class with a description (a string class attribute, "
            f"description = 'what the scores mean'); method {name!r} has "
            + ("none" if description is None else f"{_shown(description)}")
        )
    for flag in _FLAGS:
        value = getattr(cls, flag, False)
        if not isinstance(value, bool):
            raise InvalidInputError(
                f"method {name!r}: {flag} is {_shown(value)}; it is True or False"
            )
    no_contrast = getattr(cls, "no_contrast", None)
    if no_contrast is not None and not isinstance(no_contrast, str):
        raise InvalidInputError(
            f"method {name!r}: no_contrast is {_shown(no_contrast)}; it is None or a string "
            "saying why the method has no contrastive form"
        )
    _check_option_names(cls, name)
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if missing:
        raise InvalidInputError(
            f"method {name!r} does not implement {', '.join(f'{m}()' for m in missing)}; "
            "define it in the class (attribute() returns scores [texts, layers, tokens, "
            "targets])"
        )
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):  # no signature to read: explain finds out
        return
    needed = [
        p.name
        for p in parameters
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    if needed:
        raise InvalidInputError(
            f"method {name!r} cannot be built without {', '.join(needed)}; a method is built "
            "with its options alone, so make each a dataclass field with a default "
            f"({needed[0]}: int = 1)"
        )


#: names no option may have: the settings keys an explanation writes beside the method's
#: options, and get_method's own parameters (see :data:`RECORDED_NOT_OPTIONS`)
RESERVED_OPTIONS = RECORDED_NOT_OPTIONS


def _check_option_names(cls: type[AttributionMethod], name: str) -> None:
    """Refuse an option named like a settings key an explanation writes, or like
    get_method's own parameters: its value would be lost or never set, with nothing said."""
    if not dataclasses.is_dataclass(cls):
        return
    clashing = sorted(f.name for f in dataclasses.fields(cls) if f.name in RESERVED_OPTIONS)
    if clashing:
        raise InvalidInputError(
            f"method {name!r}: option {', '.join(clashing)} is named like what explanations "
            "record beside the options or get_method's own parameters; rename it (reserved: "
            f"{', '.join(sorted(RESERVED_OPTIONS))})"
        )


def run_attribute(
    method: AttributionMethod,
    model: ExplainableModel,
    forward: ForwardResult,
    targets: Targets,
    layers: Layers,
) -> Attribution:
    """``method.attribute(...)``, its result checked (:func:`checked_result`): a user's
    registered method that returns another shape or type is refused in one line (one that
    fails in its own code is refused by its guard, :func:`guard_method`)."""
    result = method.attribute(model, forward, targets, layers)
    texts, tokens = forward.batch.input_ids.shape
    device = forward.batch.input_ids.device
    return checked_result(
        method, result, texts, len(layers.indices), tokens, targets.columns.shape[1], device=device
    )


def run_token_maps(
    method: AttributionMethod, model: ExplainableModel, forward: ForwardResult, layers: Layers
) -> Tensor:
    """``method.token_maps(...)`` ``[texts, layers, tokens, tokens]``, checked the same way."""
    result = method.token_maps(model, forward, layers)
    texts, tokens = forward.batch.input_ids.shape
    device = forward.batch.input_ids.device
    return checked_result(
        method, result, texts, len(layers.indices), tokens, tokens, "token_maps()", device
    ).scores


def checked_result(
    method: AttributionMethod,
    result: Any,
    texts: int,
    layers: int,
    tokens: int,
    columns: int,
    what: str = "attribute()",
    device: torch.device | None = None,
) -> Attribution:
    """What ``method``'s ``attribute`` returned, as an :class:`Attribution` whose scores
    are ``[texts, layers, tokens, columns]`` (``columns``: the targets, or with
    ``what="token_maps()"`` the tokens again) and hold no gradient; anything else (a
    NumPy array, a list, a shape that would be cut to fit) is refused in one line naming
    the method, what it returned and what it returns instead."""
    last = "tokens" if what == "token_maps()" else "targets"
    named = f"[texts, layers, tokens, {last}]"
    expected = (texts, layers, tokens, columns)
    scores = result.scores if isinstance(result, Attribution) else result
    if not isinstance(scores, Tensor):
        numpy = type(scores).__module__ == "numpy" and hasattr(scores, "shape")
        shown = f"a NumPy array of shape {list(scores.shape)}" if numpy else _shown(scores)
        hint = " (torch.from_numpy(scores))" if numpy else ""
        raise InvalidInputError(
            f"method {method.name!r}: {what} returned {shown}; it returns a torch tensor "
            f"{named} = {list(expected)}{hint}, or an Attribution holding one"
        )
    if tuple(scores.shape) != expected:
        wrong = [
            f"{got} {word} for {want}"
            for got, want, word in zip(
                scores.shape, expected, ("texts", "layers", "tokens", last), strict=False
            )
            if got != want
        ]
        because = f" ({', '.join(wrong)})" if scores.dim() == len(expected) else ""
        raise InvalidInputError(
            f"method {method.name!r}: {what} returned scores of shape {list(scores.shape)}; "
            f"it returns {named} = {list(expected)} here{because}: one score per token "
            "(padding included) of each text"
        )
    _check_device(method, scores, device, f"{what} returned scores")
    if scores.is_complex():
        raise InvalidInputError(
            f"method {method.name!r}: {what} returned complex scores ({scores.dtype}); "
            "scores are real numbers"
        )
    diagnostics = result.diagnostics if isinstance(result, Attribution) else {}
    if not isinstance(diagnostics, dict):
        raise InvalidInputError(
            f"method {method.name!r}: its Attribution's diagnostics are {_shown(diagnostics)}; "
            "they are a dict {name: tensor [texts, targets]}"
        )
    checked = {}
    for key, values in diagnostics.items():
        if not isinstance(key, str):
            raise InvalidInputError(
                f"method {method.name!r}: a diagnostic is named {_shown(key)}; name each "
                "diagnostic by a string, {'name': tensor [texts, targets]}"
            )
        if not (isinstance(values, Tensor) and tuple(values.shape) == (texts, columns)):
            shown = list(values.shape) if isinstance(values, Tensor) else _shown(values)
            raise InvalidInputError(
                f"method {method.name!r}: diagnostic {key!r} is {shown}; a diagnostic is "
                f"a tensor [texts, targets] = {[texts, columns]} under a string name"
            )
        _check_device(method, values, device, f"diagnostic {key!r} is")
        checked[key] = values.detach().to(device or values.device)
    # a gradient method's scores may still hold their graph: only the numbers are kept
    return Attribution(scores.detach().to(device or scores.device), checked)


def _check_device(
    method: AttributionMethod, values: Tensor, device: torch.device | None, what: str
) -> None:
    """Refuse values with no data (the ``meta`` device) or on a device that is neither the
    model's nor the CPU: reading them would fail later without the method named."""
    where = values.device
    if where.type != "meta" and (device is None or where in (device, torch.device("cpu"))):
        return
    home = (
        "the CPU" if device in (None, torch.device("cpu")) else f"{device} (the model's) or the CPU"
    )
    holds = " (a meta tensor holds no numbers)" if where.type == "meta" else ""
    raise InvalidInputError(
        f"method {method.name!r}: {what} on {where}{holds}; return them computed, on {home}"
    )


def _checked_name(name: Any) -> str:
    """``name`` if it is a string; a one-line refusal naming what to pass if not."""
    if not isinstance(name, str):
        raise InvalidInputError(
            f"a method is named by a string (one of: {', '.join(list_methods())}), "
            f"got {_shown(name)}"
        )
    return name


def list_methods() -> list[str]:
    """Names of all registered attribution methods."""
    return sorted(_METHODS)


def method_class(name: str) -> type[AttributionMethod]:
    key = _method_key(_checked_name(name))
    if key not in _METHODS:
        raise UnknownMethodError(f"unknown method {name!r}; available: {', '.join(list_methods())}")
    return _METHODS[key]


def method_options(name: str) -> list[str]:
    """The options the method ``name`` accepts (its dataclass fields)."""
    return [f.name for f in dataclasses.fields(method_class(name))]


def changed_options(method: AttributionMethod, leave_out: Sequence[str] = ()) -> list[str]:
    """``["sampler='uniform'"]``: the options of ``method`` set away from their defaults,
    spelt as get_method takes them (but those in ``leave_out``), so advice that rebuilds
    the method keeps what the user chose."""
    changed = []
    for option in dataclasses.fields(method):
        if option.default is dataclasses.MISSING or not option.init:
            continue
        value = getattr(method, option.name)
        if value != option.default and option.name not in leave_out:
            changed.append(f"{option.name}={value!r}")
    return changed


def rebuilt_fix(method: AttributionMethod, option: str) -> str:
    """``get_method('reagent', {name}={value}, keep_top_n=1)``: advice that builds
    ``method`` again with ``option`` set (``{name}`` and ``{value}`` left as format
    fields), keeping its other options that differ from their defaults (their braces
    doubled, so the whole stays a format string)."""
    kept = "".join(
        ", " + setting.replace("{", "{{").replace("}", "}}")
        for setting in changed_options(method, [option])
    )
    return f"get_method({method.name!r}, {{name}}={{value}}{kept})"


def method_execution_options(name: str) -> frozenset[str]:
    """The options of method ``name`` that change speed and memory, not results (none for
    a name no method has: a stored key of a method since removed keeps all its options)."""
    cls = _METHODS.get(_method_key(name)) if isinstance(name, str) else None
    return cls.execution_options if cls is not None else frozenset()


#: integer options that count something: they must be at least 1 whatever the method
COUNT_OPTIONS = frozenset(
    {"steps", "samples", "batch_size", "internal_batch_size", "tokens_per_pass"}
)
#: number options that must be positive
POSITIVE_OPTIONS = frozenset({"kernel_width"})


def get_method(name: str, /, preset: str | None = None, **options: Any) -> AttributionMethod:
    """An instance of the method ``name`` with ``options``, validated.

    Values are converted to the option's declared type (so text such as ``"20"`` from the
    command line becomes ``20``); a value that does not fit is refused with an
    :class:`~normxlogit.common.errors.InvalidOptionError` naming the option and its type.
    ``preset`` names a paper's settings (:mod:`normxlogit.methods.presets`, e.g.
    ``"pi-soft"``); ``options`` override them.
    """
    cls = method_class(name)
    if preset is not None:
        from .presets import preset_options

        options = {**preset_options(preset, cls.name), **options}
    accepted = method_options(name)
    unknown = sorted(set(options) - set(accepted))
    if "name" in unknown:  # a keyword, as explain(..., name=...) passes it on
        raise InvalidInputError(
            f"method {cls.name!r} has no option name: a method is chosen by its name alone "
            f"(get_method({options['name']!r}), explain's method={options['name']!r})"
        )
    if unknown:
        from ..common.outputs import quoted_name

        hint = ", ".join(accepted) if accepted else "none"
        named = ", ".join(quoted_name(str(u)) for u in unknown)  # 'st\u200beps', escaped
        raise InvalidInputError(f"method {cls.name!r} has no option {named}; its options: {hint}")
    what = f"method {cls.name!r} option"
    values = convert_options(cls, options, what)
    for key, value in values.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidOptionError(f"{what} {key}={value} must be a finite number")
        if declared_range(cls, key) is not None:
            continue  # its own minimum replaces the generic ones: one message per option
        if key in COUNT_OPTIONS and isinstance(value, int) and value < 1:
            raise InvalidOptionError(f"{what} {key}={value} must be at least 1")
        if key in POSITIVE_OPTIONS and isinstance(value, float) and not value > 0:
            raise InvalidOptionError(f"{what} {key}={value} must be greater than 0")
    return cls(**values)


def contrast_refusal(method: AttributionMethod) -> str | None:
    """Why ``method`` cannot explain a target against a contrast (None: it can)."""
    if not method.per_label:
        return (
            f"method {method.name!r} gives every target the same scores, so there is nothing "
            "to contrast; leave contrast unset, or use a method whose scores follow the target"
        )
    if method.no_contrast:
        return f"method {method.name!r} has no contrastive form: {method.no_contrast}"
    return None


def broadcast_targets(scores: Tensor, targets: Targets) -> Tensor:
    """Label-independent scores ``[B, L, T]`` repeated for every target: ``[B, L, T, K]``."""
    return scores.unsqueeze(-1).expand(-1, -1, -1, targets.columns.shape[1])


def rows_at(values: Tensor, positions: Tensor) -> Tensor:
    """Row ``positions[b]`` of ``values`` ``[B, L, T, X]`` for every layer: ``[B, L, X]``."""
    index = positions.view(-1, 1, 1, 1).expand(-1, values.shape[1], 1, values.shape[-1])
    return values.gather(2, index).squeeze(2)


def check_choice(option: str, value: str, choices: Sequence[str]) -> None:
    """Raise a clear error when an option's value is not one of ``choices``."""
    if value not in choices:
        raise InvalidInputError(f"{option}={value!r} is not one of: {', '.join(choices)}")


def refuse_repeated_names(names: Sequence[str], doing: str = "run") -> None:
    """Refuse a method named twice in a list (``doing``: what is done with each, as the
    message says it): one's results would replace the other's, with nothing said."""
    fix = (
        f"give each method once (to {doing} one method with two settings, give a dict of "
        "name -> normxlogit.get_method(name, **options))"
    )
    twice = sorted({name for name in names if list(names).count(name) > 1})
    if twice:
        raise InvalidInputError(
            f"methods names {', '.join(map(repr, twice))} more than once; {fix}"
        )
    spellings: dict[str, list[str]] = {}
    for name in names:  # lookups read "Random" and "random" alike
        spellings.setdefault(_method_key(name) if isinstance(name, str) else name, []).append(name)
    for spelled in spellings.values():
        if len(spelled) > 1:
            raise InvalidInputError(
                f"methods names one method twice ({' and '.join(map(repr, spelled))}: names "
                f"are read in lower case, '-' as '_'); {fix}"
            )
