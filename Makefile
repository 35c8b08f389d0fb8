# dgd-operator: `make run` and `make test` set everything up on first use (Python 3.11 and make only).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONSTRAINTS := requirements/constraints.txt

.PHONY: run test lint format crds manifests bench clean kube kube-for-tests kube-up kube-down test-k8s

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
# build takes ~15-20 min on 2 cores and ~4 GB of Go build cache). KUBE_VERSION=1.x.y picks another
# release for kube, kube-up and test-k8s (its Go module is generated into kube-<version>/module/);
# `make test` always runs the pinned one.
KUBE_STATE ?= $(or $(XDG_STATE_HOME),$(HOME)/.local/state)/dgd-operator/kube
KUBE_VERSION ?=
# What the tier reads (tests/real/controlplane.py): empty means the version hack/kube/go.mod pins.
KUBE_ENV = DGD_KUBE_VERSION=$(KUBE_VERSION)

## kube-for-tests: the control plane for the real-server tier, or one line saying why it will skip
kube-for-tests:
	@hack/kube/ensure.sh

## kube: build the control-plane binaries (nothing to do when they are up to date); KUBE_VERSION=1.x.y for another
kube:
	hack/kube/build.sh $(KUBE_VERSION)

## kube-up: start etcd, kube-apiserver and kube-controller-manager on 127.0.0.1 in the background
kube-up: kube $(STAMP)
	$(KUBE_ENV) $(BIN)/python -m tests.real.controlplane up --state $(KUBE_STATE)

## kube-down: stop what kube-up started
kube-down: $(STAMP)
	$(BIN)/python -m tests.real.controlplane down --state $(KUBE_STATE)

## test-k8s: the real-server tier alone (pytest -m real) on KUBE_VERSION=1.x.y (default: the pinned one),
## built on first use from the build cache; KUBEBUILDER_ASSETS is ignored here
test-k8s: kube $(STAMP)
	env -u KUBEBUILDER_ASSETS $(KUBE_ENV) $(BIN)/pytest -q -m real
# ---- end of the real control plane ---------------------------------------------------------------------
