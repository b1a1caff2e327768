# `make demo` and `make test` install what is missing first (scripts/install-deps.sh: Debian's
# packages and the venv; the demo only its own group). The Kubernetes and Rook build
# (scripts/build-kubernetes.sh, 5-11 min cold, cached after) is only for runtime kubernetes: dfslab
# runs it on first use, `make install-deps` runs it ahead, and `make test` runs it in the
# background beside the tests that do not need it.
# `make` alone builds the native code: native/cls_dfslab, the object class for query pushdown.
DFSLAB := .venv/bin/dfslab
N ?= 3

.PHONY: all native install-base install-deps demo test test-unit test-quick test-repeat clean

all: native

native:
	$(MAKE) -C native/cls_dfslab OUT=$(CURDIR)/build/cls

install-base:
	bash scripts/install-deps.sh

install-deps: install-base
	bash scripts/build-kubernetes.sh all

# `make demo` installs only what the quickstart needs (group demo of src/dfslab/debian-packages.txt,
# and dfslab's Python packages without the test tools): GlusterFS, Docker's and Kubernetes' pieces
# are installed by dfslab on their first use, and the object class is built by the first pushdown
# workload (the quickstart has none). It ends with the time of each phase.
demo:
	@start=$$(date +%s); bash scripts/install-deps.sh demo || exit $$?; installed=$$(date +%s); \
	$(DFSLAB) run examples/quickstart.yaml; rc=$$?; end=$$(date +%s); \
	echo "make demo: install $$((installed - start)) s, quickstart $$((end - installed)) s, total $$((end - start)) s"; \
	exit $$rc

# The whole suite in timed phases, the 30 slowest tests and the totals at the end (docs/testing.md).
test: install-base native
	bash scripts/test-suite.sh all

# Between changes: the unit tests (under 3 min), or those and one small cluster end to end (under 10).
test-unit: install-base native
	bash scripts/test-suite.sh unit

test-quick: install-base native
	bash scripts/test-suite.sh quick

# The flake hunt: every cluster test N times in a row (default 3); see docs/testing.md.
test-repeat: install-deps native
	bash scripts/test-repeat.sh $(N)

clean:
	-$(DFSLAB) down --all
	-$(MAKE) -C native/cls_dfslab clean OUT=$(CURDIR)/build/cls
	rm -rf .venv runs
