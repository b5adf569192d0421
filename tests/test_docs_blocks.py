"""Every code block in the docs runs as written (the project's rule), here.

Each page of ``docs/`` and the README is read for its fenced blocks; a page's blocks run
in order, in one namespace per page (a reader pasting them one after the other), in a
temporary working directory laid out like the repository (``experiments/*.toml`` copied,
``../shared`` the shared data), within the page's budget of CPU time (``BUDGETS``).

- ```` ```python ```` blocks all run, unless an HTML comment right above the block says
  ``<!-- docs-test: skip (REASON) -->``: a block that cannot run here (a GPU, a model hub,
  a file the reader supplies). The reason is required, and the page must tell the reader
  the same: REASON appears in the page's visible text too.
- ```` ```bash ```` blocks run only when marked ``<!-- docs-test: run -->``: cheap
  ``normxlogit ...`` commands (``--help``, ``explain``, a small ``evaluate --limit``).
  Long runs (a bench over a full grid, ``serve``, ``make``) are left unmarked.
- Results shown in comments (``# 'positive'``) are not asserted: the blocks only run.

A page whose blocks run the built-in models is marked ``real`` (``make test`` runs it).
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

#: CPU seconds a page's blocks may use together, its commands' included (CPU time, not
#: wall-clock time, so that a busy machine does not fail a page): about twice what each
#: page used on 2 busy CPU cores. A page past it is stopped: make its blocks smaller.
BUDGET = 80
BUDGETS = {
    "README.md": 150,
    "docs/guide/context.md": 120,
    "docs/guide/evaluating.md": 100,
    "docs/guide/generation.md": 120,
    "docs/guide/sanity.md": 120,
}
#: a page is also stopped after WALL times its budget in wall-clock time (a block that hangs)
WALL = 10

FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
MARK = re.compile(r"<!--\s*docs-test:\s*(.*?)\s*-->")
SKIP = re.compile(r"skip\s*\((.+)\)", re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)
#: fence labels a reader would take for python or shell, which this test would not run
UNREAD = {"py", "python3", "pycon", "sh", "shell", "console", "zsh"}
#: what marks a page as running the built-in models
REAL = re.compile(r"normxlogit\.load\(|^normxlogit ", re.M)
#: what marks a page as reading the shared data sets
DATA = re.compile(r"shared/data|load_dataset|read_sst2|read_blimp|read_boolq|\.tsv\b")


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository
    line: int  # of the opening fence
    language: str
    code: str
    mark: str | None  # the docs-test comment right above it, if any

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def skip_reason(self) -> str | None:
        found = SKIP.fullmatch(self.mark or "")
        return " ".join(found.group(1).split()) if found else None

    @property
    def runs(self) -> bool:
        if self.language == "python":
            return self.skip_reason is None
        return self.language == "bash" and self.mark == "run"


def read_blocks(text: str, name: str) -> list[Block]:
    """The fenced blocks of a page's ``text`` (``name``: the page, as messages show it)."""
    found = []
    for fence in FENCE.finditer(text):
        before = text[: fence.start()].rstrip().rsplit("\n", 1)[-1].strip()
        mark = MARK.fullmatch(before)
        found.append(
            Block(
                page=name,
                line=text.count("\n", 0, fence.start()) + 1,
                language=fence.group(1),
                code=fence.group(2),
                mark=mark.group(1) if mark else None,
            )
        )
    return found


def mark_problems(text: str, blocks: list[Block]) -> list[str]:
    """What is wrong with a page's docs-test marks: an unknown mark, one that marks no
    block, a skip without its reason or whose reason the page does not tell the reader."""
    problems = []
    if len(MARK.findall(text)) != sum(b.mark is not None for b in blocks):
        problems.append("a docs-test mark that is not right above a code block")
    visible = " ".join(COMMENT.sub(" ", text).split()).lower()
    for block in blocks:
        if block.language in UNREAD:
            problems.append(f"{block.where}: label it python or bash, not {block.language}")
        if block.mark is None:
            continue
        if block.mark.startswith("skip"):
            reason = block.skip_reason
            if block.language != "python":
                problems.append(f"{block.where}: only python blocks are skipped")
            elif not reason:
                problems.append(f"{block.where}: a skip needs its reason: skip (needs a GPU)")
            elif reason.lower() not in visible:
                problems.append(
                    f"{block.where}: the page does not tell the reader why the block cannot "
                    f"run here: put '{reason}' in its text too"
                )
        elif block.mark != "run":
            problems.append(f"{block.where}: unknown docs-test mark {block.mark!r}")
        elif block.language != "bash":
            problems.append(f"{block.where}: 'run' marks bash blocks only")
    return problems


TEXTS = {page: page.read_text(encoding="utf-8") for page in PAGES}
BLOCKS = {page: read_blocks(TEXTS[page], page.relative_to(ROOT).as_posix()) for page in PAGES}
RUN = [page for page, blocks in BLOCKS.items() if any(b.runs for b in blocks)]


def _param(page: Path):
    code = "\n".join(b.code for b in BLOCKS[page] if b.runs)
    marks = [pytest.mark.real] if REAL.search(code) else []
    return pytest.param(page, marks=marks, id=page.relative_to(ROOT).as_posix())


def test_every_mark_is_known_and_every_skip_says_why(capsys):
    problems = [p for page in PAGES for p in mark_problems(TEXTS[page], BLOCKS[page])]
    assert not problems, "\n".join(problems)
    every = [b for blocks in BLOCKS.values() for b in blocks]
    skipped = [b for b in every if b.skip_reason]
    python = [b for b in every if b.language == "python"]
    bash = [b for b in every if b.language == "bash"]
    with capsys.disabled():
        print(
            f"\ndocs blocks: {len(RUN)} pages run; {len(python) - len(skipped)} of "
            f"{len(python)} python blocks and {sum(b.runs for b in bash)} of {len(bash)} "
            f"bash blocks run; {len(skipped)} skipped"
            + "".join(f"\n  skipped {b.where}: {b.skip_reason}" for b in skipped)
        )
    assert len(skipped) <= 5, "skips are for what cannot run here: keep them rare"


def test_the_marks_are_read_from_the_comment_right_above_a_block():
    page = """Run on a GPU only (needs a GPU).

<!-- docs-test: skip (needs a GPU) -->
```python
model = normxlogit.load("smollm2-sst2", device="cuda")
```

<!-- docs-test: run -->

```bash
normxlogit explain "A gripping film."
```

```bash
normxlogit serve
```
"""
    gpu, explain, serve = read_blocks(page, "page.md")
    assert (gpu.skip_reason, gpu.runs, gpu.line) == ("needs a GPU", False, 4)
    assert explain.runs and not serve.runs
    assert mark_problems(page, [gpu, explain, serve]) == []
    untold = page.replace("Run on a GPU only (needs a GPU).", "")
    assert "tell the reader" in mark_problems(untold, read_blocks(untold, "page.md"))[0]
    bare = page.replace("skip (needs a GPU)", "skip")
    assert "needs its reason" in mark_problems(bare, read_blocks(bare, "page.md"))[0]
    stray = page.replace(
        "<!-- docs-test: run -->\n\n```bash", "<!-- docs-test: run -->\nText.\n```bash"
    )
    assert "not right above" in mark_problems(stray, read_blocks(stray, "page.md"))[0]


def test_a_marked_bash_block_runs_cheap_normxlogit_commands_only():
    """A marked block runs ``normxlogit`` commands that end by themselves, soon: no page
    server, no built-in model replaced, and a training, evaluation or bench run sized."""
    sized = {"train": "--train-size", "evaluate": "--limit", "bench": "--limit"}
    for blocks in BLOCKS.values():
        for block in blocks:
            if block.language != "bash" or not block.runs:
                continue
            for command in _commands(block.code):
                words = [*command.split(), "", ""]  # room for a missing subcommand
                assert words[0] == "normxlogit", f"{block.where}: {command}"
                assert words[1] != "serve", f"{block.where}: serve does not end: {command}"
                assert "--overwrite-builtin" not in words, f"{block.where}: {command}"
                runs = words[1] != "bench" or words[2] == "run" or words[2].endswith(".toml")
                if words[1] in sized and runs:
                    assert sized[words[1]] in command, f"{block.where}: unsized: {command}"


def _commands(code: str) -> list[str]:
    joined = re.sub(r"\\\n\s*", " ", code)
    lines = (re.sub(r"(^|\s)#.*$", "", line).strip() for line in joined.splitlines())
    return [line for line in lines if line]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A working directory laid out like the repository's: experiments/ (the configs)
    and ../shared beside it."""
    here = tmp_path / "main"
    (here / "experiments").mkdir(parents=True)
    for config in (ROOT / "experiments").glob("*.toml"):
        shutil.copy(config, here / "experiments")
    if SHARED.is_dir():
        (tmp_path / "shared").symlink_to(SHARED)
    monkeypatch.chdir(here)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return here


class OverBudget(Exception):
    pass


def cpu_seconds() -> float:
    """CPU time of this process (every thread) and of its finished children."""
    return sum(
        usage.ru_utime + usage.ru_stime
        for usage in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


@contextmanager
def budget(seconds: float, what: str):
    """Stop the page once it has used ``seconds`` of CPU time (SIGPROF), or ``WALL`` times
    that of wall-clock time (SIGALRM: a block that hangs). Signals reach the main thread
    only; elsewhere the blocks run unstopped and the CPU time is checked afterwards."""

    def stop(signum, frame):
        kind = "CPU" if signum == signal.SIGPROF else "wall-clock"
        raise OverBudget(f"{what} ran past its budget of {seconds:.0f} s of {kind} time")

    timers = (
        (signal.SIGPROF, signal.ITIMER_PROF, seconds),
        (signal.SIGALRM, signal.ITIMER_REAL, WALL * seconds),
    )
    previous = {}
    try:
        for number, timer, limit in timers:
            previous[number] = signal.signal(number, stop)
            signal.setitimer(timer, limit)
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        for number, timer, _ in timers:
            if number in previous:
                signal.setitimer(timer, 0)
                signal.signal(number, previous[number])


@pytest.mark.parametrize("page", [_param(page) for page in RUN])
def test_the_page_runs_as_written(page, workdir):
    name = page.relative_to(ROOT).as_posix()
    if not (SHARED / "data").is_dir() and DATA.search(TEXTS[page]):
        pytest.skip(f"{name} reads the shared data, which is not here")
    seconds = BUDGETS.get(name, BUDGET)
    namespace: dict = {"__name__": "__main__"}
    started, cpu = time.monotonic(), cpu_seconds()
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    with budget(seconds, name):
        for block in BLOCKS[page]:
            if not block.runs:
                continue
            if block.language == "python":
                exec(compile(block.code, block.where, "exec", dont_inherit=True), namespace)
                continue
            left = WALL * seconds - (time.monotonic() - started)
            ran = subprocess.run(
                ["bash", "-e", "-o", "pipefail", "-c", block.code],
                cwd=workdir,
                env=env,
                capture_output=True,
                text=True,
                timeout=max(left, 1),
            )
            assert ran.returncode == 0, f"{block.where}:\n{ran.stdout[-2000:]}{ran.stderr[-4000:]}"
    used = cpu_seconds() - cpu
    print(f"{name}: {used:.0f} s of CPU time, {time.monotonic() - started:.0f} s")
    assert used <= seconds, f"{name} used {used:.0f} s of CPU time, over its budget of {seconds} s"
