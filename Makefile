# dgd-operator: `make run` and `make test` set everything up on first use (Python 3.11 and make only).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONSTRAINTS := requirements/constraints.txt

.PHONY: run test lint format crds manifests bench clean kube kube-for-tests kube-up kube-down

$(STAMP): pyproject.toml $(CONSTRAINTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c $(CONSTRAINTS) -e '.[dev]'
	touch $@

## run: run the operator on the embedded simulated cluster until the aggregated vLLM example is ready
run: $(STAMP)
	$(BIN)/dgd-operator sim apply examples/agg.yaml --until-ready

## test: lint, type-check, build the real control plane on first use, then run the whole test suite
test: lint kube-for-tests
	$(BIN)/pytest -q

## lint: ruff, mypy --strict and the import contracts (import-linter, pyproject.toml)
lint: $(STAMP)
	$(BIN)/ruff check dgd tests bench deploy
	$(BIN)/ruff format --check dgd tests bench deploy
	$(BIN)/mypy --strict dgd
	$(BIN)/lint-imports --no-cache

format: $(STAMP)
	$(BIN)/ruff format dgd tests bench deploy
	$(BIN)/ruff check --fix dgd tests bench deploy

## crds: regenerate deploy/crds/ from the data model
crds: $(STAMP)
	$(BIN)/dgd-operator crds --output-dir deploy/crds

## manifests: regenerate deploy/rbac/ and deploy/manifests/ (RBAC, ConfigMap, Deployment, Service)
manifests: $(STAMP)
	$(BIN)/python deploy/generate.py

## bench: decoding, actor-runtime and cluster benchmarks (see bench/README.md)
bench: $(STAMP)
	$(BIN)/python bench/decode.py
	$(BIN)/python bench/actors.py
	$(BIN)/python bench/cluster.py
	$(BIN)/python bench/sim.py
	$(BIN)/python bench/keys.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis

# ---- Real Kubernetes control plane (hack/kube/, tests/real/) ----------------------------------------
# Upstream kube-apiserver, kube-controller-manager, etcd and kubectl, built once from the Go modules pinned
# in hack/kube/go.mod into ${XDG_CACHE_HOME:-~/.cache}/dgd-operator/kube-<version>/ (needs Go; a cold
# build takes ~15-20 min on 2 cores and ~4 GB of Go build cache).
KUBE_STATE ?= $(or $(XDG_STATE_HOME),$(HOME)/.local/state)/dgd-operator/kube

## kube-for-tests: the control plane for the real-server tier, or one line saying why it will skip
kube-for-tests:
	@hack/kube/ensure.sh

## kube: build the control-plane binaries (nothing to do when they are up to date)
kube:
	hack/kube/build.sh

## kube-up: start etcd, kube-apiserver and kube-controller-manager on 127.0.0.1 in the background
kube-up: kube $(STAMP)
	$(BIN)/python -m tests.real.controlplane up --state $(KUBE_STATE)

## kube-down: stop what kube-up started
kube-down: $(STAMP)
	$(BIN)/python -m tests.real.controlplane down --state $(KUBE_STATE)
# ---- end of the real control plane ---------------------------------------------------------------------
