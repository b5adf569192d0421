"""Browsing bench results: each experiment's table and curves, and per instance the
stored explanation behind a number.

Only the bench configs named on the command line are offered, each with its store; the
store is opened read-only per request (a running bench keeps writing meanwhile: SQLite's
write-ahead log lets both happen).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..common.errors import InvalidInputError
from ..common.input_paths import check_input_file
from .payloads import payload, plain, results_payload

#: how many characters of an instance's text the drill-down list shows
SHOWN_TEXT = 120


@dataclass(frozen=True)
class BenchEntry:
    """A bench config and the store that holds its results."""

    config: Path
    store: Path

    @classmethod
    def parse(cls, value: str | Path) -> BenchEntry:
        """``CONFIG`` (its default store) or ``CONFIG=STORE``."""
        from ..bench.archive import is_compressed
        from ..bench.config import load_config
        from ..bench.spec import default_store

        text = str(value)
        config_text, _, store_text = text.partition("=")
        config = Path(config_text).expanduser()
        check_input_file(config, "bench config", "pass --bench CONFIG.toml[=STORE]")
        if is_compressed(config) or _is_sqlite(config):
            raise InvalidInputError(
                f"--bench {config}: that is a results store, not a bench config; pass the "
                f"config it belongs to and the store as --bench CONFIG.toml={config}"
            )
        load_config(config)  # a config that does not read is refused now, not per request
        store = Path(store_text).expanduser() if store_text else default_store(config)
        if not store.is_file():
            raise InvalidInputError(
                f"no results store {store} for {config}; run `normxlogit bench run {config}` "
                "first, or name the store as CONFIG=STORE"
            )
        if not (is_compressed(store) or _is_sqlite(store)):
            raise InvalidInputError(
                f"--bench {text}: {store} is not a results store (a SQLite file, or one "
                "compressed as .sqlite.xz or .sqlite.gz); name the store as CONFIG=STORE"
            )
        return cls(config.resolve(), store.resolve())


def _is_sqlite(path: Path) -> bool:
    with open(path, "rb") as stream:
        return stream.read(16) == b"SQLite format 3\x00"


class BenchBrowser:
    """Read-only views of the named bench configs' stores."""

    def __init__(self, entries: list[BenchEntry]):
        self.entries = entries

    def listing(self) -> list[dict[str, Any]]:
        from ..bench.config import load_config

        found = []
        for index, entry in enumerate(self.entries):
            config = load_config(entry.config)
            found.append(
                {
                    "id": index,
                    "title": config.title,
                    "config": entry.config.name,
                    "store": entry.store.name,
                    "experiments": [e.name for e in config.experiments],
                }
            )
        return found

    def _open(self, index: int):
        from ..bench.config import load_config
        from ..bench.store import ResultStore

        if not 0 <= index < len(self.entries):
            raise InvalidInputError(f"no bench results {index}; the page has {len(self.entries)}")
        entry = self.entries[index]
        return load_config(entry.config), ResultStore(entry.store, create=False)

    @contextmanager
    def _experiment(self, index: int, name: str) -> Iterator[tuple[Any, Any, Any]]:
        """The config, its open store and the stored results of experiment ``name``."""
        from ..bench.results import experiment_results

        config, store = self._open(index)
        with store:
            for result in experiment_results(config, store):
                if result.experiment.name == name:
                    yield config, store, result
                    return
        raise InvalidInputError(f"no experiment {name!r} in {self.entries[index].config.name}")

    def experiment(self, index: int, name: str) -> dict[str, Any]:
        """An experiment's summary (methods x metrics, on the instances all methods share)
        and its curves, with each metric's metadata."""
        with self._experiment(index, name) as (_, _, result):
            common = result.common()
        return {
            "experiment": name,
            "model": result.experiment.model,
            "instances": common.total,
            "of": result.total,
            "skipped": result.skipped,
            **results_payload(common.summary(), common.curves()),
        }

    def tables(self, index: int) -> dict[str, Any]:
        """The config's tables as the report renders them (the paper's numbers beside
        ours), on the instances every method has, and the names of its figures."""
        from ..bench.report import build_table, default_plots, default_tables
        from ..bench.results import experiment_results

        config, store = self._open(index)
        with store:
            results = [result.common() for result in experiment_results(config, store)]
        tables = []
        for spec in config.tables or default_tables(config):
            table = build_table(spec, results)
            if table.columns:
                tables.append(table.to_dict())
        plots = config.plots or default_plots(config)
        return {
            "tables": tables,
            "plots": [{"name": p.name, "title": p.title or p.name} for p in plots],
        }

    def plot(self, index: int, name: str) -> bytes:
        """One of the config's figures as PNG, drawn by the report's own code."""
        import tempfile

        from ..bench.report import default_plots, draw_plot
        from ..bench.results import experiment_results

        config, store = self._open(index)
        specs = {p.name: p for p in config.plots or default_plots(config)}
        if name not in specs:
            raise InvalidInputError(f"no figure {name!r}; this config draws {', '.join(specs)}")
        with store, tempfile.TemporaryDirectory() as folder:
            results = [result.common() for result in experiment_results(config, store)]
            path = Path(folder) / "figure.png"
            if not draw_plot(specs[name], config, store, results, path):
                raise InvalidInputError(f"figure {name!r} has nothing to draw yet")
            return path.read_bytes()

    def instances(self, index: int, name: str, method: str, metric: str) -> dict[str, Any]:
        """Every instance's number for one method and metric (its own AOPC / AUC / mean),
        to find the explanation behind an outlier."""
        from ..evaluation import metric_info

        with self._experiment(index, name) as (_, store, result):
            frame = result.frame
            rows = frame[(frame["method"] == method) & (frame["metric"] == metric)]
            if rows.empty:
                raise InvalidInputError(
                    f"no stored values of {metric!r} for {method!r} in {name!r}"
                )
            info = metric_info(metric)
            seed = min(rows["seed"])
            rows = rows[rows["seed"] == seed]
            keys = ["instance", "step"] if "step" in rows else ["instance"]
            per_instance: dict[int, list[float]] = {}
            for key, curve in rows.groupby(keys, sort=True):
                instance = int(key[0]) if isinstance(key, tuple) else int(key)
                curve = curve.sort_values("x")
                value = info.summarise(curve["x"].to_numpy(float), curve["value"].to_numpy(float))
                per_instance.setdefault(instance, []).append(float(value))
            dataset = result.experiment.dataset.key
            texts = {i: store.instance(dataset, i) for i in per_instance}
        return {
            "method": method,
            "metric": metric,
            "seed": int(seed),
            "higher_is_better": info.higher_is_better,
            "instances": [
                {
                    "instance": instance,
                    "value": plain(sum(values) / len(values)),
                    "text": _short(texts[instance]["text"]) if texts[instance] else "",
                }
                for instance, values in per_instance.items()
            ],
        }

    def explanation(self, index: int, name: str, method: str, instance: int) -> dict[str, Any]:
        """The stored explanation of one instance by one method, with the instance."""
        from ..bench.store import CellKey
        from ..explanations.io import load_payload

        with self._experiment(index, name) as (config, store, result):
            experiment = result.experiment
            keys = {m.display: m.key for m in experiment.methods}
            if method not in keys:
                raise InvalidInputError(
                    f"{name!r} has no method {method!r}; it has {', '.join(keys)}"
                )
            cell = CellKey(experiment.model, experiment.dataset.key, keys[method], config.seeds[0])
            found = store.explanations(cell, [instance])
            row = store.instance(experiment.dataset.key, instance)
        if instance not in found:
            raise InvalidInputError(f"no stored explanation of instance {instance} by {method!r}")
        return {
            "instance": instance,
            "text": row and row["text"],
            "label": row and row["label"],
            "explanation": payload(load_payload(found[instance])),
        }


def _short(text: Any) -> str:
    shown = " / ".join(text) if isinstance(text, list) else str(text)
    return shown if len(shown) <= SHOWN_TEXT else shown[: SHOWN_TEXT - 1] + "…"
