# `make demo` and `make test` install what is missing first (scripts/install-deps.sh).
# `make` alone builds the native code: native/cls_dfslab, the object class for query pushdown.
DFSLAB := .venv/bin/dfslab
PYTEST := .venv/bin/pytest

.PHONY: all native install-deps demo test test-unit clean

all: native

native:
	$(MAKE) -C native/cls_dfslab OUT=$(CURDIR)/build/cls

install-deps:
	bash scripts/install-deps.sh

demo: install-deps native
	$(DFSLAB) run examples/quickstart.yaml

test: install-deps native
	$(PYTEST) -v -ra tests

test-unit: install-deps native
	$(PYTEST) -v -m "not cluster" tests

clean:
	-$(DFSLAB) down --all
	-$(MAKE) -C native/cls_dfslab clean OUT=$(CURDIR)/build/cls
	rm -rf .venv runs
