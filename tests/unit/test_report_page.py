"""report.html as a vendor reads it (issue 33), rendered by headless Chromium 1400 px wide from a
recorded run of driver profile gpu (metadata and device-status; no deferred metadata, network
data or device plugin) that has every kind of row: FAIL with long and JSON evidence, ERROR with
the lab's diagnosis, WARNING, SKIP with a reason, SKIPs of capabilities the profile does not
claim, PASS, and paths under the run's output directory."""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from PIL import Image

from clusters.config import labs_root
from drivers_under_test.profile import Capability
from reports.report import NOT_CLAIMED, build, read_junit, write
from suites import catalogue
from suites.framework.drivers import DriverUnderTest
from tests.headless_chromium import dom, layout, screenshot

WIDTH = 1400
CLAIM_UID = "0b7c2a4e-93f1-4d52-a8a6-5d2f0c7e1b39"
CONTAINER_FILE = "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/md-claim/dev/gpu.dralab.dev-metadata.json"


def _metadata(version: str) -> dict[str, Any]:
    return {
        "kind": "DeviceMetadata",
        "apiVersion": f"metadata.resource.k8s.io/{version}",
        "metadata": {"name": "md-claim", "namespace": "md-7f3k2", "uid": CLAIM_UID, "generation": 1},
        "requests": [
            {
                "name": "dev",
                "devices": [
                    {
                        "driver": "gpu.dralab.dev",
                        "pool": "cert-worker",
                        "name": "gpu-0",
                        "attributes": {"model": {"string": "LATEST"}, "index": {"int": 0}},
                    }
                ],
            }
        ],
    }


# The metadata file as the kubelet plugin writes it and `cat` shows it: compact documents, one a line.
STREAM = "\n".join(json.dumps(_metadata(v), separators=(",", ":")) for v in ("v1alpha1", "v1beta1")) + "\n"
CDI_SPEC = json.dumps(
    {
        "cdiVersion": "0.5.0",
        "kind": "gpu.dralab.dev/metadata",
        "devices": [
            {
                "name": f"{CLAIM_UID}-dev",
                "containerEdits": {
                    "mounts": [
                        {
                            "hostPath": "/var/lib/kubelet/plugins/gpu.dralab.dev/dra-device-metadata/md-7f3k2_md-claim/dev",
                            "containerPath": "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/md-claim/dev",
                            "options": ["ro", "rbind"],
                        }
                    ]
                },
            }
        ],
    },
    separators=(",", ":"),
)
TOKEN = "sha256:" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" * 8  # no break opportunity


def _evidence(title: str, body: object) -> str:
    """An evidence item as the plugin records it: Evidence.add's text under its title."""
    return f"evidence: {title}\n" + (body if isinstance(body, str) else json.dumps(body, indent=2, default=str))


def _failure_evidence(out: Path) -> list[str]:
    log = "\n".join(
        f"I1127 05:39:{i:02d}.{i * 7919 % 1000000:06d}    1 driver.go:{200 + i}] "
        f"NodePrepareResources claim=md-7f3k2/md-claim request=dev devices=[gpu-0] cdi={TOKEN}"
        for i in range(12)
    )
    return [
        _evidence(
            "files in the container",
            [
                f"/var/run/kubernetes.io/dra-device-attributes/{'x' * 180}/dev/metadata.json",
                "/var/run/dra-device-attributes/md-claim/dev/gpu.dralab.dev-metadata.json",
            ],
        ),
        _evidence("metadata file when the container started", STREAM),
        _evidence("driver gpu: pods", "- name: gpu-driver-5x2kq\n  node: cert-worker\n  phase: Running\n"),
        _evidence("current log of dralab-gpu/gpu-driver-5x2kq container plugin (restarts: 0; last 80 lines)", log),
        f"component log kubelet.log (lab cert) during the test\nE1127 05:39:12 kubelet.go:2140] prepare failed; "
        f"manifests applied: {out}/logs/manifests/gpu/daemonset.yaml {TOKEN}",
    ]


def _restart_evidence() -> list[str]:
    """MD-18's: what the test saw before and after, a dict of the files' texts, which are JSON themselves."""
    before = {"in the container": STREAM, "on the node": STREAM, "CDI spec": CDI_SPEC}
    return [_evidence("before the driver restart", before), _evidence("after the driver restart", {**before, "CDI spec": None})]


UNCLAIMED = {  # suite module -> (capability, requirement IDs of its tests)
    # A driver without the feature: a long line, which must wrap in the page's width.
    "suites.device_metadata.test_device_metadata_lifecycle": (
        "metadata-deferred",
        ["MD-06", "MD-07", "MD-08", "MD-09", "MD-10", "MD-11", "MD-12", "MD-13", "MD-14", "MD-16", "MD-17", "MD-19", "MD-20"],
    ),
    "suites.resource_claim_status.test_status_driver": ("network-data", ["ST-02"]),
    "suites.device_plugin.test_device_plugin": (
        "device-plugin",
        ["DP-01", "DP-02", "DP-02", "DP-03", "DP-04", "DP-04", "DP-05", "DP-06", "DP-07"],
    ),
}
SKIP_REASONS = {
    "MD-15": "driver profile gpu has no variant metadata-disabled (how to deploy the driver with device metadata turned off)",
    "ST-04": "needs the kubelet's credentials, which only labs dralab starts hand out",
}


def _case(
    suite: ET.Element, classname: str, name: str, rid: str, outcome: tuple[str, str, str] | None = None, **properties: list[str] | str
) -> None:
    case = ET.SubElement(suite, "testcase", classname=classname, name=name, time="2.5")
    props = ET.SubElement(case, "properties")
    for key, values in {"requirement": rid, **properties}.items():
        for value in [values] if isinstance(values, str) else values:
            ET.SubElement(props, "property", name=key, value=value)
    if outcome:
        tag, message, text = outcome
        ET.SubElement(case, tag, message=message).text = text


def _junit(out: Path) -> str:
    root = ET.Element("testsuites")
    suite = ET.SubElement(root, "testsuite", name="pytest")
    md, st = "suites.device_metadata.test_device_metadata", "suites.resource_claim_status.test_status_driver"
    _case(
        suite,
        "suites.deployment.test_driver_comes_up",
        "test_driver_comes_up[gpu]",
        "DEP-01",
        observed="ResourceSlices: cert-worker 4 devices, cert-worker2 4 devices",
    )
    _case(
        suite,
        md,
        "test_the_file_is_at_the_shipped_container_path[gpu]",
        "MD-01",
        (
            "failure",
            f"AssertionError: no file at {CONTAINER_FILE} in container main",
            f"suites/device_metadata/checks.py:31: in at_shipped_path\n    assert text is not None, "
            f'f"no file at {{path}}"\nE   AssertionError: no file at {CONTAINER_FILE} {TOKEN}',
        ),
        evidence=_failure_evidence(out),
    )
    _case(
        suite,
        md,
        "test_content[gpu]",
        "MD-02",
        ("failure", "kubernetes.client.exceptions.ApiException: (500)", "t"),
        verdict="ERROR",
        diagnosis=f"containerd on cert-worker is not running (exit 2); its log: {labs_root()}/labs/cert/logs/cert-worker/containerd.log",
    )
    for rid in ("MD-03", "MD-04", "MD-05"):
        _case(suite, md, f"test_{rid.lower()}[gpu]", rid)
    _case(suite, md, "test_metadata_disabled_means_no_files_no_specs_no_mount", "MD-15", ("skipped", SKIP_REASONS["MD-15"], ""))
    _case(
        suite,
        "suites.device_metadata.test_device_metadata_deployments",
        "test_running_pods_keep_their_files_across_a_driver_restart",
        "MD-18",
        ("failure", "AssertionError: the running pod's metadata changed across a driver restart: ['CDI spec']", "t"),
        evidence=_restart_evidence(),
    )
    _case(suite, st, "test_entries_only_for_own_allocated_devices", "ST-01")
    _case(
        suite,
        st,
        "test_entries_ready_once_configured",
        "ST-07",
        verdict="WARNING",
        warning="status entry gpu-0 of claim st-claim has no Ready condition 30s after the pod started",
    )
    _case(suite, st, "test_the_drivers_pod_on_another_node_may_not_write", "ST-04", ("skipped", SKIP_REASONS["ST-04"], ""))
    for module, (capability, ids) in UNCLAIMED.items():
        for i, rid in enumerate(ids):
            _case(suite, module, f"test_{rid.lower()}_{i}", rid, ("skipped", f"driver profile gpu does not claim {capability}", ""))
    _case(
        suite,
        "suites.derived_attributes.test_derived_attributes",
        "test_pairing",
        "DA-01",
        observed=f"allocated: gpu.dralab.dev/cert-worker/gpu-0 + vf.dralab.dev/cert-worker/{'nic-0-vf-' * 30}0",
    )
    return ET.tostring(root, encoding="unicode")


def _environment(out: Path) -> dict[str, Any]:
    return {
        "suites": [
            "suites/deployment",
            "suites/device_metadata",
            "suites/resource_claim_status",
            "suites/device_plugin",
            "suites/derived_attributes",
        ],
        "cluster": "local",
        "kubernetes": "v1.37.1",
        "containerd": "v2.2.0",
        "driver profiles": ["/work/main/drivers_under_test/profiles/gpu.yaml"],
        "driver images": [f"ghcr.io/dralab/reference-drivers:0.37.0@{TOKEN}"],
        "feature gates": {
            g: True
            for g in (
                "DynamicResourceAllocation",
                "DRADeviceMetadata",
                "DRADerivedAttributes",
                "DRAResourceClaimDeviceStatus",
                "DRAListTypeAttributes",
                "DRAResourceClaimGranularStatusAuthorization",
                "DRAPartitionableDevices",
            )
        },
        "hardware": {"cert-worker": f"{out}/hardware/cert-worker.yaml"},
    }


@dataclass(frozen=True)
class Rendered:
    out: Path
    page: str  # the DOM as Chromium built it
    layout: dict[str, Any]  # tests.headless_chromium.layout's
    png: Path  # the whole page

    def row(self, rid: str) -> tuple[str, str]:
        """The class and the text of requirement `rid`'s row."""
        found = re.search(rf'<tr class="([^"]*)" id="{rid}">(.*?)</tr>', self.page, re.S)
        assert found, f"no row for {rid}"
        return found.group(1), _text(found.group(2))

    def evidence(self, title: str) -> str:
        found = re.search(rf"<summary>evidence: {re.escape(title)}</summary><pre>(.*?)</pre>", self.page, re.S)
        assert found, f"no evidence {title!r} on the page"
        return _text(found.group(1))


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", fragment))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    out = tmp_path_factory.mktemp("run") / "out"
    junit = out / "junit.xml"
    out.mkdir()
    junit.write_text(_junit(out))
    _, page = write(build(read_junit(junit, out), _environment(out), 754.2), out)
    measured = layout(page, WIDTH)
    return Rendered(out, dom(page, WIDTH), measured, screenshot(page, out.parent / "report.png", WIDTH, measured["scrollHeight"]))


def test_no_horizontal_overflow_at_1400_px(rendered: Rendered) -> None:
    measured = rendered.layout
    assert measured["scrollWidth"] <= WIDTH, f"the page is {measured['scrollWidth']} px wide: {measured['wide']}"
    # The screenshot agrees: the body's right margin stays blank, no table or <pre> paints into it.
    image = Image.open(rendered.png).convert("RGB")
    margin = {image.getpixel((x, y)) for x in range(WIDTH - 16, WIDTH) for y in range(0, image.height, 4)}
    assert margin == {(255, 255, 255)}, f"something is drawn in the right margin of {rendered.png}: {margin}"


def test_skip_rows_show_their_reason(rendered: Rendered) -> None:
    for rid, reason in SKIP_REASONS.items():
        verdict, text = rendered.row(rid)
        assert verdict == "SKIP" and reason in text, text


def test_json_evidence_is_pretty_printed_once(rendered: Rendered) -> None:
    """JSON in a JSON string (a file's text kept in a dict) is shown as JSON, not as an escaped string."""
    for title in ("before the driver restart", "after the driver restart", "metadata file when the container started"):
        shown = rendered.evidence(title)
        assert '\\"' not in shown and "\\n" not in shown, shown[:800]
        assert re.search(r'^ {2,}"apiVersion": "metadata.resource.k8s.io/v1beta1",$', shown, re.M), shown[:800]
    assert re.search(
        r'^ {6,}"containerPath": "/var/run/kubernetes.io/dra-device-attributes/', rendered.evidence("before the driver restart"), re.M
    )
    assert '"CDI spec": null' in rendered.evidence("after the driver restart")


def test_paths_under_the_output_directory_are_relative_to_it(rendered: Rendered) -> None:
    assert str(rendered.out) not in rendered.page
    assert "logs/cert/cert-worker/containerd.log" in rendered.row("MD-02")[1]  # a lab log, copied under the output
    assert "logs/manifests/gpu/daemonset.yaml" in rendered.row("MD-01")[1]
    assert "hardware/cert-worker.yaml" in _text(rendered.page.split("<h2>Environment</h2>")[1])
    # report.json keeps what the run recorded, for the programs that read it.
    assert f"{rendered.out}/logs/cert/cert-worker/containerd.log" in (rendered.out / "report.json").read_text()


@pytest.mark.parametrize("rid", ["MD-01", "MD-18", "ST-07"])
def test_each_failure_and_warning_shows_its_requirement_and_a_remedy(rendered: Rendered, rid: str) -> None:
    known = catalogue.get(rid)
    verdict, text = rendered.row(rid)
    assert verdict in ("FAIL", "WARNING")
    for shown in (known.text, known.level.value, f"source: {known.source}", f"remedy: {known.remedy}"):
        assert " ".join(shown.split()) in " ".join(text.split()), f"{rid} does not show {shown!r}: {text[:1500]}"


def test_a_failure_links_its_upstream_issue(rendered: Rendered) -> None:
    row = re.search(r'<tr class="FAIL" id="MD-18">(.*?)</tr>', rendered.page, re.S).group(1)
    assert '<a href="https://github.com/kubernetes/kubernetes/issues/141433">kubernetes/kubernetes#141433</a>' in row


def test_capabilities_not_claimed_collapse_into_one_line_per_suite(rendered: Rendered) -> None:
    ids = {rid for _, ids in UNCLAIMED.values() for rid in ids}
    assert not re.findall(rf'id="({"|".join(ids)})"', rendered.page), "a requirement not claimed has a row of its own"
    lines = [_text(line) for line in re.findall(r"<tr class=\"SKIP unclaimed\">(.*?)</tr>", rendered.page, re.S)]
    assert [" ".join(line.split()) for line in lines] == [
        "KEP-5304 device metadata: 13 requirements not claimed by driver profile gpu (metadata-deferred): MD-06, "
        "MD-07, MD-08, MD-09, MD-10, MD-11, MD-12, MD-13, MD-14, MD-16, MD-17, MD-19, MD-20",
        "KEP-4817 device status: 1 requirement not claimed by driver profile gpu (network-data): ST-02",
        "Device plugin API: 6 requirements not claimed by driver profile gpu (device-plugin): DP-01, DP-03, DP-04, DP-05, DP-06, DP-07",
        "Device plugin API: 1 requirement not claimed by driver profile gpu (device-plugin): DP-02",
    ]
    assert "21 SKIP" in _text(rendered.page.split("<h2>")[1])  # still counted: MD-15 and the 20 collapsed


def test_the_report_knows_the_suites_skip_for_a_capability_not_claimed() -> None:
    """The collapsed line recognises DriverUnderTest.requires's SKIP, word for word."""
    driver = DriverUnderTest(SimpleNamespace(name="gpu", has=lambda capability: False))
    with pytest.raises(pytest.skip.Exception) as skipped:
        driver.requires(Capability.METADATA, Capability.METADATA_DEFERRED)
    found = NOT_CLAIMED.fullmatch(skipped.value.msg)
    assert found and (found["profile"], found["capabilities"]) == ("gpu", "metadata, metadata-deferred")
