# The two commands of the README. Each does every set-up step itself on a fresh machine, inside
# a virtualenv (.venv): nothing is pip-installed into the system interpreter.
VENV ?= .venv
PYTHON = $(VENV)/bin/python
OUT ?= out
DRALAB = $(PYTHON) -m dralab.cli

.PHONY: packages setup certify certify-nvml selfcheck seeds matrix mutants mutants-list qualify test test-unit test-e2e test-long test-faults test-kind test-ci-templates perf-check perf-allocator soak bench-load lint

$(PYTHON):
	python3 -m venv $(VENV)

# Python packages into the virtualenv, again only when pyproject.toml changes (the install is
# editable: dralab's own sources need none, but its entry points, the pytest plugin's among them,
# are read from the install); pip's resolve took 10-16 s of every warm run.
INSTALLED = $(VENV)/.dralab-installed
packages: $(INSTALLED)
$(INSTALLED): pyproject.toml | $(PYTHON)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

# Python packages, then Debian packages and every pinned component (cached under /var/cache/dralab).
setup: packages
	$(DRALAB) provision

# The main job: run the conformance suites on the embedded local cluster and write the results to $(OUT).
certify: setup
	$(DRALAB) certify --out $(OUT)

# The reference GPU driver finding its GPUs through the lab's NVML (HW-10), certified alone; not part of test.
certify-nvml: setup
	$(DRALAB) certify --driver gpu-nvml --out $(OUT)-nvml

# MUT-01/MUT-02, not part of test: every variant of the reference drivers certified on shared labs and
# judged (broken ones FAIL what they break, valid ones are CERTIFIED); selfcheck.json and .html in $(SELFCHECK).
SELFCHECK ?= selfcheck
selfcheck: setup
	$(DRALAB) selfcheck --out $(SELFCHECK)

# MUT-03's sweep for false FAILs, not part of test: the reference DRA drivers and every valid variant of
# them certified on the checks over generated workloads (KP-03 to KP-07; MD-01 to -04, -08, -10, -16, -19;
# ST-02, -07, -08), drawn with seeds 1 to $(SEEDS) in turn, none may FAIL; selfcheck.json and .html in
# $(SWEEP). 13 to 32 minutes a case with 10 seeds (794-1891 s measured), 21 cases.
SEEDS ?= 10
SWEEP ?= seeds
seeds: setup
	$(DRALAB) selfcheck --seeds $(SEEDS) --out $(SWEEP)

# The nightly job, not part of test: each Kubernetes version's cluster qualified by Kubernetes' own DRA
# e2e suite, then every shipped driver profile (reference and public) certified on each version dralab
# provisions; matrix.json and .html in $(MATRIX), its history kept there.
MATRIX ?= matrix
matrix: setup
	$(DRALAB) matrix --qualify --out $(MATRIX)

# Mutation testing of the reference drivers (issue 52), not part of test: go-mutesting's mutants of the
# drivers' code that the suites observe (reports/mutant_listing.py lists the files and why), $(BUDGET) of
# them drawn with $(SEED), each built into the drivers image and certified on its drivers' requirements on
# shared labs; mutants.json, .html and history.json in $(MUTANTS). One certification or two a mutant (the
# profiles of the programs holding the mutated file): minutes each. Exit 1 when one survived that
# reports/mutant_equivalents.yaml does not write up as equivalent. `make mutants-list` builds go-mutesting
# (from the Go module proxy, cached) and lists every mutant, building and running nothing else (1-2 minutes).
BUDGET ?= 10
SEED ?= 1
MUTANTS ?= mutants
mutants: setup
	$(DRALAB) mutants --budget $(BUDGET) --seed $(SEED) --out $(MUTANTS)

mutants-list: packages
	$(DRALAB) mutants --list

# Is the cluster DRA-ready? Kubernetes' own DRA e2e suite (test/e2e/dra, built from the k8s.io/kubernetes
# module) on a local lab and on a kind lab, each judged in full; qualification.html and .json, junit.xml and
# ginkgo.log in $(QUALIFY)-local and $(QUALIFY)-kind. Not part of test (make test runs five of its specs).
QUALIFY ?= qualify
qualify: setup
	$(DRALAB) qualify --out $(QUALIFY)-local; local=$$?; \
	$(DRALAB) qualify --cluster kind --out $(QUALIFY)-kind; kind=$$?; \
	$(DRALAB) residue && [ $$local -eq 0 ] && [ $$kind -eq 0 ]

# Whole performance runs (minutes each): `make perf-check`, not part of test.
PERF_RUNS = tests/e2e/test_perf.py suites/derived_attributes/test_scale.py
# docs/ci's templates run as their CI systems would: `make test-ci-templates`, not part of test.
CI_TEMPLATES = tests/e2e/test_ci_templates.py

# Lab faults beyond what make test keeps (a dead component named with its log, SIGTERM and Ctrl-C to certify):
# containerd killed under a check, a kubelet or containerd killed mid-certification (INCOMPLETE, never a FAIL),
# and SIGTERM to perf and selfcheck. `make test-faults`, about 9 minutes, not part of test.
FAULT_RUNS = tests/e2e/test_verdicts.py::test_containerd_dying_under_a_metadata_check_is_an_error_naming_containerd \
	tests/e2e/test_verdicts.py::test_a_component_killed_mid_certification_makes_it_incomplete_never_not_certified \
	tests/e2e/test_stopping.py::test_sigterm_tears_down_every_lab_the_command_started[perf] \
	tests/e2e/test_stopping.py::test_sigterm_tears_down_every_lab_the_command_started[selfcheck]

# The e2e tests of what lies beyond the local lab and the suites (kind and its node image, Kubernetes' own DRA
# suite built and run by dralab qualify, the reference drivers' deployments and variants certified, the guide's
# certification, the wheel, a fresh clone's setup, the hardware readers' libraries, the NVML driver): `make
# test-e2e`, about 26 minutes, not part of test, whose cold run (dralab provision building every component:
# 29 minutes on a fresh machine) they took past the 60-minute budget.
E2E_RUNS = tests/e2e/test_kind_provider.py tests/e2e/test_qualify.py tests/e2e/test_reference_drivers.py \
	tests/e2e/test_verdicts.py tests/e2e/test_certify_guide.py tests/e2e/test_wheel.py tests/e2e/test_clean_setup.py \
	tests/e2e/test_hardware_readers.py tests/e2e/test_nvml_driver.py tests/e2e/test_nvml_library.py

# The longest e2e runs, each a whole certification: dralab selfcheck on a broken and a valid variant (its
# subset; `make selfcheck` runs all) and every shipped public driver (dra-example-driver, dranet, nvidia-gpu,
# dra-driver-cpu) built from its module and certified on DEP and KP, its FAILs held to its profile's findings.
# `make test-long`, about 40 minutes, not part of test (which they took over the 60-minute budget).
LONG_RUNS = tests/e2e/test_selfcheck.py tests/e2e/test_public_drivers.py

# ST-09's reproduction FAILs on the Kubernetes versions dralab builds: the cluster's bug (docs/drivers.md, the refusal of
# status applies), which certify reports as such; tests/e2e/test_certify.py checks that it does, in make test.
CLUSTER_REFUSES = suites/resource_claim_status/test_status_api.py::test_a_status_apply_is_accepted_whatever_the_claims_encoding[as the kubernetes Python client sends it]

# Go unit tests of the rooms' modules (as root: the netns tests make namespaces) and of the
# allocator benchmark (both variants place alike; one timed iteration each), unit tests,
# the local lab's own e2e tests (up, down, residue, faults, stopping, certify's bad input and Ctrl-C, a
# kubeconfig cluster, kwok nodes) and the suites on a local lab; then nothing may be left behind. The 25
# slowest tests are listed at the end: the 60-minute budget is spent there.
test: lint setup
	go test $(GO_ROOMS:%=./%/...)
	cd reports/perf/allocbench && go test -bench . -benchtime 1x ./...
	$(MAKE) test-unit
	$(PYTHON) -m pytest tests suites --ignore=tests/unit $(PERF_RUNS:%=--ignore=%) $(LONG_RUNS:%=--ignore=%) \
		$(E2E_RUNS:%=--ignore=%) --ignore=$(CI_TEMPLATES) $(FAULT_RUNS:%='--deselect=%') \
		'--deselect=$(CLUSTER_REFUSES)' --durations=25
	$(DRALAB) residue

# Seconds, first of make test: ruff and mypy on the Python (pyproject.toml's [tool.ruff] and [tool.mypy]),
# gofmt and go vet on the Go: go.work's modules named one by one (the root is no module: ./... there
# matches nothing), so that neither walks into .venv, out/ or another directory of results.
GO_ROOMS = fake_hardware clusters drivers_under_test suites
GO_MODULES = $(GO_ROOMS) reports/perf/allocbench
lint: packages
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	@unformatted="$$(gofmt -l $(GO_MODULES))"; if [ -n "$$unformatted" ]; then echo "gofmt -w these: $$unformatted"; exit 1; fi
	go vet $(GO_MODULES:%=./%/...)

# The Python unit tests alone (no lab), one worker a core (pytest-xdist).
test-unit: packages
	$(PYTHON) -m pytest -n 2 tests/unit

test-e2e: setup
	$(PYTHON) -m pytest $(E2E_RUNS) $(FAULT_RUNS:%='--deselect=%') --durations=10
	$(DRALAB) residue

test-long: setup
	$(PYTHON) -m pytest $(LONG_RUNS)
	$(DRALAB) residue

# Ten certifications in a row with one seed, then ten with ten seeds (dralab soak): verdicts per seed,
# residue after each, the recorder's, sysfs server's and agents' peak memory and open files per run, the
# load average and the labs' pace. Hours; SOAK_CERTIFY narrows each run (e.g. SOAK_CERTIFY="--only KP-03").
SOAK_CERTIFY ?=
soak: setup
	$(DRALAB) soak --runs 10 --seed 1 --out soak/one-seed -- $(SOAK_CERTIFY)
	$(DRALAB) soak --runs 10 --seed 1 --vary-seeds --out soak/ten-seeds -- $(SOAK_CERTIFY)

# The verdicts on a busy machine beside an idle one's: certify KP once idle, once with 2 cores kept
# busy, once with 4 (twice the machine's cores), each with the load average and the labs' pace.
bench-load: setup
	$(DRALAB) soak --runs 1 --out bench-load/idle -- --only KP
	$(DRALAB) soak --runs 1 --load 2 --out bench-load/load-2 --beside bench-load/idle -- --only KP
	$(DRALAB) soak --runs 1 --load 4 --out bench-load/load-4 --beside bench-load/idle -- --only KP

test-faults: setup
	$(PYTHON) -m pytest $(FAULT_RUNS:%='%')
	$(DRALAB) residue

# The kind provider's e2e test alone: 1 minute warm, about 3 cold (kind, kubeadm, CoreDNS, the node image).
KIND_E2E = tests/e2e/test_kind_provider.py
test-kind: setup
	$(PYTHON) -m pytest $(KIND_E2E)
	$(DRALAB) residue

# docs/ci's GitHub Actions workflow and GitLab CI job, run here on a reference driver packaged as a
# vendor's (each certifies it on a kind cluster): about 10 minutes, outside test. The nightly matrix
# templates' plan and merge run too (seconds, no lab), their cell jobs' commands checked.
test-ci-templates: setup
	$(PYTHON) -m pytest $(CI_TEMPLATES)
	$(DRALAB) residue

# The performance runs at a small size: `dralab perf` twice into one history (RP-03) and the DA scale
# benchmark (PF-04) on the real scheduler; about 7 minutes, outside test.
perf-check: setup
	$(PYTHON) -m pytest $(PERF_RUNS)
	$(DRALAB) residue

# PF-07, not part of test and without a lab: the upstream allocator benchmark, derived vs literal
# attributes, in rounds summarised with benchstat; allocator.json and the perf report in $(PERF).
PERF ?= perf
perf-allocator: packages
	$(DRALAB) perf --only PF-07 --out $(PERF)
