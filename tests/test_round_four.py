"""Round four of new-user probes (issue 41): the new capabilities under bad input, and no
result that is quietly meaningless.

CLI cases run the real entry point (a subprocess); library cases use tiny models.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from normxlogit.common.outputs import save_figure, write_atomically


def _usual_rights() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


# ------------------------------------------------------------------ outputs' rights


def test_every_written_file_gets_the_usual_rights(tmp_path):
    """A PNG or compressed store was written 0600 (mkstemp's private mode), other
    outputs 0644: every output now gets what a plain ``open`` would give."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from normxlogit.bench.archive import compress_store

    figure = plt.figure()
    written = [save_figure(figure, tmp_path / "plot.png")]
    plt.close(figure)
    written.append(write_atomically(tmp_path / "table.md", "| a |\n"))
    store = tmp_path / "store.sqlite"
    sqlite3.connect(store).execute("create table t (x)").connection.commit()
    written.append(compress_store(store, tmp_path / "store.sqlite.xz"))
    assert {path.name: path.stat().st_mode & 0o777 for path in written} == {
        path.name: _usual_rights() for path in written
    }
    assert not [p for p in Path(tmp_path).iterdir() if p.name.startswith(".")]


# ------------------------------------------------------------------ bench export keys


def test_export_keeps_every_setting_that_keys_a_value(tmp_path):
    """A contrastive store's plain and "vs foil" rows exported with identical keys: the
    export now carries target, layer and contrast (and the data set's options)."""
    from normxlogit.bench.results import EXPORT_COLUMNS, export_frame
    from normxlogit.bench.spec import DatasetSpec, MethodSpec
    from normxlogit.bench.store import ResultStore

    dataset = DatasetSpec("sst2", "dev")
    plain = MethodSpec("logat", target="label")
    against = MethodSpec("logat", target="label", contrast="foil")
    layered = MethodSpec("logat", target="label", layer="all")
    with ResultStore(tmp_path / "s.sqlite") as store:
        for method in (plain, against, layered):
            _store_one_value(store, dataset, method)
        frame = export_frame(store)
    assert list(frame.columns) == EXPORT_COLUMNS
    keys = [c for c in EXPORT_COLUMNS if c != "value"]
    assert not frame.duplicated(subset=keys).any()
    assert sorted(frame["contrast"].fillna("-")) == ["-", "-", "foil"]
    assert sorted(frame["layer"].fillna("-")) == ["-", "-", "all"]


def _store_one_value(store, dataset, method) -> None:
    from normxlogit.bench.store import CellKey, StoredEvaluation

    cell = CellKey("minilm-blimp", dataset.key, method.key, 0)
    evaluation = StoredEvaluation(0, "evidence_ap", "{}", 0.1, [("layer", 6.0, 0.5, None)])
    store.add_unit(cell, [], [evaluation])
