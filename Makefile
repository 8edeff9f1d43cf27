# The two commands of the README. Each does every set-up step itself on a fresh machine, inside
# a virtualenv (.venv): nothing is pip-installed into the system interpreter.
VENV ?= .venv
PYTHON = $(VENV)/bin/python
OUT ?= out
DRALAB = $(PYTHON) -m dralab.cli

.PHONY: setup certify test

$(PYTHON):
	python3 -m venv $(VENV)

# Python packages, then Debian packages and every pinned component (cached under /var/cache/dralab).
setup: $(PYTHON)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	$(DRALAB) provision

# The main job: run the conformance suites on the embedded local cluster and write the results to $(OUT).
certify: setup
	$(DRALAB) certify --out $(OUT)

# Go unit tests of the reference drivers (as root: the netns tests make namespaces), unit tests,
# the lab's own e2e tests and the suites on a local lab; then nothing may be left behind.
test: setup
	cd drivers_under_test && go test ./...
	$(PYTHON) -m pytest tests suites
	$(DRALAB) residue
