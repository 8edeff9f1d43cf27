"""The MD rules over the files generated containers found (suites/device_metadata/in_containers.py)
and how a container prints them (metadata_file.dump_command, parse_dump)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from suites.device_metadata import in_containers
from suites.framework import metadata_paths
from suites.framework.metadata_file import dump_command, parse_dump

D = "gpu.dralab.dev"
ROOT = metadata_paths.CONTAINER_ROOT


def _claim(uid: str, results: list[tuple[str, str, str]]) -> dict:
    return {
        "uid": uid,
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"driver": driver, "request": request, "pool": "node-1", "device": device} for driver, request, device in results
                    ]
                }
            }
        },
    }


def _file(uid: str, request: str, devices: list[str], driver: str = D) -> str:
    obj = {
        "apiVersion": "metadata.resource.k8s.io/v1beta1",
        "kind": "DeviceMetadata",
        "metadata": {"name": "c", "namespace": "n", "uid": uid, "generation": 1},
        "requests": [{"name": request, "devices": [{"driver": driver, "pool": "node-1", "name": d} for d in devices]}],
    }
    return json.dumps(obj)


ALLOCATED = {
    "u1": _claim("u1", [(D, "r0", "gpu-0"), (D, "r0", "gpu-1"), (D, "r1", "gpu-2"), ("other.dev", "other", "gpu-0")]),
    "u2": _claim("u2", [(D, "r0", "gpu-3")]),
}
C0 = f"{ROOT}/resourceclaims/gen-0-c0"
T1 = f"{ROOT}/resourceclaimtemplates/c1"
GOOD = {
    f"{C0}/r0/{D}-metadata.json": _file("u1", "r0", ["gpu-1", "gpu-0"]),
    f"{C0}/r1/{D}-metadata.json": _file("u1", "r1", ["gpu-2"]),
    f"{C0}/other/other.dev-metadata.json": "{}",
}


def _record(uses: list[dict], files: dict[str, str]) -> dict:
    return {
        "node": "node-1",
        "namespace": "n",
        "pod": "gen-0",
        "container": "main",
        "uses": uses,
        "files": files,
        "pod_claims": [
            {"name": "c0", "claim": "gen-0-c0", "uid": "u1", "template": False},
            {"name": "c1", "claim": "gen-0-c1-x7k", "uid": "u2", "template": True},
        ],
    }


def test_a_container_with_the_files_of_what_it_uses_and_no_other_passes() -> None:
    whole = _record([{"name": "c0", "request": None}], GOOD)
    by_request = _record(
        [{"name": "c0", "request": "r1"}, {"name": "c1", "request": None}],
        {f"{C0}/r1/{D}-metadata.json": GOOD[f"{C0}/r1/{D}-metadata.json"], f"{T1}/r0/{D}-metadata.json": _file("u2", "r0", ["gpu-3"])},
    )
    assert in_containers.problems([whole, by_request], ALLOCATED, D) == {
        r: [] for r in ("MD-01", "MD-02", "MD-03", "MD-04", "MD-08", "MD-16", "MD-19", in_containers.NETWORK_DATA_LEFT_OUT)
    }
    assert in_containers.judged([whole, _record([], {})], ALLOCATED, D) == [whole], "a container using nothing is no subject"


def test_each_violation_is_named_under_its_requirement() -> None:
    missing = dict(GOOD)
    del missing[f"{C0}/r1/{D}-metadata.json"]
    found = in_containers.problems(
        [
            _record([{"name": "c0", "request": None}], missing),
            _record([{"name": "c0", "request": "r0"}], GOOD),
            _record(
                [{"name": "c0", "request": "r1"}, {"name": "c1", "request": None}],
                {f"{C0}/r1/{D}-metadata.json": _file("u1", "r1", ["gpu-2", "gpu-0"])},
            ),
        ],
        ALLOCATED,
        D,
    )
    assert [p.split(" but ")[0] for p in found["MD-01"]] == ["container main of pod n/gen-0 on node-1 uses request r1 of claim gen-0-c0"]
    assert len(found["MD-04"]) == 1 and f"{C0}/r1/{D}-metadata.json, a request it does not use" in found["MD-04"][0]
    assert len(found["MD-02"]) == 1 and "lists devices [('node-1', 'gpu-0'), ('node-1', 'gpu-2')]" in found["MD-02"][0]
    assert len(found["MD-08"]) == 1 and f"no file at {T1}/r0/{D}-metadata.json" in found["MD-08"][0]


def _with_network(text: str, nd: dict | None) -> str:
    obj = json.loads(text)
    for d in obj["requests"][0]["devices"]:
        d.update({"networkData": nd} if nd else {})
    return json.dumps(obj)


NET1 = {"interfaceName": "net1", "ips": ["10.97.0.5/24"], "hardwareAddress": "02:aa:bb:cc:dd:01"}
ETH0 = {"interfaceName": "eth0", "ips": ["10.100.1.7/24"], "hardwareAddress": "6e:41:0c:d2:9a:17"}


def test_md16_a_deferred_drivers_file_has_network_data_of_an_interface_a_pod_of_the_claim_has() -> None:
    r1 = f"{C0}/r1/{D}-metadata.json"

    def seen(nd: dict | None, pod: str = "gen-0", interfaces: list | None = None) -> dict:
        record = _record([{"name": "c0", "request": "r1"}], {r1: _with_network(GOOD[r1], nd)})
        return {**record, "pod": pod, "start": "2026-11-29T05:00:00+00:00", "interfaces": interfaces or [ETH0, NET1]}

    def md16(*records: dict) -> list[str]:
        return in_containers.problems(list(records), ALLOCATED, D, deferred=True)["MD-16"]

    assert md16(seen(NET1)) == []
    assert not any(in_containers.problems([seen(None)], ALLOCATED, D).values()), "judged for deferred metadata only"
    assert md16(seen(None)) == [
        f"container main of pod n/gen-0 on node-1: {r1}: device node-1/gpu-2 has no networkData at the container's start"
    ]
    assert "pod n/gen-0: the pod has no interface with networkData's interfaceName net2" in md16(seen({"interfaceName": "net2"}))[0]
    # a claim shared by two pods: the VF is in the other pod's namespace
    assert md16(seen(NET1, "gen-0", [ETH0]), seen(NET1, "gen-1")) == []


# The VFs of claim u1 as a network driver's slices publish them: gpu-2's VF is net1 in the pod,
# gpu-0's is ens1f0v0 (its own name and MAC), gpu-1's not in the pod.
VF0 = {"interfaceName": "ens1f0v0", "ips": [], "hardwareAddress": "02:00:00:00:01:00"}
PUBLISHED = {
    ("node-1", "gpu-0"): {"macAddress": {"string": "02:00:00:00:01:00"}},
    ("node-1", "gpu-2"): {"macAddress": {"string": "02:aa:bb:cc:dd:01"}},
}


def _deferred(path: str, nds: dict[str, dict]) -> dict[str, list[str]]:
    """MD-16's FAILs and WARNINGs for container main using the request of `path` (its file's devices with networkData `nds`)."""
    obj = json.loads(GOOD[path])
    for d in obj["requests"][0]["devices"]:
        d["networkData"] = nds[d["name"]]
    request = path.split("/")[-2]
    record = {
        **_record([{"name": "c0", "request": request}], {path: json.dumps(obj)}),
        "start": "2026-11-29T05:00:00+00:00",
        "interfaces": [ETH0, NET1, VF0],
    }
    found = in_containers.problems([record], ALLOCATED, D, deferred=True, published=PUBLISHED)
    return {"FAIL": found["MD-16"], "WARNING": found[in_containers.NETWORK_DATA_LEFT_OUT]}


def test_md16_holds_each_device_to_its_own_interface_the_claims_other_files_devices_owning_theirs() -> None:
    r0, r1 = f"{C0}/r0/{D}-metadata.json", f"{C0}/r1/{D}-metadata.json"
    where = f"container main of pod n/gen-0 on node-1: {r1}"
    assert _deferred(r1, {"gpu-2": NET1}) == {"FAIL": [], "WARNING": []}
    # r1's device reports r0's gpu-0's interface: its MAC finds its own
    assert _deferred(r1, {"gpu-2": VF0})["FAIL"] == [
        f"{where}: device node-1/gpu-2: networkData interfaceName ens1f0v0, the pod's net1 (MAC 02:aa:bb:cc:dd:01, which its "
        "slice publishes) has net1; networkData hardwareAddress 02:00:00:00:01:00, the pod's net1 (MAC 02:aa:bb:cc:dd:01, which "
        "its slice publishes) has 02:aa:bb:cc:dd:01"
    ]
    # r0's gpu-1 (no MAC published) may not take gpu-2's interface, in r1's file, not this one
    (why,) = _deferred(r0, {"gpu-0": VF0, "gpu-1": NET1})["FAIL"]
    assert why.endswith(
        "device node-1/gpu-1: pod n/gen-0: networkData's interfaceName net1 describes the pod's net1, the interface of device "
        "node-1/gpu-2 (MAC 02:aa:bb:cc:dd:01, which node-1/gpu-2's slice publishes)"
    )
    # two devices of one file on one interface: the one whose MAC it shows is right
    (why,) = _deferred(r0, {"gpu-0": VF0, "gpu-1": VF0})["FAIL"]
    assert "device node-1/gpu-1: " in why and why.endswith("; devices node-1/gpu-0, node-1/gpu-1 all report the pod's ens1f0v0")
    # a field left out: a WARNING, under its own key
    assert _deferred(r1, {"gpu-2": {"interfaceName": "net1", "ips": NET1["ips"]}}) == {
        "FAIL": [],
        "WARNING": [
            f"{where}: device node-1/gpu-2: networkData reports no hardwareAddress; the pod's net1 (MAC 02:aa:bb:cc:dd:01, "
            "which its slice publishes) has 02:aa:bb:cc:dd:01"
        ],
    }


def _with_attributes(text: str, attributes: dict, api_version: str | None = None) -> str:
    obj = json.loads(text)
    for d in obj["requests"][0]["devices"]:
        d["attributes"] = attributes
    if api_version:
        obj["apiVersion"] = api_version
    return json.dumps(obj)


def test_md03_and_md19_judge_every_file_a_container_has() -> None:
    r1 = f"{C0}/r1/{D}-metadata.json"
    published = {("node-1", "gpu-2"): {"index": {"int": 2}, "dralab.dev/model": {"string": "emulated"}}}

    def found(attributes: dict, rule: str, api_version: str | None = None) -> list[str]:
        record = _record([{"name": "c0", "request": "r1"}], {r1: _with_attributes(GOOD[r1], attributes, api_version)})
        return in_containers.problems([record], ALLOCATED, D, published=published)[rule]

    # qualified or not, one attribute; one the slice lacks is not compared
    assert found({f"{D}/index": {"int": 2}, "dralab.dev/model": {"string": "emulated"}, "extra": {"bool": True}}, "MD-03") == []
    assert found({"index": {"int": 3}}, "MD-03") == [
        f"container main of pod n/gen-0 on node-1: {r1}: gpu-2 attribute index: file {{'int': 3}}, slice {{'int': 2}}"
    ]
    assert "is not one typed value" in found({"index": {"int": 2, "string": "2"}}, "MD-03")[0]
    assert found({}, "MD-19") == []
    assert found({f"a{i}": {"int": i} for i in range(33)}, "MD-19"), "33 attributes break the v1beta1 rules"
    records = [
        _record([{"name": "c0", "request": "r1"}], {r1: _with_attributes(GOOD[r1], {"index": {"int": 2}})}),
        _record([], {f"{C0}/r1/{D}-metadata.json": "not json"}),
    ]
    assert in_containers.attributes_seen(records, D) == 1


def test_a_container_whose_claims_allocation_is_unknown_is_not_judged() -> None:
    record = _record([{"name": "c0", "request": None}], {})
    assert in_containers.judged([record], {}, D) == []
    assert not any(in_containers.problems([record], {}, D).values())


def test_a_container_prints_its_files_and_the_print_is_read_back(tmp_path: Path) -> None:
    (tmp_path / "resourceclaims/c/r0").mkdir(parents=True)
    (tmp_path / "resourceclaims/c/r0/x-metadata.json").write_text('{"a": 1}\n{"b": 2}')
    printed = subprocess.run(["sh", "-c", dump_command(str(tmp_path))], capture_output=True, text=True, check=True).stdout
    assert parse_dump(printed) == {f"{tmp_path}/resourceclaims/c/r0/x-metadata.json": '{"a": 1}\n{"b": 2}'}
    assert parse_dump(printed.split("==> end")[0]) is None, "not yet at its end: nothing read"
    assert (
        parse_dump(subprocess.run(["sh", "-c", dump_command(str(tmp_path / "none"))], capture_output=True, text=True, check=True).stdout)
        == {}
    )
