"""A GPU slot: one device command that turns its minutes into stored rows.

``python3 scripts/gpu/slot receive PART`` keeps a part of the pack (:mod:`.pack`) on the
machine; ``python3 scripts/gpu/slot run PART`` receives the last part, assembles the
files, installs what the image lacks, calibrates once per machine, runs the queue in
order until the deadline, and writes the new rows, compressed, to the folder the machine
sends back (``$OUT``). ``normxlogit bench merge`` joins them into the committed stores.

This module imports nothing beyond the standard library and the package's light
compressed-store helpers (:mod:`.archive`): it runs before the packages it installs are
there. The bench work runs in child processes (``normxlogit
bench run --deadline``), so a unit that overruns is stopped at the deadline without
losing what was stored: every unit is committed on its own.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

from ..common.errors import NormXLogitError, OutputPathError
from ..common.outputs import try_writing, write_atomically
from .archive import compress_store, decompress_store, snapshot_store

MANIFEST = "manifest.json"
#: the pack's layout (manifest.json's ``format``): a slot reads the parts of its own only
FORMAT = 1
#: what a manifest holds, and what each file and chunk of it holds
_MANIFEST_KEYS = {
    "format": int,
    "this_part": str,
    "parts": int,
    "queue_sha256": str,
    "deadline": (int, float),
    "entries": list,
    "files": list,
}
_FILE_KEYS = {"path": str, "size": int, "sha256": str, "chunks": list}
_CHUNK_KEYS = {"part": int, "name": str, "size": int, "offset": int}
_ENTRY_KEYS = {"name": str, "config": str, "experiments": list, "methods": list, "seed": str}
#: where a machine keeps what the slot received and built (kept between its commands)
DEFAULT_HOME = Path("/tmp/normxlogit-slot")
#: the checkout this module belongs to: its source, metadata and benchmarks
PACKAGE_ROOT = Path(__file__).resolve().parents[3]
#: what one file sent back may hold
RETURN_FILE_LIMIT = 16 * 2**20
#: seconds kept at the start for the slot's own start before its first entry: receiving
#: the last part, assembling the files, installing the carried wheels, the torch check
#: (about 1 s on a CPU with nothing to install)
START_RESERVE = 10.0
#: seconds kept back at the end for exporting the stores
EXPORT_RESERVE = 25.0
#: a queue entry is started only with at least this many seconds left
MINIMUM_ENTRY = 30.0
#: the shortest deadline a slot runs anything in: its start, one entry, then the export.
#: A fresh machine's calibration is not counted: it runs only in the seconds beyond these
MINIMUM_DEADLINE = START_RESERVE + MINIMUM_ENTRY + EXPORT_RESERVE
#: what :data:`MINIMUM_DEADLINE` is made of, for the refusals of a shorter deadline
MINIMUM_DEADLINE_PARTS = (
    f"its start's {START_RESERVE:.0f} s, one entry's {MINIMUM_ENTRY:.0f} s and the "
    f"export's {EXPORT_RESERVE:.0f} s"
)
#: seconds a child gets past its deadline before it is stopped
GRACE = 15.0
#: seconds a stopped child gets between SIGTERM and SIGKILL
STOP_WAIT = 10.0
#: the calibrations a fresh machine runs before its first entry, each at most
#: :data:`CALIBRATION_SECONDS` and only in the time the first entry and the export leave.
#: bench_dtype and bench_compile ran here until their verdicts were in (on H200s, 2026-11-28:
#: keep float32, keep eager; docs/benchmarks.md): each fresh machine paid 42 and 75 s for
#: them, a quarter of its first slot. Run them alone in a device command to measure again.
CALIBRATIONS = ("agreement", "gpu")
CALIBRATION_SECONDS = 75.0
#: a calibration is skipped when less than this is left for it
MINIMUM_CALIBRATION = 20.0
#: seconds one command runs on a lent device at most: a slot's deadline stays below it
COMMAND_SECONDS = 600.0


def compute_seconds(deadline: float) -> float:
    """Seconds of a slot of ``deadline`` its entries' bench runs compute in at most: the
    deadline less the slot's start, the export and the grace each run keeps before its
    stop (a fresh machine's calibration, once per machine, is not counted). What
    ``scripts/gpu/estimate`` prices a slot at."""
    return deadline - START_RESERVE - EXPORT_RESERVE - GRACE


#: what :func:`compute_seconds` takes off a deadline, in words
COMPUTE_RESERVES = (
    f"less its start's {START_RESERVE:.0f} s, the export's {EXPORT_RESERVE:.0f} s and a "
    f"run's {GRACE:.0f} s grace"
)


class SlotError(Exception):
    """What stops a slot, in one line."""


def log(message: str) -> None:
    print(f"[slot {time.strftime('%H:%M:%S')}] {message}", flush=True)


def _log_both(message: str, logfile) -> None:
    """``message`` on stdout and as a line of the slot's log (slot-log.txt)."""
    log(message)
    print(message, file=logfile, flush=True)


# ------------------------------------------------------------------ receiving
def read_manifest(part: Path) -> dict[str, Any]:
    """``part``'s manifest, checked: a part cut short in transfer, or packed by another
    version of the pack, is refused in one line (it would fail half-way otherwise)."""
    path = part / MANIFEST
    if not path.is_file():
        raise SlotError(f"{part} is no part of a pack (no {MANIFEST}); run scripts/gpu/pack")
    again = "pack again with `python3 scripts/gpu/pack` and send the new parts"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SlotError(
            f"{path} is damaged, not a pack manifest ({error}): the part may be cut short; {again}"
        ) from None
    if not isinstance(manifest, dict):
        raise SlotError(f"{path} is not a pack manifest (no JSON object); {again}")
    if manifest.get("format") != FORMAT and "format" in manifest:
        raise SlotError(
            f"{path} is of pack format {manifest['format']!r}, and this slot reads format "
            f"{FORMAT}: the pack comes from another version of the tree; {again}"
        )
    problem = _shape_problem(manifest, _MANIFEST_KEYS)
    if problem is None and not _part_number(manifest["this_part"]):
        problem = f"this_part {manifest['this_part']!r} is not part-N"
    for item in manifest.get("files", []) if problem is None else ():
        problem = _shape_problem(item, _FILE_KEYS, "a file")
        for chunk in item.get("chunks", []) if problem is None else ():
            problem = problem or _shape_problem(chunk, _CHUNK_KEYS, "a chunk")
        if problem:
            break
    for entry in manifest.get("entries", []) if problem is None else ():
        problem = problem or _shape_problem(entry, _ENTRY_KEYS, "an entry")
    if problem:
        raise SlotError(
            f"{path} is damaged or from another version of the pack ({problem}); {again}"
        )
    return manifest


def _shape_problem(value: Any, keys: dict[str, Any], what: str = "") -> str | None:
    """What ``value`` lacks of ``keys`` (name: type), in words; None when it has them."""
    where = f" in {what}" if what else ""
    if not isinstance(value, dict):
        return f"{what or 'the manifest'} is not a JSON object"
    for key, kind in keys.items():
        if key not in value:
            return f"no {key!r}{where}"
        if not isinstance(value[key], kind) or isinstance(value[key], bool):
            return f"{key!r}{where} is {type(value[key]).__name__}"
    return None


def _part_number(name: str) -> int | None:
    stem, _, number = name.rpartition("-")
    return int(number) if stem and number.isdigit() else None


def receive(part: Path, home: Path) -> dict[str, Any]:
    """Keep ``part``'s chunks in ``home`` (checked by size); the pack's manifest."""
    manifest = read_manifest(part)
    number = _part_number(manifest["this_part"])
    kept = home / "chunks"
    known = home / MANIFEST
    if known.is_file():
        previous = _received_manifest(known)
        if (
            previous is None
            or previous.get("queue_sha256") != manifest["queue_sha256"]
            or previous["files"] != manifest["files"]
        ):
            # the files of another pack go; the converted model, the installed wheels and
            # the calibration of this machine stay
            if previous is not None:  # a damaged record was told already
                log("a different pack than the one received before: its files are replaced")
            for folder in ("chunks", "files", "stores"):
                shutil.rmtree(home / folder, ignore_errors=True)
    kept.mkdir(parents=True, exist_ok=True)
    count = 0
    for item in manifest["files"]:
        for chunk in item["chunks"]:
            if chunk["part"] != number:
                continue
            source = part / chunk["name"]
            if not source.is_file() or source.stat().st_size != chunk["size"]:
                raise SlotError(
                    f"{source} is missing or cut short: pack again and resend part {number}"
                )
            target = kept / chunk["name"]
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            count += 1
    # whole or not at all: a command stopped at the device's limit leaves no cut record
    write_atomically(known, json.dumps({k: v for k, v in manifest.items() if k != "this_part"}))
    missing = missing_parts(manifest, home)
    log(
        f"received part {number} of {manifest['parts']} ({count} chunk(s)); "
        + (
            f"still to come: part(s) {', '.join(map(str, missing))}"
            if missing
            else "all parts here"
        )
    )
    return manifest


def _received_manifest(known: Path) -> dict[str, Any] | None:
    """The manifest an earlier ``receive`` kept in the home; None when it is damaged (cut,
    not UTF-8, no object with files), told in one line: its pack's chunks are then
    dropped like another pack's, and the missing parts are named for sending again."""
    try:
        previous = json.loads(known.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        problem = str(error)
    else:
        if isinstance(previous, dict) and isinstance(previous.get("files"), list):
            return previous
        problem = "no JSON object with files"
    log(
        f"warning: {known}, kept by an earlier receive, is damaged ({problem}): the parts "
        "received before are dropped; send those named below again"
    )
    return None


def missing_parts(manifest: dict[str, Any], home: Path) -> list[int]:
    absent = set()
    for item in manifest["files"]:
        for chunk in item["chunks"]:
            path = home / "chunks" / chunk["name"]
            if not path.is_file() or path.stat().st_size != chunk["size"]:
                absent.add(chunk["part"])
    return sorted(absent)


def assemble(manifest: dict[str, Any], home: Path) -> Path:
    """Every packed file whole in ``home/files`` (sha256 checked); that folder."""
    missing = missing_parts(manifest, home)
    if missing:
        raise SlotError(
            f"part(s) {', '.join(map(str, missing))} of {manifest['parts']} have not arrived on "
            "this machine: send them (scripts/gpu/slot receive) right before this command"
        )
    files = home / "files"
    for item in manifest["files"]:
        target = files / item["path"]
        if (
            target.is_file()
            and target.stat().st_size == item["size"]
            and sha256_of(target) == item["sha256"]
        ):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as out:
            for chunk in sorted(item["chunks"], key=lambda c: c["offset"]):
                with open(home / "chunks" / chunk["name"], "rb") as source:
                    shutil.copyfileobj(source, out, 4 * 2**20)
        if sha256_of(target) != item["sha256"]:
            raise SlotError(f"{item['path']} does not match its hash after assembly: pack again")
    data = files / "data.tar.xz"
    if data.is_file():  # the trimmed data sets travel as one compressed archive
        shutil.rmtree(files / "data", ignore_errors=True)
        with tarfile.open(data, "r:xz") as packed:
            packed.extractall(files / "data", filter="data")
    return files


def sha256_of(path: Path) -> str:
    """The file's sha256, read in blocks (the GGUF is ~100 MB)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(4 * 2**20), b""):
            digest.update(block)
    return digest.hexdigest()


# ------------------------------------------------------------------ environment
def install(files: Path, home: Path) -> Path:
    """The wheels the image lacks, into ``home/site`` (once per machine); that folder."""
    site = home / "site"
    wheels = sorted((files / "wheels").glob("*.whl")) if (files / "wheels").is_dir() else []
    marker = site / ".installed"
    names = "\n".join(w.name for w in wheels)
    if wheels and not (marker.is_file() and marker.read_text() == names):
        command = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
        command += ["--no-compile", "--no-cache-dir", "--upgrade", "--target", str(site)]
        ran = subprocess.run([*command, *map(str, wheels)], capture_output=True, text=True)
        if ran.returncode:
            raise SlotError(f"installing the carried wheels failed: {ran.stderr.strip()[-400:]}")
        marker.write_text(names)
    site.mkdir(parents=True, exist_ok=True)
    return site


def environment(root: Path, files: Path, home: Path, site: Path) -> dict[str, str]:
    """The children's environment: the tree's source, the carried packages and model, the
    trimmed data, a cache that outlives the command, no network."""
    cache = home / "cache"
    if (files / "cache").is_dir():
        for folder in (files / "cache").iterdir():
            if not (cache / folder.name).exists():
                shutil.copytree(folder, cache / folder.name)
    cache.mkdir(parents=True, exist_ok=True)
    paths = [str(PACKAGE_ROOT / "src"), str(site)]
    if (files / "site").is_dir():
        paths.append(str(files / "site"))
    old = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(paths + ([old] if old else [])),
        "NORMXLOGIT_DATA": str(files / "data"),
        "NORMXLOGIT_CACHE": str(cache),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
    }


def check_torch(env: dict[str, str]) -> str:
    """The installed torch against the range the package declares (pyproject.toml)."""
    code = (
        "import sys, tomllib, torch\n"
        "from packaging.requirements import Requirement\n"
        "from packaging.version import Version\n"
        "deps = tomllib.load(open(sys.argv[1], 'rb'))['project']['dependencies']\n"
        "req = next(Requirement(d) for d in deps if Requirement(d).name == 'torch')\n"
        "v = Version(torch.__version__.split('+')[0])\n"
        "ok = v in req.specifier\n"
        "print(f'torch {torch.__version__} against {req}: ' + ('admitted' if ok else 'REFUSED'))\n"
        "sys.exit(0 if ok else 3)\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code, str(PACKAGE_ROOT / "pyproject.toml")],
        capture_output=True,
        text=True,
        env=env,
    )
    line = (ran.stdout or ran.stderr).strip().splitlines()[-1] if (ran.stdout or ran.stderr) else ""
    if ran.returncode == 3:
        raise SlotError(f"the package's metadata refuses this machine's torch: {line}")
    if ran.returncode:
        raise SlotError(f"could not check this machine's torch against the metadata: {line}")
    return line


# ------------------------------------------------------------------ running
class Clock:
    """Seconds left before the slot's deadline."""

    def __init__(self, seconds: float):
        self.start = time.monotonic()
        self.seconds = seconds

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def left(self) -> float:
        return self.seconds - self.elapsed()


def run_child(
    command: list[str], env: dict[str, str], seconds: float, logfile, cwd: Path
) -> tuple[int, float]:
    """Run ``command``, its output into ``logfile``; stop it after ``seconds`` (SIGTERM, then
    SIGKILL). (return code, seconds it ran); a stopped child's code is -9 or -15."""
    started = time.monotonic()
    logfile.write(f"\n$ {' '.join(command)}\n")
    logfile.flush()
    child = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=logfile, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        code = child.wait(timeout=max(1.0, seconds))
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGTERM)
        try:
            code = child.wait(timeout=STOP_WAIT)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            code = child.wait()
    return code, time.monotonic() - started


def calibrate(
    root: Path, env, device: str, clock: Clock, home: Path, logfile, out: Path
) -> dict[str, Any]:
    """bench_agreement (this device's pi-Soft values against the CPU's) and bench_gpu
    (tokens per forward pass, its ratio to a bare pass), each at most 75 s, once per
    machine; their results. Each keeps the first entry's
    seconds, the export's and a stopped child's wait free: no calibration takes the time
    the queue's first entry needs."""
    done = home / "calibration.json"
    # what earlier slots on this machine measured: only a calibration that produced its
    # result is kept there; one skipped for time, failed or stopped runs again here
    results: dict[str, Any] = {
        name: result for name, result in _cached_calibrations(done).items() if name in CALIBRATIONS
    }
    if set(results) == set(CALIBRATIONS):
        return results
    benchmarks = PACKAGE_ROOT / "benchmarks"
    runs = {
        # first: whether this device computes the CPU's values (the first H200 slot did
        # not, by up to 0.013 of an AUC), and what moves them
        "agreement": [str(benchmarks / "bench_agreement.py"), "--device", device],
        # token budgets that each end inside the calibration's time in float32 on an H200
        # (there, about 128k tokens/s: SST-2 8 texts 0.3M tokens, IMDb 4 reviews 0.8M)
        "gpu": [str(benchmarks / "bench_gpu.py"), "--device", device, "--data", "sst2"]
        + ["imdb", "--texts", "8", "4", "--tokens", "32768", "131072"],
    }
    for name in CALIBRATIONS:
        if name in results:  # measured by an earlier slot on this machine
            continue
        arguments = runs[name]
        target = out / f"calibration-{name}.json"
        target.unlink(missing_ok=True)  # an earlier slot's file is no result of this one
        budget = min(CALIBRATION_SECONDS, clock.left() - EXPORT_RESERVE - MINIMUM_ENTRY - STOP_WAIT)
        if budget < MINIMUM_CALIBRATION:
            log(f"calibration {name}: skipped, too little time left")
            continue
        code, seconds = run_child(
            [sys.executable, *arguments, "--json", str(target)], env, budget, logfile, root
        )
        results[name] = json.loads(target.read_text()) if target.is_file() else {"failed": code}
        results[name]["seconds"] = round(seconds, 1)
        log(
            f"calibration {name}: {'done' if code == 0 else f'stopped ({code})'} in {seconds:.0f} s"
        )
    produced = {name: result for name, result in results.items() if _produced(name, result)}
    if produced:  # one skipped for time, failed or stopped runs again in a later slot
        write_atomically(done, json.dumps(produced))
    return results


def _cached_calibrations(done: Path) -> dict[str, Any]:
    """The calibrations an earlier slot on this machine produced (those of ``done`` that
    did: a file written before only these were kept may hold a failed one); {} when
    there is none, or it is damaged (they run again)."""
    try:
        cached = json.loads(done.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    if not isinstance(cached, dict):
        return {}
    return {name: result for name, result in cached.items() if _produced(name, result)}


def _produced(name: str, result: Any) -> bool:
    """Whether calibration ``name`` gave its result: no ``failed`` code, and for the
    agreement check, a value of the device (it may be stopped before its first)."""
    if not isinstance(result, dict) or "failed" in result:
        return False
    return name != "agreement" or _device_difference(result) is not None


def _device_difference(agreement: dict[str, Any]) -> float | None:
    """The agreement check's largest difference of the device as it comes from the CPU's
    values (bench_agreement's first variant); None where it gave none."""
    variants = agreement.get("variants") if isinstance(agreement, dict) else None
    for name, variant in (variants if isinstance(variants, dict) else {}).items():
        largest = variant.get("largest") if isinstance(variant, dict) else None
        if name.startswith("device as it comes") and isinstance(largest, (int, float)):
            return float(largest)
    return None


#: how far the device's pi-Soft values may lie from this CPU's (bench_agreement's reference):
#: float32 leaves some 2e-6; SmolLM2's tokenizer as transformers 5.17 converted it moved
#: them by 0.038 (its prompts' <|im_end|> were no special tokens, so pi-Soft perturbed them)
AGREEMENT_TOLERANCE = 1e-4


def disagreement(calibration: dict[str, Any]) -> str | None:
    """Why this device's cells would not be this CPU's, or None where they would be (or the
    agreement check did not run). Computed anyway, they would join the CPU's cells in the
    committed stores with nothing to tell them apart: the slot runs no entry instead."""
    agreement = calibration.get("agreement")
    largest = _device_difference(agreement) if isinstance(agreement, dict) else None
    if largest is None or largest <= AGREEMENT_TOLERANCE:
        return None
    cpu = (agreement.get("variants") or {}).get("this machine's CPU")
    mine = cpu.get("largest") if isinstance(cpu, dict) else None
    where = (
        f"; on this machine's CPU too ({mine:.2g}): its software, not the device, moves them"
        if isinstance(mine, (int, float)) and not mine <= AGREEMENT_TOLERANCE
        else ""
    )
    return (
        f"this device does not compute the reference CPU's pi-Soft values "
        f"(largest difference {largest:.2g}, allowed {AGREEMENT_TOLERANCE:g}, "
        f"benchmarks/bench_agreement.py{where}), so no entry ran: its cells would "
        "differ from the committed ones unseen. Find the cause (slot-report.json "
        "holds each variant), or, if the CPU's values changed on purpose, write the "
        "reference again here: .venv/bin/python benchmarks/bench_agreement.py --write-reference"
    )


def unchecked(calibration: dict[str, Any] | None, device: str) -> str | None:
    """Why the agreement check gave no value of this device (None where it gave one, or
    where the slot computes on the CPU without calibrating): the slot still runs its
    entries, its cells unchecked, and says so. ``calibration`` None: not calibrated."""
    if calibration is None:
        return None if device == "cpu" else "--no-calibrate skips it"
    agreement = calibration.get("agreement")
    if agreement is None:
        return "skipped, too little time left before the first entry; a longer deadline runs it"
    if not isinstance(agreement, dict):
        return "bench_agreement gave no result"
    if "failed" in agreement:
        return (
            f"bench_agreement stopped ({agreement['failed']}) before its first value: see "
            "slot-log.txt"
        )
    if _device_difference(agreement) is None:
        return "bench_agreement gave no value of this device: see slot-log.txt"
    return None


def run_queue(
    manifest, root: Path, env, args, clock: Clock, home: Path, logfile, tokens: int | None
):
    """Each entry in order, into its seed's working store, until the deadline."""
    stores = home / "stores"
    stores.mkdir(exist_ok=True)
    done = []
    for entry in manifest["entries"]:
        working = stores / Path(entry["seed"]).name.removesuffix(".xz")
        if not working.exists():
            decompress_store(home / "files" / entry["seed"], working)
        left = clock.left() - EXPORT_RESERVE
        if left < MINIMUM_ENTRY:
            done.append({"entry": entry["name"], "state": "not started (deadline)"})
            _not_started(entry["name"], left, clock, logfile)
            continue
        command = [sys.executable, "-m", "normxlogit", "bench", "run", entry["config"]]
        command += [
            "--store",
            str(working),
            "--device",
            args.device,
            "--deadline",
            f"{left - GRACE:.0f}",
        ]
        for name in entry["experiments"]:
            command += ["--experiment", name]
        for name in entry["methods"]:
            command += ["--method", name]
        if entry["limit"]:
            command += ["--limit", str(entry["limit"])]
        if manifest.get("dtype"):
            command += ["--dtype", manifest["dtype"]]
        if tokens:
            command += ["--tokens-per-forward", str(tokens)]
        if args.rows_per_forward:
            command += ["--rows-per-forward", str(args.rows_per_forward)]
        if args.max_tokens_per_batch:
            command += ["--max-tokens-per-batch", str(args.max_tokens_per_batch)]
        before = _counts(working)
        logfile.flush()
        start = logfile.tell()
        code, seconds = run_child(command, env, left, logfile, root)
        after = _counts(working)
        state = entry_state(code, _written_since(Path(logfile.name), start))
        added = {t: after[t] - before[t] for t in ("explanations", "evaluations")}
        log(f"entry {entry['name']}: {state} in {seconds:.0f} s; added {added}")
        done.append(
            {"entry": entry["name"], "state": state, "seconds": round(seconds, 1), "added": added}
        )
    return done


DEFERRED = re.compile(r"^deadline: (\d+) unit\(s\) left for the next run", re.MULTILINE)


def entry_state(code: int, output: str) -> str:
    """An entry's state from its ``bench run``: "done" only when nothing is left; a run its
    deadline stopped exits 0 too and says how many units it left (the first H200 slot with
    BoolQ reported "done" with 117 of its 130 units left)."""
    if code != 0:
        return f"stopped ({code})"
    deferred = DEFERRED.search(output)
    if deferred:
        return f"stopped (deadline): {deferred.group(1)} unit(s) left"
    return "done"


def _written_since(path: Path, start: int) -> str:
    """What a child wrote to the slot's log after ``start`` (its byte offset)."""
    with open(path, "rb") as written:
        written.seek(start)
        return written.read().decode("utf-8", errors="replace")


def _not_started(name: str, left: float, clock: Clock, logfile) -> None:
    """Say in the slot's log why an entry did not start: without it the log a failed slot
    points to could be empty."""
    line = (
        f"entry {name}: not started (deadline): {_tenths_down(left)} s left before the "
        f"export (the last {EXPORT_RESERVE:.0f} s of the {clock.seconds:g} s deadline; the "
        f"slot has run {clock.elapsed():.1f} s), and an entry needs {MINIMUM_ENTRY:.0f} s; "
        "give the slot a longer deadline"
    )
    log(line)
    print(line, file=logfile, flush=True)


def _tenths_down(seconds: float) -> str:
    """``seconds`` (0 at least) rounded down to a tenth: a time under a minimum never
    reads as the minimum itself (29.96 s left is "29.9", not "30")."""
    return f"{math.floor(max(seconds, 0.0) * 10) / 10:.1f}"


def _counts(store: Path) -> dict[str, int]:
    connection = sqlite3.connect(store, timeout=60)
    try:
        return {
            t: connection.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in ("explanations", "evaluations")
        }
    finally:
        connection.close()


# ------------------------------------------------------------------ exporting
def export(
    manifest, home: Path, out: Path, limit: int = RETURN_FILE_LIMIT
) -> list[tuple[Path, str]]:
    """Each working store's new rows (the seed's left out), compressed, in files of at
    most ``limit`` bytes (split by method when one would be larger); each with the store
    (its path from the repository root) it is merged into."""
    into = {e["seed"]: e.get("store", "") for e in manifest["entries"]}
    written = []
    for seed_path in sorted(into):
        working = home / "stores" / Path(seed_path).name.removesuffix(".xz")
        if not working.exists():
            continue
        seed = home / "stores" / (working.stem + ".seed.sqlite")
        decompress_store(home / "files" / seed_path, seed)
        fresh = home / "stores" / (working.stem + ".new.sqlite")
        _new_rows(working, seed, fresh)
        pieces = _compressed_pieces(fresh, out / f"{working.stem}.slot", limit)
        written += [(piece, into[seed_path]) for piece in pieces]
    return written


def _new_rows(working: Path, seed: Path, target: Path) -> None:
    """A copy of ``working`` without what ``seed`` held (skeleton rows never travel back)."""
    target.unlink(missing_ok=True)
    copy = sqlite3.connect(snapshot_store(working, target))
    try:
        copy.execute("ATTACH DATABASE ? AS seed", (str(seed),))
        keys = "model, dataset, instance, method, seed"
        with copy:
            copy.execute(
                f"DELETE FROM main.explanations WHERE ({keys}) IN "
                f"(SELECT {keys} FROM seed.explanations)"
            )
            copy.execute(
                f"DELETE FROM main.evaluations WHERE ({keys}, metric, protocol) IN "
                f"(SELECT {keys}, metric, protocol FROM seed.evaluations)"
            )
            copy.execute(
                "DELETE FROM main.skipped WHERE (model, dataset, method, seed) IN "
                "(SELECT model, dataset, method, seed FROM seed.skipped)"
            )
        copy.execute("DETACH DATABASE seed")
        copy.execute("VACUUM")
    finally:
        copy.close()


def _compressed_pieces(store: Path, stem: Path, limit: int) -> list[Path]:
    """``store`` as ``STEM.sqlite.xz``, or as ``STEM-K.sqlite.xz`` pieces (methods split
    between them) when one file would exceed ``limit``."""
    whole = stem.with_name(stem.name + ".sqlite.xz")
    compress_store(store, whole)
    if whole.stat().st_size <= limit:
        return [whole]
    whole.unlink()
    connection = sqlite3.connect(store)
    try:  # the cells, those with the most explanation bytes first
        methods = connection.execute(
            "SELECT model, dataset, method, SUM(LENGTH(payload)) FROM explanations "
            "GROUP BY 1, 2, 3 ORDER BY 4 DESC"
        ).fetchall()
        known = {row[:3] for row in methods}
        methods += [
            (*cell, 0)
            for cell in connection.execute(
                "SELECT DISTINCT model, dataset, method FROM evaluations"
            )
            if cell not in known
        ]
    finally:
        connection.close()
    pieces = 2
    while pieces <= max(2, len(methods)):
        groups = [methods[i::pieces] for i in range(pieces)]
        paths = []
        for number, group in enumerate(groups, 1):
            part = store.with_name(f"{store.stem}-{number}.sqlite")
            _only(store, part, [(m, d, k) for m, d, k, _ in group])
            path = stem.with_name(f"{stem.name}-{number}.sqlite.xz")
            compress_store(part, path)
            part.unlink()
            paths.append(path)
        if all(p.stat().st_size <= limit for p in paths):
            return paths
        for path in paths:
            path.unlink()
        pieces += 1
    raise SlotError(f"one method's rows of {store.name} compress to more than {limit} bytes")


def _only(store: Path, target: Path, cells: list[tuple[str, str, str]]) -> None:
    shutil.copyfile(store, target)
    connection = sqlite3.connect(target)
    try:
        connection.execute("CREATE TEMP TABLE kept (model TEXT, dataset TEXT, method TEXT)")
        connection.executemany("INSERT INTO kept VALUES (?, ?, ?)", cells)
        cell = "(model, dataset, method) NOT IN (SELECT model, dataset, method FROM kept)"
        with connection:
            connection.execute(f"DELETE FROM explanations WHERE {cell}")
            for table in ("metric_values", "step_values"):
                connection.execute(
                    f"DELETE FROM {table} WHERE evaluation IN "
                    f"(SELECT id FROM evaluations WHERE {cell})"
                )
            connection.execute(f"DELETE FROM evaluations WHERE {cell}")
            connection.execute(f"DELETE FROM skipped WHERE {cell}")
        connection.execute("VACUUM")
    finally:
        connection.close()


# ------------------------------------------------------------------ the command
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/gpu/slot", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    take = sub.add_parser("receive", help="keep a part of the pack on this machine")
    take.add_argument("part", type=Path)
    go = sub.add_parser("run", help="receive the last part and run the slot")
    go.add_argument("part", type=Path)
    go.add_argument("--deadline", type=float, default=None, help="seconds (default: the queue's)")
    go.add_argument("--device", default="cuda")
    go.add_argument("--out", type=Path, default=None, help="default: $OUT")
    go.add_argument(
        "--no-calibrate",
        action="store_true",
        help=(
            "skip the calibrations: bench_agreement (the check that this device computes "
            "the CPU's pi-Soft values: the cells go unchecked) and bench_gpu"
        ),
    )
    go.add_argument("--tokens-per-forward", type=int, default=None, help="default: calibrated")
    go.add_argument("--rows-per-forward", type=int, default=None, help="a cap; default none")
    go.add_argument(
        "--max-tokens-per-batch",
        type=int,
        default=2**20,
        help="tokens per forward pass at most (memory: IMDb rows are long); 0: no bound",
    )
    for command in (take, go):
        command.add_argument("--home", type=Path, default=DEFAULT_HOME)
    args = parser.parse_args(argv)
    try:
        if args.verb == "run":
            check_run_options(args)  # before receive: a wasted device command costs most
        if args.verb == "receive":
            receive(args.part, args.home)
            return 0
        return run_slot(args)
    except (SlotError, NormXLogitError) as error:  # a store cut short, say
        print(f"error: {error}", file=sys.stderr)
        return 2


def check_run_options(args) -> None:
    """Refuse, in one line, a ``run`` option that would spend the slot for nothing: a
    deadline that is not a finite number of seconds long enough for one entry and the
    export, a size option below 1 (``--max-tokens-per-batch`` 0: no bound)."""
    deadline = args.deadline
    if deadline is not None:
        if not math.isfinite(deadline) or deadline <= 0:
            raise SlotError(
                f"--deadline {deadline:g}: must be a number of seconds above 0 (leave it out "
                "for the queue's deadline)"
            )
        if deadline < MINIMUM_DEADLINE:
            raise SlotError(
                f"--deadline {deadline:g}: a slot needs at least {MINIMUM_DEADLINE:.0f} s "
                f"({MINIMUM_DEADLINE_PARTS}); give more seconds, or leave it out for the queue's"
            )
    for flag, value in (
        ("--tokens-per-forward", args.tokens_per_forward),
        ("--rows-per-forward", args.rows_per_forward),
    ):
        if value is not None and value < 1:
            raise SlotError(f"{flag} {value}: must be at least 1 (leave it out for the default)")
    if args.max_tokens_per_batch < 0:
        raise SlotError(
            f"--max-tokens-per-batch {args.max_tokens_per_batch}: must be at least 1 (0: no bound)"
        )
    out = args.out or (Path(os.environ["OUT"]) if os.environ.get("OUT") else None)
    if out is not None:  # none is refused in run_slot, before receive too
        _check_out(out)


def _check_out(out: Path) -> None:
    """Refuse an ``--out`` the slot could not write its log, report and rows in: a file,
    or a folder (or the nearest existing folder above it) no file can be created in."""
    if out.exists() and not out.is_dir():
        raise SlotError(f"--out {out} is a file; give a folder ($OUT on the device)")
    existing = out
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise SlotError(f"--out {out}: {existing} is a file, not a folder; give another folder")
    try:
        try_writing(existing, f"--out {out}")
    except OutputPathError as error:
        raise SlotError(str(error)) from None
    if out.is_dir():  # an earlier slot's results, which this one's would replace
        earlier = sorted(p.name for p in out.glob("*.slot*.sqlite.xz"))
        earlier += ["slot-report.json"] if (out / "slot-report.json").exists() else []
        if earlier:
            raise SlotError(
                f"--out {out} holds an earlier slot's results ({', '.join(earlier)}), which "
                "this slot's would replace: merge them into their stores with `normxlogit "
                "bench merge` and move them away, or give an empty --out"
            )


def _last_error(log_path: Path) -> str | None:
    """The last ``error:`` line a child wrote to the slot's log (its one-line refusal)."""
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return next((line for line in reversed(lines) if line.startswith("error:")), None)


def run_slot(args) -> int:
    clock_start = time.monotonic()
    out = args.out or (Path(os.environ["OUT"]) if os.environ.get("OUT") else None)
    if out is None:
        raise SlotError("no folder for the results: pass --out DIR (on the device, $OUT is set)")
    root = Path.cwd()
    manifest = receive(args.part, args.home)  # a wrong part is refused before any write
    out.mkdir(parents=True, exist_ok=True)
    clock = Clock(manifest["deadline"] if args.deadline is None else args.deadline)
    if clock.seconds >= COMMAND_SECONDS:
        log(
            f"warning: a deadline of {clock.seconds:.0f} s is not under a device command's "
            f"{COMMAND_SECONDS:.0f} s: a machine that stops the command there loses this "
            "slot's rows (they are exported at the deadline)"
        )
    clock.start = clock_start
    files = assemble(manifest, args.home)
    site = install(files, args.home)
    env = environment(root, files, args.home, site)
    report: dict[str, Any] = {
        "device": args.device,
        "deadline": clock.seconds,
        "torch": check_torch(env),
    }
    log(report["torch"])
    with open(out / "slot-log.txt", "a", encoding="utf-8") as logfile:
        tokens = args.tokens_per_forward
        refused = None
        if not args.no_calibrate:
            report["calibration"] = calibrate(
                root, env, args.device, clock, args.home, logfile, out
            )
            tokens = tokens or report["calibration"].get("gpu", {}).get("tokens_per_forward")
            refused = disagreement(report["calibration"])
        report["tokens_per_forward"] = tokens
        why_not = unchecked(report.get("calibration"), args.device)
        if refused:
            report["agreement"] = "refused: this device's values differ from the CPU's"
            _log_both(f"no entry runs: {refused}", logfile)
            report["refused"] = refused
            report["entries"] = []
        else:
            if why_not:  # the slot runs on (a short deadline leaves no calibration time)
                report["agreement"] = f"not checked: {why_not}"
                warning = (
                    f"warning: the agreement check did not run ({why_not}): this slot's "
                    "cells are not checked against the CPU's"
                )
                print(warning, file=logfile, flush=True)
                print(warning, file=sys.stderr, flush=True)
            elif "calibration" in report:
                largest = _device_difference(report["calibration"]["agreement"])
                report["agreement"] = (
                    f"checked: largest difference {largest:.2g} (allowed {AGREEMENT_TOLERANCE:g})"
                )
            report["entries"] = run_queue(
                manifest, root, env, args, clock, args.home, logfile, tokens
            )
    written = export(manifest, args.home, out)
    report["returned"] = [p.name for p, _ in written]
    report["merge_into"] = {p.name: store for p, store in written}
    report["seconds"] = round(clock.elapsed(), 1)
    (out / "slot-report.json").write_text(json.dumps(report, indent=1))
    with open(out / "slot-log.txt", "a", encoding="utf-8") as logfile:
        _log_both(
            f"wrote {', '.join(report['returned']) or 'no store'} in {report['seconds']} s",
            logfile,
        )
        for path, store in written:
            if store:
                _log_both(f"merge: normxlogit bench merge OUT/{path.name} --into {store}", logfile)
    for name in CALIBRATIONS:  # in slot-report.json: files back are few
        (out / f"calibration-{name}.json").unlink(missing_ok=True)
    if refused:
        print(f"error: {refused}", file=sys.stderr)
        return 3
    entries = report["entries"]
    progress = any(e["state"] == "done" or any(e.get("added", {}).values()) for e in entries)
    if entries and not progress:  # every entry refused or stopped with nothing added
        reason = _last_error(out / "slot-log.txt")
        states = ", ".join(f"{e['entry']}: {e['state']}" for e in entries)
        print(
            f"error: no entry of the slot ran ({states})"
            + (f"; the last refusal: {reason}" if reason else "; see slot-log.txt"),
            file=sys.stderr,
        )
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
