"""Round forty-one of new-user probes (b: bench, page, saved files):

- P01: ``bench report --versus LABEL`` left its comparison out without a word where LABEL
  has no values yet (or is no method of the experiment), and ``--versus best`` where no
  metric has a better direction (expected_retained) or nothing has values; each now says
  so in one line per experiment, as an N/A LABEL does.
- P02: ``<U+D800>`` (a surrogate, as the views write code points) as an LM target or
  contrast ended in a TypeError traceback (CLI, bench config, page): it is now read as
  typed; a name holding a lone surrogate itself (JSON ``"\\ud800"``, undecodable bytes)
  is refused in one line, and so are undecodable bytes in ``--label`` / ``--contrast``.
- P03: a store compressed with bzip2 or zstd was told "name it X.sqlite (or X.sqlite.xz,
  X.sqlite.gz)", which fails: the compression is now told by content, with the way to
  decompress it.
- P04: ``serve --bench CONFIG=damaged.sqlite.xz`` started, and each bench request then
  named the store's absolute server path: it is refused at start like a damaged plain
  store, and messages name the store as given.
"""

from __future__ import annotations

import bz2
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from normxlogit.common.errors import InvalidInputError, NormXLogitError

from .bench.helpers import COMPLETE
from .conftest import invoke_in
from .test_round_thirtynine_wording import byte_level  # noqa: F401 (a fixture)

SANITY = Path(__file__).parents[1] / "experiments" / "sanity.toml"


# ------------------------------------------------------------------ P01
def _result(methods, summaries=None, frame_methods=()):
    return SimpleNamespace(
        experiment=SimpleNamespace(
            name="tb2:d.jsonl", methods=[SimpleNamespace(display=m) for m in methods]
        ),
        frame=pd.DataFrame({"method": list(frame_methods)}),
        skipped={},
        instance_summaries=lambda: summaries,
        **COMPLETE,
    )


def _summaries(metric: str, methods=("normxlogit", "random")) -> pd.DataFrame:
    index = pd.MultiIndex.from_product([list(methods), [0, 1, 2]], names=["method", "instance"])
    return pd.DataFrame({metric: [0.3, 0.2, 0.4, 0.1, 0.0, 0.1][: len(index)]}, index=index)


def test_p01_versus_a_method_without_values_yet_says_so():
    from normxlogit.bench.report import paired_table

    result = _result(["normxlogit", "random"], frame_methods=["normxlogit"])
    line = paired_table(result, "random")
    assert line is not None and "**tb2:d.jsonl**: no differences (--versus random)" in line
    assert "random has no values here yet" in line and "--method random" in line


def test_p01_versus_a_method_of_another_experiment_says_so():
    from normxlogit.bench.report import paired_table

    result = _result(["normxlogit", "random"], frame_methods=["normxlogit", "random"])
    line = paired_table(result, "grad_ellm")
    assert line is not None and "grad_ellm is no method of this experiment" in line


def test_p01_versus_best_without_a_ranked_metric_says_so():
    from normxlogit.bench.report import paired_table

    summaries = _summaries("expected_retained")
    line = paired_table(_result(["normxlogit", "random"], summaries), "best")
    assert line is not None and "no differences (--versus best)" in line
    assert "(expected_retained) has a better direction" in line


def test_p01_versus_best_without_values_says_so():
    from normxlogit.bench.report import paired_table

    line = paired_table(_result(["normxlogit", "random"], None), "best")
    assert line is not None and "no method has values here yet" in line


def test_p01_a_ranked_metric_still_gets_its_table():
    from normxlogit.bench.report import paired_table

    table = paired_table(_result(["normxlogit", "random"], _summaries("comp_cd")), "best")
    assert table is not None and "| normxlogit | best |" in table


# ------------------------------------------------------------------ P02
@pytest.mark.parametrize("name", ["<U+D800>", "<U+DFFF>", "a<U+DBFF>b", "<U+D800>↵"])
def test_p02_a_surrogate_drawing_is_read_as_typed(name):
    from normxlogit.common.tokens import typed_view_text

    assert typed_view_text(name) is None


@pytest.mark.parametrize("role", ["target", "contrast"])
def test_p02_a_surrogate_drawing_as_target_or_contrast_is_refused_in_one_line(
    byte_level,  # noqa: F811
    role,
):
    other = {"target": " Paris"} if role == "contrast" else {}
    with pytest.raises(InvalidInputError, match=f"{role} '<U\\+D800>' is 8 tokens"):
        byte_level.explain("Hi Paris", **{role: "<U+D800>"}, **other)


@pytest.mark.parametrize("role", ["target", "contrast"])
def test_p02_a_lone_surrogate_is_refused_in_one_line(byte_level, role):  # noqa: F811
    other = {"target": " Paris"} if role == "contrast" else {}
    with pytest.raises(InvalidInputError, match="holds U\\+D800, a surrogate"):
        byte_level.explain("Hi Paris", **{role: "\ud800"}, **other)


@pytest.mark.parametrize("flag", ["--label", "--contrast"])
def test_p02_undecodable_bytes_in_label_or_contrast_are_refused(tmp_path, flag):
    bad = b"\xff".decode("utf-8", "surrogateescape")
    ran = invoke_in(tmp_path, "explain", "Hi Paris", "-m", "gpt2", flag, bad)
    assert ran.exit_code != 0 and f"{flag} is not UTF-8 (byte 0xFF" in ran.output
    assert "--input" not in ran.output and not isinstance(ran.exception, TypeError)


# ------------------------------------------------------------------ P03
def _plain_store(path: Path) -> Path:
    from normxlogit.bench.store import ResultStore

    with ResultStore(path):
        pass
    return path


@pytest.mark.parametrize("name", ["s.sqlite.bz2", "s.sqlite", "s.sqlite.xz"])
def test_p03_a_bzip2_store_is_told_to_be_decompressed(tmp_path, name):
    from normxlogit.bench.archive import readable_store
    from normxlogit.bench.store import ResultStore

    raw = _plain_store(tmp_path / "plain.sqlite").read_bytes()
    packed = tmp_path / name
    packed.write_bytes(bz2.compress(raw))
    with (
        pytest.raises(NormXLogitError) as refused,
        readable_store(packed) as plain,
        ResultStore(plain, create=False, shown=packed),
    ):
        pass
    message = str(refused.value)
    assert "is bzip2-compressed, which the bench does not read" in message
    assert "bunzip2" in message and "name it" not in message and "fetch it again" not in message


def test_p03_a_zstd_store_is_told_to_be_decompressed(tmp_path):
    from normxlogit.bench.store import ResultStore

    packed = tmp_path / "s.sqlite.zst"
    packed.write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 64)
    with pytest.raises(NormXLogitError) as refused:
        ResultStore(packed, create=False)
    message = str(refused.value)
    assert "zstd-compressed" in message and "zstd -d" in message
    assert "s.sqlite.xz" in message and "name it" not in message


def test_p03_a_plain_store_misnamed_bz2_is_still_told_its_name(tmp_path):
    from normxlogit.bench.store import ResultStore

    misnamed = tmp_path / "s.sqlite.bz2"
    misnamed.write_bytes(_plain_store(tmp_path / "plain.sqlite").read_bytes())
    with pytest.raises(NormXLogitError, match="name it .*s.sqlite"):
        ResultStore(misnamed, create=False)


# ------------------------------------------------------------------ P04
def test_p04_a_damaged_compressed_store_is_refused_at_start_by_its_given_name(
    tmp_path, monkeypatch
):
    pytest.importorskip("fastapi")
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    monkeypatch.chdir(tmp_path)
    Path("p04.sqlite.xz").write_text("garbage\n")
    entry = BenchEntry.parse(f"{SANITY}=p04.sqlite.xz")
    with pytest.raises(InvalidInputError) as refused:
        BenchBrowser([entry]).check()
    message = str(refused.value)
    assert message.startswith(f"--bench {SANITY}=p04.sqlite.xz: p04.sqlite.xz is not")
    assert str(tmp_path) not in message
    browser = BenchBrowser([entry])  # unchecked: a request names it as given too
    with pytest.raises(NormXLogitError) as asked:
        browser.tables(0)
    assert "p04.sqlite.xz" in str(asked.value) and str(tmp_path) not in str(asked.value)
    browser.close()


def test_p04_the_app_refuses_it_as_it_starts(tmp_path, monkeypatch):
    pytest.importorskip("fastapi")
    from normxlogit.serve import build_app

    monkeypatch.chdir(tmp_path)
    Path("p04.sqlite.xz").write_text("garbage\n")
    with pytest.raises(InvalidInputError, match="=p04.sqlite.xz: p04.sqlite.xz is not"):
        build_app(bench=[f"{SANITY}=p04.sqlite.xz"])


def test_p04_a_sound_compressed_store_is_decompressed_once_at_start(tmp_path):
    pytest.importorskip("fastapi")
    from normxlogit.bench.archive import compress_store
    from normxlogit.serve.browse import BenchBrowser, BenchEntry

    packed = compress_store(_plain_store(tmp_path / "s.sqlite"), tmp_path / "s.sqlite.xz")
    browser = BenchBrowser([BenchEntry.parse(f"{SANITY}={packed}")])
    browser.check()
    folder = Path(browser._folder.name)
    browser.tables(0)
    assert len(list(folder.glob("*"))) == 1  # the copy made at start serves the requests
    browser.close()
