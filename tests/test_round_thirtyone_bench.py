"""Round thirty-one of new-user probes, probe b: a ``[[tables]]`` ``metric`` given as a
list, number, bool or date raised an AttributeError, and a ``paper_note`` of any type
passed (P01); ``options = { steps = "4" }`` and ``{ steps = 4 }`` keyed two cells, computed
and exported twice (P02); ``load_dataset`` with a name or path that is no string raised
AttributeError / TypeError (P03); the hard metrics were keyed by each other's fraction
settings, so changing ``steps`` recomputed comp/suff and changing ``ratios`` recomputed
deletion/insertion, while the key of the default settings stays the one stores hold (P04);
a label ``1.5`` was called "not a number" (P05); ``--engine ray`` with an address nothing
answers at retried without end (N1); ``scripts/gpu/estimate`` priced an entry whose store
does not exist as all left with no word (N2); "names a Excel file" (N3). Tiny models."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from normxlogit.bench import load_config
from normxlogit.bench.estimate import missing_store_notes
from normxlogit.bench.queue import load_queue
from normxlogit.bench.ray_engine import RayEngine, check_reachable
from normxlogit.bench.runner import protocol_keys
from normxlogit.cli.bench import EXPORT_SUFFIXES
from normxlogit.common.errors import InvalidFileError, InvalidInputError, OutputPathError
from normxlogit.common.outputs import output_format
from normxlogit.data import dataset_info, load_dataset
from normxlogit.data.glue import read_sst2

from .bench.helpers import CLI, write_config


# ------------------------------------------------------------------ P01
@pytest.mark.parametrize("metric", ['["comp_cd"]', "1", "1.5", "true", "1979-05-27", "{}"])
def test_p01_a_table_metric_that_is_no_name_is_refused_in_one_line(
    tmp_path, tiny_classifier, metric
):
    body = f'name = "A"\n[[tables]]\nmetric = {metric}\n'
    config = write_config(tmp_path, tiny_classifier, body, metrics='["comp_cd"]')
    with pytest.raises(InvalidInputError) as caught:
        load_config(config)
    assert 'table 1 needs metric = "comp_cd" or a table such as { sst2 = "comp_cd" }' in str(
        caught.value
    )


@pytest.mark.parametrize("note", ["0", '["a"]', "1979-05-27", "false"])
def test_p01_a_paper_note_that_is_no_string_is_refused(tmp_path, tiny_classifier, note):
    body = f'name = "A"\n[[tables]]\nmetric = "comp_cd"\npaper_note = {note}\n'
    config = write_config(tmp_path, tiny_classifier, body, metrics='["comp_cd"]')
    with pytest.raises(InvalidInputError, match="table 1 paper_note must be a string, e.g."):
        load_config(config)


def test_p01_a_string_paper_note_is_kept(tmp_path, tiny_classifier):
    body = 'name = "A"\n[[tables]]\nmetric = "comp_cd"\npaper_note = "table 2"\n'
    config = write_config(tmp_path, tiny_classifier, body, metrics='["comp_cd"]')
    assert load_config(config).tables[0].paper_note == "table 2"


# ------------------------------------------------------------------ P02
def _methods(tmp_path, tiny_classifier, methods: str):
    return write_config(tmp_path, tiny_classifier, 'name = "A"\n', methods=methods)


def _ig(steps: str) -> str:
    return f'[{{ name = "integrated_gradients", options = {{ steps = {steps} }} }}]'


def test_p02_options_written_as_text_key_the_cell_of_their_typed_value(tmp_path, tiny_classifier):
    text = load_config(_methods(tmp_path, tiny_classifier, _ig('"4"')))
    number = load_config(_methods(tmp_path, tiny_classifier, _ig("4")))
    spec = text.experiments[0].methods[0]
    assert spec.options == {"steps": 4}
    assert spec.key == number.experiments[0].methods[0].key


def test_p02_text_and_number_spellings_are_refused_as_one_method(tmp_path, tiny_classifier):
    methods = (
        '[{ name = "integrated_gradients", label = "A", options = { steps = "4" } }, '
        '{ name = "integrated_gradients", label = "B", options = { steps = 4 } }]'
    )
    with pytest.raises(InvalidInputError, match="methods A and B compute the same results"):
        load_config(_methods(tmp_path, tiny_classifier, methods))


def test_p02_typed_options_key_what_they_always_did(tmp_path, tiny_classifier):
    """Stores key cells by the options as written: an option already of its type keys the
    cell it always did."""
    spec = load_config(_methods(tmp_path, tiny_classifier, _ig("4"))).experiments[0].methods[0]
    assert spec.key == '{"name":"integrated_gradients","options":{"steps":4}}'


# ------------------------------------------------------------------ P03
@pytest.mark.parametrize(("name", "shown"), [(None, "NoneType"), (5, "int"), (["sst2"], "list")])
def test_p03_a_name_that_is_no_string_is_refused(name, shown):
    for call in (lambda: load_dataset(name), lambda: dataset_info(name)):
        with pytest.raises(InvalidInputError) as caught:
            call()
        assert str(caught.value).startswith("name= must be a string")
        assert str(caught.value).endswith(f"not {shown}")


@pytest.mark.parametrize(("path", "shown"), [(0, "int"), (["dev.tsv"], "list"), (b"x", "bytes")])
def test_p03_a_path_that_is_no_path_is_refused(path, shown):
    with pytest.raises(
        InvalidInputError, match=f"path= must be one file's or folder's path .*not {shown}"
    ):
        load_dataset("sst2", path=path)


def test_p03_a_path_object_is_taken_as_a_name(tmp_path):
    (tmp_path / "texts.txt").write_text("one\ntwo\n")
    assert len(load_dataset(tmp_path / "texts.txt")) == 2


# ------------------------------------------------------------------ P04
def _keys(protocol: dict) -> dict[str, str]:
    experiment = SimpleNamespace(
        protocol=protocol,
        metrics=["comp_cd", "suff_acc", "deletion", "insertion"],
        generation=False,
        evaluate_every=1,
    )
    return protocol_keys(experiment)


#: the key every hard metric's values were stored under with the default settings
STORED = (
    '{"protect":"first","ratios":[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9],'
    '"replacement":"auto","step":0.05,"steps":20}'
)


def test_p04_the_default_key_is_the_one_stores_hold():
    assert set(_keys({}).values()) == {STORED}


def test_p04_steps_keys_deletion_and_insertion_only():
    default, changed = _keys({}), _keys({"steps": 10, "step": 0.1})
    for metric in ("comp_cd", "suff_acc"):
        assert changed[metric] == default[metric]
    for metric in ("deletion", "insertion"):
        assert changed[metric] != default[metric] and '"steps":10' in changed[metric]


def test_p04_ratios_keys_comprehensiveness_and_sufficiency_only():
    default, changed = _keys({}), _keys({"ratios": [0.2, 0.5]})
    for metric in ("deletion", "insertion"):
        assert changed[metric] == default[metric]
    for metric in ("comp_cd", "suff_acc"):
        assert changed[metric] != default[metric] and '"ratios":[0.2,0.5]' in changed[metric]


def test_p04_a_setting_both_read_keys_both():
    default, changed = _keys({}), _keys({"protect": "special"})
    assert all(changed[m] != default[m] for m in default)


# ------------------------------------------------------------------ P05
def test_p05_a_fractional_label_is_asked_for_as_a_label_index(tmp_path):
    (tmp_path / "sst2").mkdir()
    (tmp_path / "sst2" / "dev.tsv").write_text("sentence\tlabel\ngood\t1.5\n")
    with pytest.raises(InvalidFileError) as caught:
        read_sst2("dev", root=tmp_path)
    message = str(caught.value)
    assert "holds '1.5', not a label index (a whole number)" in message
    assert "negative (0), positive (1)" in message and "not a number" not in message


# ------------------------------------------------------------------ N1
def _closed_port() -> int:
    """A port on 127.0.0.1 nothing listens at (bound, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("host", ["nothere.invalid", "127.0.0.1"])
def test_n1_an_unreachable_ray_address_is_refused(host):
    pytest.importorskip("ray")
    address = f"{host}:{_closed_port()}"
    with pytest.raises(InvalidInputError) as caught:
        RayEngine(address=address)
    message = str(caught.value)
    assert message.startswith(f"Ray cluster address {address} (--address): ")
    assert "`ray start --head`, or leave --address out to start a local one" in message


def test_n1_ray_address_from_the_environment_is_checked(monkeypatch):
    pytest.importorskip("ray")
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{_closed_port()}")
    with pytest.raises(InvalidInputError, match=r"\(\$RAY_ADDRESS\).*unset \$RAY_ADDRESS"):
        RayEngine()


@pytest.mark.parametrize("address", [None, "auto", "local", "somewhere"])
def test_n1_addresses_ray_resolves_itself_pass(address):
    check_reachable(address, "--address")


def test_n1_bench_run_ends_at_once_with_one_line(tmp_path, tiny_classifier):
    pytest.importorskip("ray")
    config = write_config(tmp_path, tiny_classifier, 'name = "A"\n', methods='["random"]')
    ran = subprocess.run(
        [*CLI, "bench", "run", str(config), "--engine", "ray", "--address", "nothere.invalid:1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode != 0
    assert "the host 'nothere.invalid' is not known" in ran.stderr
    assert "Traceback" not in ran.stderr


# ------------------------------------------------------------------ N2
def test_n2_a_missing_queue_store_is_named(tmp_path, tiny_classifier):
    write_config(tmp_path, tiny_classifier, 'name = "t"\n', methods='["random"]')
    (tmp_path / "there.sqlite.xz").write_bytes(b"")
    queue = tmp_path / "q.toml"
    queue.write_text(
        'deadline = 120\n[[entries]]\nname = "a"\nconfig = "grid.toml"\nstore = "tpyo.sqlite.xz"\n'
        '[[entries]]\nname = "b"\nconfig = "grid.toml"\nstore = "there.sqlite.xz"\n'
    )
    notes = missing_store_notes(load_queue(queue))
    assert len(notes) == 1
    assert notes[0].startswith("note: entry a: no store yet at ")
    assert notes[0].endswith("tpyo.sqlite.xz: everything counted as left to do")


# ------------------------------------------------------------------ N3
@pytest.mark.parametrize(("name", "kind"), [("out.xlsx", "an Excel"), ("out.png", "a PNG")])
def test_n3_the_article_agrees_with_the_format(name, kind):
    with pytest.raises(OutputPathError, match=f"names {kind} file"):
        output_format(Path(name), None, EXPORT_SUFFIXES, "-o")
