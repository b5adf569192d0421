"""Sanity checks for attribution methods (Adebayo et al., 2018; Quantus's randomisation
family).

An explanation that hardly changes when the model's weights are re-initialised, or when
the model was trained on shuffled labels, does not explain what the model learnt. Each
check explains the same texts with the trained model and with a changed one and
measures how similar the two explanations are, per text:

- ``spearman``: the rank correlation of the two score vectors (signed scores, special
  tokens left out); with ``absolute=True`` of their magnitudes, as Adebayo et al. also
  report, and with ``tokens="all"`` over the special tokens too;
- ``top_k``: the share of the trained explanation's ``k`` top tokens that the changed one
  also ranks in its top ``k``.

What is randomised, how, and over which tokens is compared is a
:class:`~normxlogit.sanity.definition.SanityDefinition`: the project's by default,
``preset="quantus-mprt"`` for Quantus 0.6.0's MPRT (see that module).

**Model parameter randomisation.** ``cascading``: the head, then each block from the
last to the first, then the embeddings are re-initialised one after another, keeping
the earlier ones random (step ``i`` has the top ``i + 1`` groups random);
``independent``: each group alone. A method passes where similarity falls as more of
the model is random; a method whose explanations stay the same (high similarity at every
depth) fails the check.

**Data randomisation.** The same texts explained by a model trained on the true labels and
by the same recipe trained on shuffled labels (``normxlogit train minilm-sst2-shuffled``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..common.errors import InvalidInputError
from ..common.targets import as_target
from ..explanations.explanation import Explanation
from ..metrics import spearman, top_k_overlap
from ..model.adapter import ExplainableModel
from ..model.inputs import TextInput
from .definition import SanityDefinition, sanity_definition
from .groups import ParameterGroup, randomization_steps, randomized

MODES = ("cascading", "independent")
#: the reference row of every method: nothing randomised (similarity 1 by definition)
TRAINED = "trained"


@dataclass
class SanityResult:
    """Similarity of each method's explanations to the trained model's, one row per text
    and randomisation step: ``method``, ``mode``, ``step`` (0 = the first group
    randomised), ``randomized`` (the group's name), ``instance``, ``spearman``, ``top_k``."""

    frame: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> pd.DataFrame:
        """Mean similarity per method and step (rows: method, mode, step, randomized)."""
        keys = ["method", "mode", "step", "randomized"]
        return self.frame.groupby(keys, sort=False)[["spearman", "top_k"]].mean().reset_index()

    def averages(self) -> pd.DataFrame:
        """Per method, mode and text, the mean Spearman correlation over the steps
        (``mean_spearman``), and what Quantus 0.6.0's ``return_average_correlation``
        returns (``quantus_mean_spearman``): it also counts the unrandomised model's
        similarity to itself (1) as a step, since it skips a key ``"orig"`` while the key
        is ``"original"``. Step by step both definitions agree; only this mean differs."""
        keys = ["method", "mode", "instance"]
        grouped = self.frame.groupby(keys, sort=False)["spearman"]
        frame = grouped.mean().rename("mean_spearman").to_frame()
        frame["quantus_mean_spearman"] = grouped.agg(_quantus_mean)
        return frame.reset_index()

    def verdicts(self, threshold: float = 0.5) -> pd.DataFrame:
        """Whether each method passes: its mean Spearman correlation once the whole model
        is random (cascading's last step; the mean over groups for independent) falls
        below ``threshold``."""
        rows = []
        for (method, mode), group in self.summary().groupby(["method", "mode"], sort=False):
            values = group["spearman"]
            final = values.iloc[-1] if mode == "cascading" else values.mean()
            rows.append(
                {
                    "method": method,
                    "mode": mode,
                    "final_spearman": final,
                    "passes": bool(final < threshold),
                }
            )
        return pd.DataFrame.from_records(rows)

    def save(self, path: str | Path) -> None:
        from ..common.outputs import write_atomically

        write_atomically(Path(path), self.frame.to_csv(index=False))

    def plot(self, path: str | Path, metric: str = "spearman") -> Path:
        from .plot import plot_sanity

        return plot_sanity(self, Path(path), metric)


def _quantus_mean(values: pd.Series) -> float:
    """Quantus 0.6.0's mean over the steps: the unrandomised entry (1) counted as one, a
    missing value making the mean missing (``np.mean``)."""
    return float((1.0 + values.sum(skipna=False)) / (len(values) + 1))


def parameter_randomization(
    model: ExplainableModel,
    texts: Sequence[TextInput],
    methods: Sequence[str] | Mapping[str, Any] = ("normxlogit", "random"),
    *,
    mode: str = "cascading",
    preset: str | None = None,
    units: str | None = None,
    init: str | None = None,
    tokens: str | None = None,
    absolute: bool | None = None,
    target: Any = None,
    top_k: int = 5,
    seed: int = 0,
    batch_size: int = 16,
    progress: Callable[[str], None] | None = None,
) -> SanityResult:
    """Explain ``texts`` with the trained model, then after each randomisation step, and
    compare (see the module docstring). ``target``: what is explained (None: the trained
    model's prediction, kept fixed for the randomised models, as Adebayo et al. do).
    ``preset`` (``"quantus-mprt"``) and ``units``, ``init``, ``tokens``, ``absolute``
    (None: the preset's) choose the definition (:mod:`normxlogit.sanity.definition`)."""
    from ..workflows import methods_by_name

    if mode not in MODES:
        raise InvalidInputError(f"mode={mode!r} is not one of: {', '.join(MODES)}")
    if top_k < 1:
        raise InvalidInputError(f"top_k must be at least 1, got {top_k}")
    definition = sanity_definition(preset, units=units, init=init, tokens=tokens, absolute=absolute)
    built = _methods(methods, seed, methods_by_name)
    steps = randomization_steps(model, mode, definition.units)
    trained = {
        name: _explain(model, texts, method, target, batch_size) for name, method in built.items()
    }
    # the trained model's target stays the target once its weights are random
    fixed = _targets_of(next(iter(trained.values())))
    rows = []
    for step, randomised in enumerate(steps):
        if progress is not None:
            progress(f"{mode} {step + 1}/{len(steps)}: {randomised[-1].name} random")
        with randomized(model, randomised, seed, definition.init):
            for name, method in built.items():
                changed = _explain_each(model, texts, method, fixed, batch_size)
                rows += _similarities(
                    trained[name], changed, name, mode, step, randomised[-1], top_k, definition
                )
    frame = pd.DataFrame.from_records(rows)
    settings = {"mode": mode, "preset": preset, **definition.to_dict()}
    settings |= {"top_k": top_k, "seed": seed, "groups": [step[-1].name for step in steps]}
    return SanityResult(frame, settings)


def data_randomization(
    model: ExplainableModel,
    shuffled: ExplainableModel,
    texts: Sequence[TextInput],
    methods: Sequence[str] | Mapping[str, Any] = ("normxlogit", "random"),
    *,
    preset: str | None = None,
    tokens: str | None = None,
    absolute: bool | None = None,
    target: Any = None,
    top_k: int = 5,
    seed: int = 0,
    batch_size: int = 16,
) -> SanityResult:
    """Explanations of ``model`` against those of ``shuffled`` (the same recipe trained on
    shuffled labels), for the trained model's prediction (or ``target``); ``preset``,
    ``tokens`` and ``absolute`` choose the similarity as in
    :func:`parameter_randomization` (nothing is randomised here)."""
    from ..workflows import methods_by_name

    definition = sanity_definition(preset, tokens=tokens, absolute=absolute)

    if shuffled.tokenizer.get_vocab() != model.tokenizer.get_vocab():
        raise InvalidInputError(
            "the two models read different tokens; data randomisation compares one "
            "architecture trained on true and on shuffled labels"
        )
    built = _methods(methods, seed, methods_by_name)
    rows = []
    for name, method in built.items():
        trained = _explain(model, texts, method, target, batch_size)
        fixed = _targets_of(trained)
        changed = _explain_each(shuffled, texts, method, fixed, batch_size)
        step = ParameterGroup("shuffled labels", ())
        rows += _similarities(trained, changed, name, "data", 0, step, top_k, definition)
    settings = {"mode": "data", "preset": preset, "tokens": definition.tokens}
    settings |= {"absolute": definition.absolute, "top_k": top_k, "seed": seed}
    return SanityResult(pd.DataFrame.from_records(rows), settings)


def _targets_of(explanations: list[Explanation]) -> list[Any]:
    """Each explanation's target(s), to explain the changed model for the same outputs."""
    return [as_target(e.targets) for e in explanations]


def _methods(methods, seed: int, build) -> dict[str, Any]:
    if isinstance(methods, Mapping):
        return {str(name): method for name, method in methods.items()}
    if isinstance(methods, str) or not methods:
        raise InvalidInputError("methods: give a list of method names (or a name -> method dict)")
    return build(list(methods), seed)


def _explain(model, texts, method, target, batch_size) -> list[Explanation]:
    made = model.explain(list(texts), method, target, batch_size=batch_size)
    return list(made)


def _explain_each(model, texts, method, targets, batch_size) -> list[Explanation]:
    from ..explaining.texts import explain_each

    return explain_each(model, list(texts), targets, method, batch_size=batch_size)


def _similarities(
    trained: list[Explanation],
    changed: list[Explanation],
    method: str,
    mode: str,
    step: int,
    group: ParameterGroup,
    top_k: int,
    definition: SanityDefinition,
) -> list[dict]:
    rows = []
    for instance, (before, after) in enumerate(zip(trained, changed, strict=True)):
        rank, overlap = similarity(before, after, top_k, definition.absolute, definition.tokens)
        rows.append(
            {
                "method": method,
                "mode": mode,
                "step": step,
                "randomized": group.name,
                "instance": instance,
                "spearman": rank,
                "top_k": overlap,
            }
        )
    return rows


def similarity(
    before: Explanation,
    after: Explanation,
    top_k: int,
    absolute: bool = False,
    tokens: str = "content",
) -> tuple[float, float]:
    """Spearman's correlation and the top-k overlap of two explanations of one text, over
    the non-special tokens (``tokens="all"``: every token, as Quantus compares)."""
    a, b = _scores(before, absolute, tokens), _scores(after, absolute, tokens)
    return (spearman(a, b) if len(a) > 1 else float("nan")), top_k_overlap(a, b, top_k)


def _scores(explanation: Explanation, absolute: bool, tokens: str = "content") -> np.ndarray:
    """The first target's final-layer scores over the tokens compared. (Quantus divides
    them by their largest magnitude first: no rank, so no similarity, changes.)"""
    scores = explanation.scores_3d()[-1, :, 0]
    if explanation.special and tokens == "content":
        scores = scores[~np.asarray(explanation.special, dtype=bool)]
    return np.abs(scores) if absolute else scores
