"""Input paths: say what is wrong with a path a user named, before reading it.

"does not exist" is only said of paths that do not; a folder, a device such as
``/dev/null``, a pipe or an unreadable file each get their own words and the fix. This
module imports nothing heavy (the CLI checks paths before loading torch).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import InvalidInputError


def check_input_file(
    path: str | os.PathLike, what: str, fix: str, error: type[InvalidInputError] = InvalidInputError
) -> Path:
    """``path`` if it is a regular file this process can read; else ``error`` naming
    ``what`` (``"data file"``), the path, the problem and ``fix``."""
    target = Path(path)
    shown = f"{what} {target}"
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        raise error(f"{shown} does not exist; {fix}") from None
    except OSError as problem:
        raise error(f"cannot read {shown}: {problem.strerror or problem}; {fix}") from None
    if stat.S_ISDIR(mode):
        raise error(f"{shown} is a folder, not a file; {fix}")
    if not stat.S_ISREG(mode):
        kind = "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a pipe or socket"
        raise error(f"{shown} is {kind}, not a regular file; {fix}")
    if not os.access(target, os.R_OK):
        raise error(f"{shown} cannot be read (no permission); {fix}")
    return target
