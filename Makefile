# The two commands of the README. Each does every set-up step itself on a fresh machine.
PYTHON ?= python3
OUT ?= out

.PHONY: setup certify test

# Python packages, then Debian packages and every pinned component (cached under /var/cache/dralab).
setup:
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e '.[test]'
	dralab provision

# The main job: certify the reference drivers on the embedded local cluster.
certify: setup
	dralab certify --out $(OUT)

# Unit tests, the lab's own e2e tests and the suites on a local lab; then nothing may be left behind.
test: setup
	$(PYTHON) -m pytest tests suites
	dralab residue
