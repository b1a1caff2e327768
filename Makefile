# `make demo` and `make test` install what is missing first (scripts/install-deps.sh).
DFSLAB := .venv/bin/dfslab
PYTEST := .venv/bin/pytest

.PHONY: install-deps demo test test-unit clean

install-deps:
	bash scripts/install-deps.sh

demo: install-deps
	$(DFSLAB) run examples/quickstart.yaml

test: install-deps
	$(PYTEST) -v -ra tests

test-unit: install-deps
	$(PYTEST) -v -m "not cluster" tests

clean:
	-$(DFSLAB) down --all
	rm -rf .venv runs
