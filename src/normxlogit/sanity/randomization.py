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
by the same recipe trained on shuffled labels (``normxlogit train minilm-sst2
--shuffle-labels -o ./minilm-sst2-shuffled``).

With several targets (``target="all"``, a list) every target's scores are compared, one
row per text and target. Spearman's correlation is undefined for a text with fewer than
two tokens compared (a one-token text) or with scores all equal: such a similarity is NaN,
left out of the means, and a method with no defined value is not judged (``passes`` is
None: n/a), with a warning that says how many texts were left out and why.
"""

from __future__ import annotations

import math
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..common.counts import whole_number
from ..common.errors import InvalidInputError, NormXLogitWarning, OutputPathError
from ..common.fields import name_problem
from ..common.options import MAX_INTEGER
from ..common.outputs import checked_choice, lone_item, short_value, type_phrase
from ..common.saved_kinds import SANITY_KIND, SANITY_LOADER, other_loader_hint, table_refusal
from ..explanations.explanation import Explanation
from ..metrics import spearman, top_k_overlap
from ..model.adapter import ExplainableModel, check_model
from ..model.inputs import TextInput, check_texts
from ..model.targets import recorded_target
from .definition import SanityDefinition, sanity_definition
from .groups import ParameterGroup, randomization_steps, randomized

MODES = ("cascading", "independent")
#: the mode of data randomisation's rows
DATA = "data"
#: the reference row of every method: nothing randomised (similarity 1 by definition)
TRAINED = "trained"
#: what a result's frame holds (``target`` too, where there are targets)
FRAME_COLUMNS = ("method", "mode", "step", "randomized", "instance", "spearman", "top_k")
#: the formats :meth:`SanityResult.save` writes, by the file's suffix
SAVE_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".json": "json"}
#: what a saved JSON result says it is (a file of another kind is refused by name)
JSON_KIND = SANITY_KIND
#: why a Spearman correlation can be NaN
UNDEFINED = (
    "a rank correlation is undefined for a text with fewer than two tokens compared "
    "(a one-token text) or with scores all equal"
)


#: the rows' flag, dropped from the frame, for a comparison whose scores were not numbers
NONFINITE_KEY = "_nonfinite"
#: why both similarities are NaN where the method's own scores are not numbers (not the
#: one-token reason: those texts have tokens enough)
NONFINITE = (
    "the method's scores were NaN or infinite (on the trained or the randomised model), "
    "so there is no ranking to compare"
)


def top_k_undefined(k: Any) -> str:
    """Why a top-``k`` overlap is n/a (NaN): the warning of :func:`parameter_randomization`
    and of the ``sanity_top_k`` metric, the verdicts' note and the figure's."""
    k = short_value(lone_item(k))  # a k of thousands of digits cannot be printed whole
    return (
        f"the top-{k} overlap is undefined for a text of {k} tokens compared or fewer, which "
        "any two explanations share whole"
    )


@dataclass
class SanityResult:
    """Similarity of each method's explanations to the trained model's, one row per text,
    target and randomisation step: ``method``, ``mode``, ``step`` (0 = the first group
    randomised), ``randomized`` (the group's name), ``instance``, ``target`` (the output
    explained), ``spearman`` (NaN where undefined: see the module), ``top_k``."""

    frame: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """A frame read back from a saved file (and perhaps edited) must still hold the
        columns the summaries read, with numbers where similarities are."""
        if not isinstance(self.frame, pd.DataFrame):
            raise InvalidInputError(
                f"SanityResult's frame is {type_phrase(self.frame)}; give a pandas "
                "DataFrame, e.g. pd.read_csv('sanity.csv')"
            )
        missing = [c for c in FRAME_COLUMNS if c not in self.frame.columns]
        if missing:
            raise InvalidInputError(
                f"SanityResult's frame has no {', '.join(missing)} column; give the frame "
                "parameter_randomization or data_randomization made (or the file "
                "SanityResult.save wrote), with columns " + ", ".join(FRAME_COLUMNS)
            )
        if self.frame.empty:  # every summary and verdict would have nothing to read
            raise InvalidInputError(
                "SanityResult's frame has no rows; give the frame parameter_randomization or "
                "data_randomization made (or the file SanityResult.save wrote) with its rows"
            )
        for column in NUMBER_COLUMNS:
            if (kind := _not_number_kind(self.frame[column])) is not None:
                why = (
                    "a step is a whole number from 0 (the randomisation step)"
                    if column == "step"
                    else "an instance is a text's index, from 0"
                    if column == "instance"
                    else "a similarity is a number, with an empty cell (NaN) where it is n/a"
                )
                raise InvalidInputError(
                    f"SanityResult's {column} column holds {kind}, but {why}; correct the "
                    "file or run the check again"
                )
        self._refuse_past_float()
        for column in ("spearman", "top_k"):
            values = self.frame[column]
            if not pd.api.types.is_numeric_dtype(values):
                try:
                    values = pd.to_numeric(values)
                except (TypeError, ValueError):
                    raise InvalidInputError(
                        f"SanityResult's {column} column holds {_first_text(values)!r}; it "
                        "holds numbers, with an empty cell (NaN) where a similarity is n/a"
                    ) from None
                self.frame = self.frame.assign(**{column: values})
        self._check_values()
        self.frame = self.frame.assign(step=pd.to_numeric(self.frame["step"]).astype(int))
        self._check_steps()

    def _refuse_past_float(self) -> None:
        """Refuse, naming the first such row, a whole number past float64's range in a
        number column (10**400 in a JSON row, or its digits in a CSV cell): pandas cannot
        read it as a number (an OverflowError), and no check makes one."""
        for column in NUMBER_COLUMNS:
            values = self.frame[column]
            if not pd.api.types.is_object_dtype(values.dtype):
                continue
            wrong = values.map(_past_float).astype(bool)
            if wrong.any():
                row = int(np.flatnonzero(wrong.to_numpy())[0])
                raise InvalidInputError(
                    f"SanityResult's frame, row {row} (line {row + 2} of its CSV): {column} is "
                    f"{_long_number(values.iloc[row])}, but {_NUMBER_WHY[column]}; correct the "
                    "file or run the check again"
                )

    def _check_steps(self) -> None:
        """Every method holds every randomisation step: where the settings name the
        randomised groups (a result made here, or read from its JSON), one step per group;
        else (a ``.csv`` or ``.parquet``: the rows alone) the steps the other methods of
        its mode hold, since one check randomises the same groups for every method. A frame
        cut short would get its verdict from an earlier step, with the model only partly
        random."""
        groups = self.settings.get("groups")
        named = isinstance(groups, list) and bool(groups)
        stepped = self.frame[self.frame["mode"] != DATA]
        held = stepped.groupby("mode", sort=False)["step"].agg(lambda steps: set(steps))
        for (method, mode), rows in stepped.groupby(["method", "mode"], sort=False):
            expected = set(range(len(groups))) if named else held[mode]
            own = set(rows["step"].tolist())
            if own == expected:
                continue
            missing = sorted(expected - own)
            said = (
                f"lacks step(s) {', '.join(map(str, missing))}"
                if missing
                else f"holds step(s) {', '.join(map(str, sorted(own - expected)))} past them"
            )
            reference = (
                f"whose settings name {len(groups)} randomised groups (steps 0 to "
                f"{len(groups) - 1})"
                if named
                else f"which other {mode} methods of the frame hold (steps "
                f"{', '.join(map(str, sorted(expected)))})"
            )
            raise InvalidInputError(
                f"SanityResult's frame {said} of method {method!r} ({mode}), {reference}; "
                "a frame cut short would be judged at the wrong step: run the check again"
            )

    def _check_values(self) -> None:
        """Refuse what no check makes, naming the first such row: an edited file's
        similarity out of its range would be reported as is; a blank method, mode, step or
        randomized group would drop its rows from every summary without a word, and a step
        that is not a whole number would be shown as is and misorder the steps; a method
        or group named with spaces around it or an invisible character would be summarised
        apart from the one it looks the same as."""
        frame, slack = self.frame, 1e-6  # a correlation may pass 1 by rounding
        modes = (*MODES, DATA)
        steps = pd.to_numeric(frame["step"], errors="coerce")
        instances = pd.to_numeric(frame["instance"], errors="coerce")
        checks = [
            (frame["method"], _blank(frame["method"]), "each row names its method"),
            (frame["mode"], ~frame["mode"].isin(modes), f"the mode is one of {', '.join(modes)}"),
            (
                frame["step"],
                _not_index(steps),
                "a step is a whole number from 0 (the randomisation step)",
            ),
            (frame["instance"], _not_index(instances), "an instance is a text's index, from 0"),
            (
                frame["randomized"],
                _blank(frame["randomized"]),
                "each row names the group randomised at its step",
            ),
            (
                frame["spearman"],
                frame["spearman"].abs() > 1 + slack,
                "a Spearman correlation lies in [-1, 1]",
            ),
            (
                frame["top_k"],
                frame["top_k"].notna() & ~frame["top_k"].between(-slack, 1 + slack),
                "top_k, the share of top tokens kept, lies in [0, 1]",
            ),
        ]
        for values, wrong, why in checks:
            if wrong.any():
                row = int(np.flatnonzero(wrong.to_numpy())[0])
                value = values.iloc[row]
                value = value.item() if isinstance(value, np.generic) else value
                blank = _blank(values.iloc[[row]]).iloc[0]
                shown = "blank" if blank else repr(value)
                # pandas reads a method named None, NA, null or nan as missing
                hint = (
                    " (read with pd.read_csv, a name such as 'None', 'NA' or 'nan' becomes "
                    "blank: read it with pd.read_csv(path, keep_default_na=False, na_values=['']))"
                    if blank and values.name in ("method", "randomized")
                    else ""
                )
                raise InvalidInputError(
                    f"SanityResult's frame, row {row} (line {row + 2} of its CSV): "
                    f"{values.name} is {shown}, but {why}; correct the file or run the check "
                    f"again{hint}"
                )
        for column in ("method", "randomized"):  # ' g ' or 'g\u200b' beside 'g': two rows
            for name in frame[column].unique():
                if not isinstance(name, str) or (problem := name_problem(name)) is None:
                    continue
                row = int(np.flatnonzero((frame[column] == name).to_numpy())[0])
                raise InvalidInputError(
                    f"SanityResult's frame, row {row} (line {row + 2} of its CSV): {column} is "
                    f"{name!r}, {problem}; otherwise the summary shows it as a second row "
                    "that looks the same"
                )
        keys = [k for k in ("method", "mode", "step", "instance", "target") if k in frame]
        repeated = frame.duplicated(keys)
        if repeated.any():  # every mean would count that text twice, with no word why
            row = int(np.flatnonzero(repeated.to_numpy())[0])
            groups = frame.groupby(keys, dropna=False, sort=False).ngroup().to_numpy()
            first = int(np.flatnonzero(groups == groups[row])[0])
            raise InvalidInputError(
                f"SanityResult's frame, row {row} (line {row + 2} of its CSV) repeats row "
                f"{first} (the same {', '.join(keys)}); remove one, or every mean counts "
                "that text twice"
            )

    def summary(self) -> pd.DataFrame:
        """Mean similarity per method and step (rows: method, mode, step, randomized)."""
        keys = ["method", "mode", "step", "randomized"]
        return self.frame.groupby(keys, sort=False)[["spearman", "top_k"]].mean().reset_index()

    def averages(self) -> pd.DataFrame:
        """Per method, mode and text (and target), the mean Spearman correlation over the steps
        (``mean_spearman``), and what Quantus 0.6.0's ``return_average_correlation``
        returns (``quantus_mean_spearman``): it also counts the unrandomised model's
        similarity to itself (1) as a step, since it skips a key ``"orig"`` while the key
        is ``"original"``. Step by step both definitions agree; only this mean differs."""
        keys = ["method", "mode", "instance", *(["target"] if "target" in self.frame else [])]
        grouped = self.frame.groupby(keys, sort=False)["spearman"]
        frame = grouped.mean().rename("mean_spearman").to_frame()
        frame["quantus_mean_spearman"] = grouped.agg(_quantus_mean)
        return frame.reset_index()

    def verdicts(self, threshold: float = 0.5) -> pd.DataFrame:
        """Whether each method passes: its mean Spearman correlation once the whole model
        is random (cascading's last step; the mean over groups for independent) falls
        below ``threshold`` (a number from -1 to 1).

        ``texts``: how many texts that mean is over (text x target pairs where a text has
        several targets, as ``note`` says); those whose correlation is undefined (NaN: a
        one-token text, scores all equal) are left out.
        Where none is defined, ``final_spearman`` is NaN and ``passes`` is None (n/a, not
        a failure); ``note`` says why."""
        threshold = check_threshold(threshold)
        rows = []
        for (method, mode), group in self.frame.groupby(["method", "mode"], sort=False):
            if mode == "cascading":
                used = group[group["step"] == group["step"].max()]
                final = used["spearman"].mean()
            else:
                used = group
                final = used.groupby("step", sort=False)["spearman"].mean().mean()
            keys = [k for k in ("instance", "target") if k in used]
            defined = used[used["spearman"].notna()].drop_duplicates(keys)
            total = len(used.drop_duplicates(keys))
            computable = not math.isnan(final)
            why = NONFINITE if method in self.settings.get("nonfinite", ()) else UNDEFINED
            notes = []
            if not computable:
                notes.append(f"not computable for any text: {why}")
            elif len(defined) < total:
                left = total - len(defined)
                notes.append(f"{left} of {total} {_counted(used)} left out: {why}")
            if (top_k := self._top_k_note(used, keys, total, method)) is not None:
                notes.append(top_k)
            rows.append(
                {
                    "method": method,
                    "mode": mode,
                    "final_spearman": final,
                    "passes": bool(final < threshold) if computable else None,
                    "texts": len(defined),
                    "note": "; ".join(notes),
                }
            )
        frame = pd.DataFrame.from_records(rows)
        frame["passes"] = frame["passes"].astype(object)  # True, False or None (n/a)
        return frame

    def _top_k_note(
        self, used: pd.DataFrame, keys: list[str], total: int, method: str
    ) -> str | None:
        """Where the verdict's rows leave the top-k overlap n/a, for how many texts and why
        (None: defined for every text)."""
        undefined = used[used["top_k"].isna()].drop_duplicates(keys)
        if undefined.empty:
            return None
        k = self.settings.get("top_k", "k")
        why = NONFINITE if method in self.settings.get("nonfinite", ()) else top_k_undefined(k)
        return f"top_k n/a for {len(undefined)} of {total} {_counted(used)}: {why}"

    def save(self, path: str | Path) -> Path:
        """Write the result: ``.json`` keeps the rows and the settings (the groups, top_k,
        seed: :meth:`load` reads them back whole), ``.csv`` (text) and ``.parquet`` (needs
        pyarrow) the rows alone; another suffix is refused (see :func:`save_format`)."""
        from ..common.outputs import refuse_folder_slash

        refuse_folder_slash(path, "path", "sanity.csv")  # before Path drops the slash
        target = Path(path)
        fmt = save_format(target)
        if fmt == "json":
            from ..common.outputs import json_text, write_atomically
            from ..evaluation.result import plain_json

            rows = self.frame.astype(object).where(self.frame.notna(), None)
            record = {"kind": JSON_KIND, "settings": self.settings}
            record["rows"] = rows.to_dict(orient="records")
            return write_atomically(target, json_text(record, default=plain_json))
        if fmt == "parquet":
            check_parquet()
            from ..common.outputs import writing

            # the checks and words of every other save (a link loop, a file as the folder)
            with writing(path, "sanity.parquet") as temporary:
                self.frame.to_parquet(temporary, index=False)
            return target
        from ..common.outputs import write_atomically

        return write_atomically(target, self.frame.to_csv(index=False))

    @classmethod
    def load(cls, path: str | Path) -> SanityResult:
        """Read a result :meth:`save` wrote: a ``.json`` whole (rows and settings, so the
        notes name the real top-k and a file cut short is refused), a ``.csv`` or
        ``.parquet`` as its rows alone (read with names such as ``NA`` kept as text)."""
        from ..common.errors import InvalidFileError
        from ..common.input_paths import check_saved_file, given_path

        path = given_path(path)  # None, a number or bytes: refused in one line
        check_saved_file(
            path, "a saved sanity result", "pass the path of a file SanityResult.save wrote"
        )
        # another writer's table or page (its columns differ; a summary's .md): named
        # before the suffix, which renaming would not fix
        if (refusal := table_refusal(path, SANITY_LOADER)) is not None:
            raise InvalidFileError(refusal)
        fmt = SAVE_SUFFIXES.get(path.suffix.lower())
        if fmt is None:  # an input: refused as one, not as a name to write
            from ..common.input_paths import blank_edge_hint
            from ..common.outputs import quoted_name, suffix_tail_hint

            said = f"the suffix {path.suffix!r}" if path.suffix else "no suffix"
            # "s.json ": the blank after the suffix named (and the file without it)
            hint = blank_edge_hint(path) or suffix_tail_hint(path, tuple(SAVE_SUFFIXES))
            raise InvalidFileError(
                f"{quoted_name(path)} has {said}; SanityResult.load reads .csv, .parquet or "
                f".json (what SanityResult.save writes){hint}"
            )
        if fmt != "parquet":  # a .png figure (what --plot writes) under a .json name
            from ..common.input_paths import refuse_binary_file

            refuse_binary_file(
                path, "a saved sanity result", "pass the path of a file SanityResult.save wrote"
            )
        try:
            if fmt == "csv":
                frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
                _refuse_data_table(path, frame)
                return cls(frame)
            if fmt == "parquet":
                check_parquet()
                frame = pd.read_parquet(path)
                _refuse_data_table(path, frame)  # a data table, named as the CSV one is
                return cls(frame)
            frame, settings = _json_result(path)
            return cls(frame, settings)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
            raise InvalidFileError(
                f"{path} is not a saved sanity result: {str(error).splitlines()[0]}"
            ) from None
        except InvalidFileError:
            raise
        except InvalidInputError as error:  # rows no check makes: named with the file
            raise InvalidFileError(f"{path}: {_placed(str(error), fmt)}") from None
        except (OSError, ValueError) as error:  # pyarrow's and the file system's
            raise InvalidFileError(f"cannot read {path} as a sanity result: {error}") from None

    def plot(self, path: str | Path, metric: str = "spearman") -> Path:
        """The similarity-by-depth figure, written to ``path`` (a ``.png``)."""
        from ..common.outputs import refuse_folder_slash
        from .plot import plot_sanity

        refuse_folder_slash(path, "path", "sanity.png")  # before Path drops the slash
        return plot_sanity(self, Path(path), metric)


#: where the frame check places a row: its line in a CSV file
_CSV_PLACE = re.compile(r"SanityResult's frame, row (\d+) \(line \d+ of its CSV\)")


def _placed(message: str, fmt: str) -> str:
    """The frame check's message with the row placed as the file's format places it: a
    CSV line, ``rows[N]`` of a JSON file, row N of a Parquet file (which has no lines)."""
    if fmt == "json":
        return _CSV_PLACE.sub(r"rows[\1]", message)
    if fmt == "parquet":
        return _CSV_PLACE.sub(r"row \1", message)
    return message


def _json_result(path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The rows and settings of a saved JSON result, each refused in one line if it is
    not what :meth:`SanityResult.save` writes."""
    import json

    from ..common.errors import InvalidFileError
    from ..common.input_paths import decode_utf8, reencode_hint

    def refuse(problem: str) -> InvalidFileError:
        return InvalidFileError(f"{path} is not a saved sanity result: {problem}")

    text = decode_utf8(path.read_bytes(), str(path), reencode_hint(path))
    try:
        data = json.loads(text, parse_int=whole_number)
    except json.JSONDecodeError as error:
        raise refuse(f"invalid JSON at line {error.lineno}, column {error.colno}") from None
    if not isinstance(data, dict) or data.get("kind") != JSON_KIND:
        hint = other_loader_hint(data, SANITY_LOADER)
        raise refuse(f'it does not say it is one ("kind": {JSON_KIND!r}){hint}')
    settings, rows = data.get("settings"), data.get("rows")
    if not isinstance(settings, dict):
        raise refuse("'settings' must be an object")
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise refuse("'rows' must be a list of objects, one per row")
    if (problem := _json_rows_problem(rows)) is not None:
        raise refuse(problem)
    if (problem := _settings_problem(settings)) is not None:
        raise refuse(problem)
    if not rows:  # refused as "no rows", as a CSV holding only its header is
        return pd.DataFrame(columns=list(FRAME_COLUMNS)), settings
    return pd.DataFrame.from_records(rows), settings


def _json_rows_problem(rows: list[dict]) -> str | None:
    """The first row whose similarity is no JSON number (``true`` would be read as 1,
    ``"0.9"`` as 0.9), or whose step or instance is no whole number; None: all are."""
    for number, row in enumerate(rows):
        for key in ("spearman", "top_k"):
            value = row.get(key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                return f"rows[{number}]: {key!r} must be a number or null, not {value!r:.40}"
        for key in ("step", "instance"):
            value = row.get(key)
            if key in row and (isinstance(value, bool) or not isinstance(value, int)):
                return f"rows[{number}]: {key!r} must be a whole number from 0, not {value!r:.40}"
    return None


def _settings_problem(settings: dict[str, Any]) -> str | None:
    """The first setting that does not have the type :meth:`SanityResult.save` writes (a
    note reading "the top--5 overlap" from ``top_k: -5``); None: each has. A setting left
    out is not refused (the summaries read none of them but ``top_k``, ``groups`` and
    ``nonfinite``, with defaults)."""
    from ..evaluation.protocol import SANITY_INITS, SANITY_TOKENS, SANITY_UNITS
    from .definition import PRESETS

    checks: dict[str, tuple[Callable[[Any], bool], str]] = {
        "mode": (lambda v: v in (*MODES, DATA), f"one of {', '.join((*MODES, DATA))}"),
        "preset": (lambda v: v is None or v in PRESETS, f"null or one of {', '.join(PRESETS)}"),
        "units": (lambda v: v in SANITY_UNITS, f"one of {', '.join(SANITY_UNITS)}"),
        "init": (lambda v: v in SANITY_INITS, f"one of {', '.join(SANITY_INITS)}"),
        "tokens": (lambda v: v in SANITY_TOKENS, f"one of {', '.join(SANITY_TOKENS)}"),
        "absolute": (lambda v: isinstance(v, bool), "true or false"),
        "top_k": (lambda v: _whole(v) and v >= 1, "a whole number of at least 1"),
        "seed": (_whole, "a whole number"),
        "groups": (_names, "a list of the randomised groups' names"),
        "methods": (_options_by_name, "an object of method name -> its options"),
        "nonfinite": (_names, "a list of method names"),
    }
    for key, (fits, what) in checks.items():
        if key in settings and not _safe(fits, settings[key]):
            return f"settings.{key} is {settings[key]!r:.40}, not {what}"
    return None


def _safe(fits: Callable[[Any], bool], value: Any) -> bool:
    """``fits(value)``, False where the test cannot read the value (a list is unhashable)."""
    try:
        return bool(fits(value))
    except TypeError:
        return False


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)


def _options_by_name(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())


def check_threshold(threshold: Any) -> float:
    """``threshold`` as a float, if it is a number from -1 to 1 (a Spearman correlation)."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.number)):
        raise InvalidInputError(
            f"threshold={threshold!r} is {type_phrase(threshold)}; give a number from "
            "-1 to 1 (a Spearman correlation; 0.5 by default)"
        )
    value = float(threshold)
    if not -1.0 <= value <= 1.0:  # NaN too
        raise InvalidInputError(
            f"threshold={threshold!r} is not a number from -1 to 1; a method passes where "
            "its Spearman correlation falls below it (0.5 by default)"
        )
    return value


def save_format(path: Path, flag: str = "") -> str:
    """The format :meth:`SanityResult.save` writes ``path`` in, from its suffix (``.csv``
    or ``.parquet``); another suffix is refused, never guessed. ``flag`` leads the
    message (the command line's ``--output``)."""
    from ..common.outputs import quoted_name, refuse_blank_edges, refuse_suffix_only

    refuse_blank_edges(path, flag)  # "r.csv ": the blank named, not the format asked for
    refuse_suffix_only(path, flag, SAVE_SUFFIXES)
    suffix = path.suffix.lower()
    if suffix in SAVE_SUFFIXES:
        return SAVE_SUFFIXES[suffix]
    said = f"the suffix {suffix!r}" if suffix else "a name without a suffix"
    lead = f"{flag} {quoted_name(path)}" if flag else quoted_name(path)
    raise OutputPathError(
        f"{lead}: cannot tell the format from {said}; end the name in .csv, .parquet or .json"
    )


def check_parquet() -> None:
    """Refuse Parquet where pyarrow is missing, naming the extra."""
    import importlib.util

    if importlib.util.find_spec("pyarrow") is None:
        raise InvalidInputError(
            "Parquet is written with pyarrow: pip install 'normxlogit[bench]', or save as .csv"
        )


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
    from ..workflows import methods_by_name, refuse_missing_tagger

    check_model(model, "parameter_randomization")
    # 0-d arrays (np.array("independent")) read as the value they hold, as explain reads them
    mode, preset, methods = lone_item(mode), lone_item(preset), lone_item(methods)
    units, init, tokens, absolute = map(lone_item, (units, init, tokens, absolute))
    if mode == "data":  # the CLI's --mode data is a function of its own here
        raise InvalidInputError(
            "mode='data' is the data randomisation (the CLI's --mode data): call "
            "normxlogit.sanity.data_randomization(...) instead; parameter_randomization's "
            f"modes are {', '.join(MODES)}"
        )
    mode = checked_choice(mode, "mode", MODES)  # a list refused in one line
    if progress is not None and not callable(progress):
        raise InvalidInputError(
            f"progress is {progress!r:.40}; give a function called with each step's "
            "description (e.g. print), or leave it out"
        )
    texts = _texts(texts)
    top_k = _check_top_k(top_k)
    seed = _check_seed(seed)
    definition = sanity_definition(preset, units=units, init=init, tokens=tokens, absolute=absolute)
    built = _methods(methods, seed, methods_by_name)
    _refuse_segment_methods(built)
    refuse_missing_tagger(built, model)
    steps = randomization_steps(model, mode, definition.units)
    trained = {
        name: _explain(model, texts, method, target, batch_size) for name, method in built.items()
    }
    # the trained model's target stays the target once its weights are random
    fixed = _targets_of(model, next(iter(trained.values())))
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
    frame, nonfinite = _frame(rows, top_k)
    settings = {"mode": mode, "preset": preset, **definition.to_dict()}
    settings |= {"top_k": top_k, "seed": seed, "groups": [step[-1].name for step in steps]}
    settings["methods"] = _recorded_options(built)  # what ran, to tell results apart
    return SanityResult(frame, settings | _nonfinite_setting(nonfinite))


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
    from ..workflows import methods_by_name, refuse_missing_tagger

    check_model(model, "data_randomization")
    # 0-d arrays (np.array("adebayo")) read as the value they hold, as explain reads them
    preset, methods = lone_item(preset), lone_item(methods)
    tokens, absolute = lone_item(tokens), lone_item(absolute)
    texts = _texts(texts)
    top_k = _check_top_k(top_k)
    seed = _check_seed(seed)
    definition = sanity_definition(preset, tokens=tokens, absolute=absolute)
    if not isinstance(shuffled, ExplainableModel):
        raise InvalidInputError(
            f"shuffled is {type_phrase(shuffled)}; give the model trained on shuffled "
            "labels, loaded with normxlogit.load(...)"
        )
    if shuffled is model or shuffled.weights_signature() == model.weights_signature():
        raise InvalidInputError(
            "the shuffled model has the trained model's own weights, so every similarity "
            "would be 1 by construction; train the same recipe on shuffled labels "
            "(normxlogit train NAME --shuffle-labels -o FOLDER) and give that folder"
        )
    if _architecture(shuffled) != _architecture(model):
        raise InvalidInputError(
            f"the shuffled model is a {_architecture(shuffled)}, the trained model a "
            f"{_architecture(model)}: data randomisation compares one architecture trained "
            "on true and on shuffled labels; give the trained model's recipe trained with "
            "--shuffle-labels"
        )
    if shuffled.tokenizer.get_vocab() != model.tokenizer.get_vocab():
        raise InvalidInputError(
            "the two models read different tokens; data randomisation compares one "
            "architecture trained on true and on shuffled labels"
        )
    if tuple(shuffled.labels) != tuple(model.labels):
        raise InvalidInputError(
            f"the shuffled model's labels ({', '.join(shuffled.labels) or 'none'}) are not "
            f"the trained model's ({', '.join(model.labels) or 'none'}): data randomisation "
            "compares the same task trained on true and on shuffled labels; give the "
            "trained model's recipe trained with --shuffle-labels"
        )
    built = _methods(methods, seed, methods_by_name)
    _refuse_segment_methods(built)
    refuse_missing_tagger(built, model)
    rows = []
    for name, method in built.items():
        trained = _explain(model, texts, method, target, batch_size)
        fixed = _targets_of(model, trained)
        changed = _explain_each(shuffled, texts, method, fixed, batch_size)
        step = ParameterGroup("shuffled labels", ())
        rows += _similarities(trained, changed, name, DATA, 0, step, top_k, definition)
    settings = {"mode": DATA, "preset": preset, "tokens": definition.tokens}
    settings |= {"absolute": definition.absolute, "top_k": top_k, "seed": seed}
    settings["methods"] = _recorded_options(built)  # what ran, to tell results apart
    frame, nonfinite = _frame(rows, top_k)
    return SanityResult(frame, settings | _nonfinite_setting(nonfinite))


def _recorded_options(built: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each checked method's options as its explanations record them (``evaluate``'s
    method settings): results of one method with other options differ in their settings."""
    from ..methods.base import method_settings

    return {name: method_settings(method) for name, method in built.items()}


def _nonfinite_setting(methods: list[str]) -> dict[str, Any]:
    """The methods whose scores were NaN or infinite, kept in the settings so that the
    verdicts' notes give that reason (nothing where there are none)."""
    return {"nonfinite": methods} if methods else {}


def _frame(rows: list[dict], top_k: int) -> tuple[pd.DataFrame, list[str]]:
    """The rows as a frame, with a warning where a similarity is undefined, and the
    methods whose scores were NaN or infinite (warned about on their own: the rows are
    n/a for that reason, not the one-token one)."""
    frame = pd.DataFrame.from_records(rows)
    if NONFINITE_KEY in frame:
        flagged = frame.pop(NONFINITE_KEY).astype(bool)
    else:
        flagged = pd.Series(False, index=frame.index)
    nonfinite = list(dict.fromkeys(frame.loc[flagged, "method"])) if flagged.any() else []
    _warn_nonfinite(frame, flagged)
    _warn_undefined(frame[~flagged], frame, top_k)
    return frame, nonfinite


def _warn_nonfinite(frame: pd.DataFrame, flagged: pd.Series) -> None:
    """Say which methods gave NaN or infinite scores, for how many texts."""
    if not flagged.any():
        return
    keys = ["instance", "target"]
    texts = len(frame.loc[flagged, keys].drop_duplicates())
    total = len(frame[keys].drop_duplicates())
    methods = ", ".join(dict.fromkeys(frame.loc[flagged, "method"]))
    warnings.warn(
        f"the Spearman similarity and the top-k overlap are n/a for {texts} of {total} "
        f"{_counted(frame)} ({methods}) at some steps: {NONFINITE}; they are left out of the "
        "means and the verdicts",
        NormXLogitWarning,
        stacklevel=4,
    )


def _warn_undefined(rows: pd.DataFrame, frame: pd.DataFrame, top_k: int) -> None:
    """Say how many of ``rows`` (the frame's, less those with NaN scores) have an
    undefined similarity, and why."""
    said = {
        "spearman": ("Spearman similarity", UNDEFINED, "the means and the verdicts"),
        "top_k": (
            "top-k overlap",
            f"{top_k_undefined(top_k)} (top_k sets k; choose a smaller one)",
            "the means",
        ),
    }
    for column, (name, why, where) in said.items():
        undefined = rows[column].isna() if len(rows) else pd.Series(dtype=bool)
        if undefined.any():
            keys = ["instance", "target"]
            texts = rows.loc[undefined, keys].drop_duplicates()
            methods = ", ".join(dict.fromkeys(rows.loc[undefined, "method"]))
            total = len(frame[keys].drop_duplicates())
            warnings.warn(
                f"the {name} is n/a for {len(texts)} of {total} {_counted(frame)} "
                f"({methods}): {why}; "
                f"they are left out of {where}",
                NormXLogitWarning,
                stacklevel=4,
            )


def _architecture(model: ExplainableModel) -> str:
    """What a model is built as: its family, layer count and width."""
    config = getattr(model.model, "config", None)
    family = getattr(config, "model_type", None) or type(model.model).__name__
    width = getattr(config, "hidden_size", None)
    return f"{family} of {model.num_layers} layers" + (f" and width {width}" if width else "")


#: the columns read as numbers: a bool or date there would be read as 0/1 or nanoseconds
NUMBER_COLUMNS = ("step", "instance", "spearman", "top_k")
#: what each number column holds, said where a row's value does not fit
_NUMBER_WHY = {
    "step": "a step is a whole number from 0 (the randomisation step)",
    "instance": "an instance is a text's index, from 0",
    "spearman": "a Spearman correlation lies in [-1, 1]",
    "top_k": "top_k, the share of top tokens kept, lies in [0, 1]",
}


def _digits(value: Any) -> str | None:
    """The digits of a whole number given as an int or as a cell's text ("-12"), sign
    left out; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return None if abs(value) <= sys.float_info.max else "past"  # no str() of 10**5000
    if not isinstance(value, str):
        return None
    text = value.strip().lstrip("+-")
    return text if text.isascii() and text.isdigit() else None


def _past_float(value: Any) -> bool:
    """Whether ``value`` is a whole number (an int, or a cell's digits) past float64's
    range, which pandas refuses to read as a number with an OverflowError."""
    digits = _digits(value)
    if digits is None:
        return False
    if digits == "past" or len(digits.lstrip("0")) > 309:
        return True
    return int(digits) > sys.float_info.max


def _long_number(value: Any) -> str:
    """A whole number past float64 for a message, cut as long values are (its first
    digits and its count of digits)."""
    if isinstance(value, int):
        return short_value(value)
    text = value.strip()
    sign = "-" if text.startswith("-") else ""
    digits = text.lstrip("+-").lstrip("0")
    return f"{sign}{digits[:20]}... ({len(digits)} digits)"


def _not_number_kind(values: pd.Series) -> str | None:
    """What a column that should hold numbers holds instead, where pandas would read it as
    numbers without a word (True as 1, a date as nanoseconds): a parquet keeps such a
    column's type, a CSV reads them as text and is refused cell by cell. None: numbers,
    or text the CSV checks read."""
    dtype = values.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return "True/False values"
    if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype):
        return "dates or times"
    if pd.api.types.is_complex_dtype(dtype):
        return "complex numbers"
    if pd.api.types.is_object_dtype(dtype):
        return next((repr(v) for v in values if isinstance(v, bool | np.bool_)), None)
    return None


def _not_index(numbers: pd.Series) -> pd.Series:
    """Where a column read as numbers holds no index a frame can keep: blank or text (NaN),
    below 0, fractional, or past 64 bits (it would overflow the integer column)."""
    return ~((numbers >= 0) & (numbers < 2**63)) | (numbers % 1 != 0)


def _blank(values: pd.Series) -> pd.Series:
    """Which cells are empty: NaN (an empty CSV cell) or only spaces."""
    return values.isna() | values.astype(str).str.strip().eq("")


def _first_text(values: pd.Series) -> Any:
    """The first value of ``values`` that is not a number."""
    numbers = pd.to_numeric(values, errors="coerce")
    return next(iter(values[numbers.isna() & values.notna()]), None)


def _texts(texts: Any) -> list[TextInput]:
    """The texts as a list (one text, a string or a pair, is a list of one)."""
    items, _ = check_texts(texts)
    return items


def _check_top_k(top_k: Any) -> int:
    """``top_k`` as an int (a 0-d array read as the number it holds, as metrics' ``k=``),
    within the command line's bound: a k past every text is n/a everywhere, and one of
    thousands of digits could not even be saved (JSON prints no such int)."""
    held = lone_item(top_k)
    if isinstance(held, bool) or not isinstance(held, (int, np.integer)) or held < 1:
        raise InvalidInputError(
            f"top_k must be a whole number of at least 1, got {short_value(held)}"
        )
    if held > MAX_INTEGER:
        raise InvalidInputError(
            f"top_k {short_value(int(held))} is too large; give a whole number from 1 to "
            f"{MAX_INTEGER} (a k past a text's tokens compares the whole text)"
        )
    return int(held)


def _check_seed(seed: Any) -> int:
    """``seed`` as an int (a 0-d array read as the number it holds), within the command
    line's bound: torch's generator takes no seed past 64 bits (``seed + 1`` seeds
    ``init="reset_parameters"``), and the check comes before any explaining."""
    held = lone_item(seed)
    if isinstance(held, bool) or not isinstance(held, (int, np.integer)):
        raise InvalidInputError(f"seed must be a whole number, got {short_value(held)}")
    if abs(int(held)) > MAX_INTEGER:
        raise InvalidInputError(
            f"seed {short_value(int(held))} is too large; give a whole number from "
            f"-{MAX_INTEGER} to {MAX_INTEGER}"
        )
    return int(held)


def _targets_of(model: ExplainableModel, explanations: list[Explanation]) -> list[Any]:
    """Each explanation's target(s), to explain the changed model for the same outputs."""
    return [recorded_target(model, e.targets) for e in explanations]


def _methods(methods, seed: int, build) -> dict[str, Any]:
    """The methods to check by name: from a list of method names, or a dict of name ->
    method (an ``AttributionMethod`` or a method name)."""
    from ..methods import AttributionMethod

    usage = (
        "give a list of method names, or a dict of name -> method "
        "(normxlogit.get_method(name, **options), or a method name)"
    )
    if isinstance(methods, Mapping):
        if not methods:
            raise InvalidInputError(f"methods: an empty dict; {usage}")
        built = {}
        for name, method in methods.items():
            if (problem := name_problem(str(name))) is not None:  # its rows must load again
                raise InvalidInputError(f"methods: the name {name!r}, {problem}")
            if isinstance(method, str):
                method = build([method], seed)[method]
            elif isinstance(method, type) and issubclass(method, AttributionMethod):
                raise InvalidInputError(
                    f"methods[{name!r}] is the class {method.__name__}, not a method; give "
                    f"an instance, normxlogit.get_method({method.name!r}, **options), or "
                    "its name"
                )
            elif not isinstance(method, AttributionMethod):
                raise InvalidInputError(
                    f"methods[{name!r}] is {type_phrase(method)}, not a method; {usage}"
                )
            built[str(name)] = method
        return built
    if isinstance(methods, str) or not isinstance(methods, Iterable):
        raise InvalidInputError(f"methods={methods!r}: {usage}")
    names = [lone_item(name) for name in methods]  # np.array("random"): the name it holds
    if not names:
        raise InvalidInputError(f"methods: an empty list; {usage}")
    for name in names:
        if not isinstance(name, str):
            raise InvalidInputError(
                f"methods: {name!r} is {type_phrase(name)}, not a method name; {usage}"
            )
    from ..methods.base import refuse_repeated_names

    names = [str(name) for name in names]  # numpy's str_ prints as np.str_('x')
    refuse_repeated_names(names, "check")
    return build(names, seed)


def segment_method_refusal(name: str) -> str:
    """Why the checks refuse a segment method: they compare the ranking of token scores,
    which a segment method only copies onto each segment's tokens (ties, not a ranking),
    and they explain the texts without segments."""
    return (
        f"sanity checks compare the token scores of token methods; {name!r} is a segment "
        "method (it scores segments, not tokens): leave it out of the sanity checks"
    )


def _refuse_segment_methods(built: Mapping[str, Any]) -> None:
    for name, method in built.items():
        if getattr(method, "needs_segments", False):
            raise InvalidInputError(segment_method_refusal(name))


def _explain(model, texts, method, target, batch_size) -> list[Explanation]:
    made = model.explain(list(texts), method, target, batch_size=batch_size)
    return list(made)


def _explain_each(model, texts, method, targets, batch_size) -> list[Explanation]:
    """The randomised (or shuffled-label) model's explanations: scores that rank nothing
    are a result here, reported with the check's own reasons, not warned about."""
    from ..explaining.texts import explain_each
    from ..explaining.unrankable import rankless_said_elsewhere

    with rankless_said_elsewhere():
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
        for index, target in enumerate(before.targets):  # every target, not the first alone
            compared = (before, after, top_k, definition.absolute, definition.tokens)
            rank, overlap = similarity(*compared, target=index)
            rows.append(
                {
                    "method": method,
                    "mode": mode,
                    "step": step,
                    "randomized": group.name,
                    "instance": instance,
                    "target": target,
                    "spearman": rank,
                    "top_k": overlap,
                    NONFINITE_KEY: not finite_scores(*compared, target=index),
                }
            )
    return rows


def similarity(
    before: Explanation,
    after: Explanation,
    top_k: int,
    absolute: bool = False,
    tokens: str = "content",
    *,
    layer: int = -1,
    target: int = 0,
) -> tuple[float, float]:
    """Spearman's correlation and the top-k overlap of two explanations of one text, over
    the non-special tokens (``tokens="all"``: every token, as Quantus compares), for the
    ``target``-th target's scores at the ``layer``-th layer of the scores (the last: the
    final layer, or the layer explained). The overlap of a text with ``top_k`` or fewer
    tokens is NaN (n/a): any two explanations pick all of them, so it would be 1. Both
    are NaN where either side's scores are NaN or infinite (:data:`NONFINITE`): ranking
    them would put the NaNs last and report an overlap no method made."""
    a = _scores(before, absolute, tokens, layer, target)
    b = _scores(after, absolute, tokens, layer, target)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return float("nan"), float("nan")
    overlap = top_k_overlap(a, b, top_k) if len(a) > top_k else float("nan")
    return (spearman(a, b) if len(a) > 1 else float("nan")), overlap


def finite_scores(
    before: Explanation,
    after: Explanation,
    top_k: int = 0,
    absolute: bool = False,
    tokens: str = "content",
    *,
    layer: int = -1,
    target: int = 0,
) -> bool:
    """Whether both sides' compared scores are numbers: where not, :func:`similarity` is
    NaN for :data:`NONFINITE`, not for the one-token reason (``top_k`` is unused: the
    arguments are :func:`similarity`'s)."""
    return all(
        np.isfinite(_scores(side, absolute, tokens, layer, target)).all()
        for side in (before, after)
    )


def _scores(
    explanation: Explanation,
    absolute: bool,
    tokens: str = "content",
    layer: int = -1,
    target: int = 0,
) -> np.ndarray:
    """One target's scores at one layer over the tokens compared. (Quantus divides them by
    their largest magnitude first: no rank, so no similarity, changes.)"""
    scores = explanation.scores_3d()[layer, :, target]
    if explanation.special and tokens == "content":
        scores = scores[~np.asarray(explanation.special, dtype=bool)]
    return np.abs(scores) if absolute else scores


def _counted(rows: pd.DataFrame) -> str:
    """What a verdict counts in ``rows``: texts, or text x target pairs where a text has
    several targets (``target="all"``), so "2 of 6" is not read as 6 texts."""
    if "target" not in rows:
        return "texts"
    pairs = len(rows.drop_duplicates(["instance", "target"]))
    return "texts" if pairs == rows["instance"].nunique() else "text x target pairs"


def _refuse_data_table(path: Path, frame: pd.DataFrame) -> None:
    """Refuse a table with none of a sanity result's columns (a data file of texts and
    labels, ``d.csv``) as a data file: "the frame has no method column" would not say so."""
    from ..common.errors import InvalidFileError

    if any(column in frame.columns for column in FRAME_COLUMNS):
        return
    shown = ", ".join(str(c) for c in list(frame.columns)[:6]) or "none"
    raise InvalidFileError(
        f"{path} looks like a data file (a table of texts; columns: {shown}), not a saved "
        "sanity result; pass the path of a file SanityResult.save wrote (to check "
        "explanations on these texts, run parameter_randomization on them)"
    )
