# The two commands of the README. Each does every set-up step itself on a fresh machine.
PYTHON ?= python3
OUT ?= out
# The CLI through the interpreter pip installed it for: no reliance on PATH holding pip's script dir.
DRALAB = $(PYTHON) -m clusters.cli

.PHONY: setup certify test

# Python packages, then Debian packages and every pinned component (cached under /var/cache/dralab).
setup:
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e '.[test]'
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
