# The two commands of the README, and the pieces they are made of.
# `make demo` runs the main job; `make test` runs the project's tests (CI runs it).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit slurm-local containers clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# compat: a path entry, not an import hook, so that mypy run from elsewhere finds the
	# packages (and their py.typed) as an outside harness author's would.
	$(BIN)/python -m pip install --quiet -e '.[dev,containers]' --config-settings editable_mode=compat
	touch $(STAMP)

# The conformance suite against the built-in memory and simulator harnesses, the capability
# matrix it wrote, what each harness covered, and last the verdict; the exit status is the
# suite's (1 when a check fails). The harnesses run side by side, one process each, as many at
# once as there are cores (JOBS).
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
demo: $(STAMP)
	$(BIN)/dispatch-conformance run --harness memory-slurm --harness memory-kubeflow --harness slurm-sim --harness slurm-sim-nocomment --harness kubeflow-sim --harness kubeflow-sim-kueue --jobs $(JOBS) --report-dir reports --print-matrix

# ruff, then the layering of DESIGN §2 (the contracts are [tool.importlinter] in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy --strict dispatch_core adapters simulators conformance tools

# The project's tests on every core (pytest-xdist), but those that drive the real Slurm
# (marker slurm_real: they need a quiet cluster and its id counter), which run after, alone.
unit: $(STAMP)
	$(BIN)/python -m pytest -n auto -m "not slurm_real and not containers"
	$(BIN)/python -m pytest -m slurm_real

# The conformance suites against the real Slurm on this machine (ci/slurm-up.sh starts one):
# without one every check is skipped with the reason, except under CI=true, where they fail.
SLURM_MODE = $(shell scontrol show config 2>/dev/null | grep -q 'AccountingStoreFlags *= *.*job_comment' && echo comment || echo nocomment)
# SLURM_CHECKS narrows the run to those check ids or prefixes (CI's second accounting mode).
SLURM_CHECKS ?=
slurm-local: $(STAMP)
	$(BIN)/dispatch-conformance run --harness slurm-local --report-dir reports/slurm-local-$(SLURM_MODE) $(foreach c,$(SLURM_CHECKS),--check $(c))

# Mutation testing of the adapters by the conformance suite alone (issue 12; not part of make
# test): mutmut ([tool.mutmut] in pyproject.toml, working directory mutants/), incremental, then
# the figures per module and per goal area against the goal, and the wall time. MUTATION_ARGS
# passes options (e.g. --fresh, --report-only; python -m tools.mutation --help).
MUTATION_ARGS ?=
.PHONY: mutation
mutation: $(STAMP)
	$(BIN)/python -m tools.mutation $(MUTATION_ARGS)

# A multi-node Slurm in containers (ci/docker-up.sh starts the engine): the cluster's own tests
# (a job across nodes, SSH, real node loss, cleanup), then the suite on slurm-containers
# (docker exec) beside slurm-containers-ssh (the adapter's SSH transport), each dealt over two
# clusters (--shards 2): four clusters at once, mostly waiting on their schedulers.
# Without an engine everything skips with the reason, except under CI=true, where it fails.
CONTAINER_TESTS = $(BIN)/python -m pytest -m containers tests/containers
CONTAINER_SUITES = $(BIN)/dispatch-conformance run --harness slurm-containers --harness slurm-containers-ssh --shards 2 --jobs 4 --report-dir reports/slurm-containers
containers: $(STAMP)
	@echo '$(CONTAINER_TESTS)'; t=$$(date +%s); $(CONTAINER_TESTS); rc=$$?; \
	echo "containers: the cluster's tests took $$(($$(date +%s) - t)) s"; exit $$rc
	@echo '$(CONTAINER_SUITES)'; t=$$(date +%s); $(CONTAINER_SUITES); rc=$$?; \
	echo "containers: the suites took $$(($$(date +%s) - t)) s"; exit $$rc

# The real clusters' suites side by side: each mostly waits on its own scheduler (the host's
# Slurm, the clusters in containers), and each target's output is printed whole when it ends.
test: lint typecheck unit
	$(MAKE) --no-print-directory -j2 --output-sync=target slurm-local containers

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
