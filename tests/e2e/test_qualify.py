"""`dralab qualify` end to end on a handful of upstream's DRA specs (the whole suite is `make
qualify`): the suite built from the k8s.io/kubernetes module, its images made offline, each kind
of part they exercise on the local lab: the test driver's kubelet sockets through the socket
proxy, a pod's claim prepared, device metadata, an off-by-default gate the lab turns on, and
upstream's sample device plugin. A subset does not qualify the cluster, so nothing is recorded."""

from __future__ import annotations

import json
import re

import pytest

from clusters import residue
from reports import qualification
from tests.e2e.test_lab_lifecycle import dralab

pytestmark = pytest.mark.e2e

SUBSET = [
    "kubelet [Feature:DynamicResourceAllocation] registers plugin",
    "kubelet [Feature:DynamicResourceAllocation] on single node supports simple pod referencing inline resource claim",
    "metadata [Feature:DynamicResourceAllocation] v1beta1 must mount device metadata for resource claims",
    "control plane [FeatureGate:DRAResourcePoolStatus] should return empty pools for unknown driver",
    "must prefer device plugin over DRA when both advertise the same resource on a node",
]


@pytest.mark.timeout(1800)  # cold, it builds the upstream suite first (about 9 minutes from nothing)
def test_a_subset_of_upstreams_dra_suite_passes_on_the_local_lab_with_a_report_per_spec(tmp_path, monkeypatch) -> None:
    out = tmp_path / "q"
    before = qualification.recorded("local", "v1.37.1")
    focus = "|".join(re.escape(name) for name in SUBSET)
    done = dralab("qualify", "--focus", focus, "--procs", "2", "--out", str(out), timeout=1800)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"dralab qualify exited {done.returncode}:\n{output[-6000:]}"
    q = json.loads((out / "qualification.json").read_text())
    ran = {s["name"]: s for s in q["specs"] if s["state"] != "skipped"}
    for name in SUBSET:  # each was seen to run, not only counted
        matches = [s for n, s in ran.items() if name in n]
        assert len(matches) == 1 and matches[0]["state"] == "passed", (name, matches, output[-4000:])
    assert q["counts"]["failed"] == 0 and q["counts"]["skipped"] == len(q["specs"]) - len(SUBSET)
    assert q["lab"]["feature gates"].get("DRAResourcePoolStatus") is True
    assert q["lab"]["runtime config"].get("resource.k8s.io/v1beta1") is True
    assert "<testsuite" in (out / "junit.xml").read_text() and (out / "qualification.html").stat().st_size > 0
    assert (out / "logs" / "qualify").is_dir(), "the lab's component logs were not kept"
    assert qualification.recorded("local", "v1.37.1") == before, "a subset was recorded as the cluster's qualification"
    assert not residue.find("qualify"), residue.find("qualify")
