"""The reference drivers on the session lab (dgx-like on both nodes): they register, publish
typed attributes, and what a pod gets is what they promise. Each broken variant deploys and
runs; the suites prove that each one fails what it breaks (MUT-01)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from kubernetes import client

from clusters.providers import Capability, Lab
from drivers_under_test.profile import load_profile, shipped_profiles
from fake_hardware.lab import HardwareLab
from suites.framework import claims, pods
from suites.framework.claims import ClaimBuilder
from suites.framework.pods import PodBuilder
from suites.framework.waits import wait_for

pytestmark = pytest.mark.e2e

GPU, VF = "gpu.dralab.dev", "vf.dralab.dev"
METADATA_DIR = "/var/run/kubernetes.io/dra-device-attributes/resourceclaims"


@pytest.fixture(scope="module")
def reference_drivers(lab: Lab, deploy_driver) -> Lab:
    if Capability.HOST_PROCESSES not in lab.capabilities or not lab.local_cluster("its hardware").cfg.hardware:
        pytest.skip("needs the local lab with emulated hardware")
    for name in ("gpu", "net", "fake-gpu-plugin"):
        deploy_driver(name)
    return lab


def slices_by_node(api, driver: str) -> dict[str, list[dict]]:
    items = client.CustomObjectsApi(api).list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices")["items"]
    return {s["spec"]["nodeName"]: s["spec"]["devices"] for s in items if s["spec"]["driver"] == driver}


def assert_unhealthy_gpu_leaves_the_slice_and_returns(lab: Lab, api, driver: str, node: str, gpu: str) -> None:
    """`gpu` (a profile device, gpu5) marked unhealthy leaves `driver`'s slice on `node`, and returns when healthy."""
    device = gpu.replace("gpu", "gpu-")
    names = lambda: [d["name"] for d in slices_by_node(api, driver)[node]]  # noqa: E731
    assert device in names(), f"{device} is not in {driver}'s slice on {node} to begin with"
    hardware = HardwareLab(lab.local_cluster("its hardware").cfg.hardware_site())
    hardware.set_gpu_health(node, gpu, healthy=False)
    try:
        wait_for(f"{device} withdrawn from {driver}'s slice on {node}", lambda: device not in names(), 20)
    finally:
        hardware.set_gpu_health(node, gpu, healthy=True)
    wait_for(f"{device} back in {driver}'s slice on {node}", lambda: device in names(), 20)


def _output(api, namespace: str, pod: str) -> tuple[str, str]:
    """What the pod printed before and after its `---` line, once the JSON after it is complete."""

    def complete() -> tuple[str, str] | None:
        before, marker, after = pods.logs(api, namespace, pod).partition("---\n")
        return (before, after) if marker and after.strip().endswith("}") else None

    return wait_for(f"pod {namespace}/{pod} to print its findings", complete, 30)


def _first_object(stream: str) -> dict:
    return json.JSONDecoder().raw_decode(stream.strip())[0]


def test_slices_carry_typed_attributes(reference_drivers: Lab, api) -> None:
    gpus, vfs = slices_by_node(api, GPU), slices_by_node(api, VF)
    assert set(gpus) == set(vfs) == {n.name for n in reference_drivers.nodes}
    for node, devices in gpus.items():
        assert [d["name"] for d in devices] == [f"gpu-{i}" for i in range(8)], node
        attrs = devices[3]["attributes"]
        assert set(attrs) == {
            "index",
            "uuid",
            "model",
            "driverVersion",
            "numa",
            "topology",
            "resource.kubernetes.io/pciBusID",
            "resource.kubernetes.io/pcieRoot",
        }
        assert attrs["index"] == {"int": 3} and attrs["numa"] == {"int": 0}
        assert attrs["driverVersion"].keys() == {"version"} and attrs["model"].keys() == {"string"}
        assert re.fullmatch(r"numa0-pcie\d+-gpu3", attrs["topology"]["string"])
        assert attrs["uuid"]["string"].startswith("GPU-")
        assert devices[3]["capacity"] == {"memory": {"value": "40Gi"}}
    for node, devices in vfs.items():
        assert len(devices) == 32, node  # 8 NICs x 4 VFs in dgx-like
        vf = next(d for d in devices if d["name"] == "ens1f0-vf2")["attributes"]
        assert vf["numaNode"].keys() == {"int"} and vf["vfIndex"] == {"int": 2}
        assert vf["pfName"] == {"string": "ens1f0"} and re.fullmatch(r"0000:[0-9a-f]{2}:00\.3", vf["pciBusID"]["string"])
    # Different nodes get different hardware identities (HW-06), and the slices say so.
    uuids = [d["attributes"]["uuid"]["string"] for devs in gpus.values() for d in devs]
    assert len(set(uuids)) == len(uuids)


def test_gpu_claim_gives_metadata_cdi_env_device_nodes_and_status(reference_drivers: Lab, api, namespace: str) -> None:
    claims.create(api, namespace, ClaimBuilder("gpus").request("train", GPU, count=2))
    pod = (
        PodBuilder("gpu")
        .with_claim("gpus", claim="gpus")
        .running(
            *pods.until_stopped(
                f"env | grep ^DRALAB_GPU | sort; ls /dev | grep dralab; echo ---; cat {METADATA_DIR}/gpus/train/{GPU}-metadata.json"
            )
        )
    )
    pods.run(api, namespace, pod)
    env, metadata = _output(api, namespace, "gpu")
    claim = claims.read(api, namespace, "gpus")
    results = claims.allocated(claim, GPU)
    devices = {d["name"]: d for d in slices_by_node(api, GPU)[results[0]["pool"]]}
    obj = _first_object(metadata)
    assert obj["apiVersion"] == "metadata.resource.k8s.io/v1beta1" and obj["kind"] == "DeviceMetadata"
    assert obj["metadata"]["uid"] == claim["metadata"]["uid"] and obj["metadata"]["generation"] == 1
    listed = obj["requests"][0]["devices"]
    assert [(d["pool"], d["name"]) for d in listed] == [(r["pool"], r["device"]) for r in results]
    for d in listed:
        slice_attrs = devices[d["name"]]["attributes"]
        assert d["attributes"] == slice_attrs
        index, uuid = slice_attrs["index"]["int"], slice_attrs["uuid"]["string"]
        assert f"DRALAB_GPU_{index}_UUID={uuid}" in env and f"dralab-gpu{index}" in env
    status = {s["device"]: s for s in claims.device_status(claim, GPU)}
    assert set(status) == {r["device"] for r in results}
    for name, entry in status.items():
        assert entry["pool"] == results[0]["pool"]
        assert [(c["type"], c["status"]) for c in entry["conditions"]] == [("Ready", "True")]
        assert entry["data"]["uuid"] == devices[name]["attributes"]["uuid"]["string"]


def test_vf_claim_gives_configured_interface_deferred_metadata_and_network_status(reference_drivers: Lab, api, namespace: str) -> None:
    config = {"interfaceName": "net1", "ips": ["10.97.0.5/24"], "hardwareAddress": "02:aa:bb:cc:dd:01"}
    claims.create(api, namespace, ClaimBuilder("vf").request("nic", VF).opaque(VF, config))
    pod = (
        PodBuilder("vf")
        .with_claim("vf", claim="vf")
        .running(*pods.until_stopped(f"ip addr show net1; echo ---; cat {METADATA_DIR}/vf/nic/{VF}-metadata.json"))
    )
    node = pods.run(api, namespace, pod).spec.node_name
    shown, metadata = _output(api, namespace, "vf")
    assert "inet 10.97.0.5/24" in shown and "link/ether 02:aa:bb:cc:dd:01" in shown and "UP" in shown
    expected = {"interfaceName": "net1", "ips": ["10.97.0.5/24"], "hardwareAddress": "02:aa:bb:cc:dd:01"}
    obj = _first_object(metadata)
    assert obj["metadata"]["generation"] == 2  # identity-only file at 1, the NRI hook's update at 2
    assert obj["requests"][0]["devices"][0]["networkData"] == expected
    claim = claims.read(api, namespace, "vf")
    (entry,) = claims.device_status(claim, VF)
    assert entry["networkData"] == expected and entry["conditions"][0]["type"] == "Ready"
    (result,) = claims.allocated(claim, VF)
    assert result["pool"] == node == entry["pool"] and result["device"] == entry["device"]
    # When the pod goes, the VF goes back to the node under its own name and MAC.
    netdev = result["device"].replace("-vf", "v")
    hw = HardwareLab(reference_drivers.local.cfg.hardware_site()).node(node)
    mac = next(f.mac for f in hw.plan.functions if f.netdev == netdev)
    client.CoreV1Api(api).delete_namespaced_pod("vf", namespace)
    wait_for(
        f"{netdev} back in {hw.netns} with MAC {mac}",
        lambda: mac in subprocess.run(["ip", "-n", hw.netns, "link", "show", netdev], capture_output=True, text=True).stdout,
        60,
    )


def test_unhealthy_gpu_leaves_the_slice_and_returns(reference_drivers: Lab, api) -> None:
    assert_unhealthy_gpu_leaves_the_slice_and_returns(reference_drivers, api, GPU, reference_drivers.nodes[0].name, "gpu5")


@pytest.mark.requirement("HW-08")
def test_vfs_follow_sriov_numvfs_into_the_slice_and_vfio_pci_gets_its_node_in_the_nodes_dev(reference_drivers: Lab, api) -> None:
    node = reference_drivers.nodes[1].name
    hw = HardwareLab(reference_drivers.local.cfg.hardware_site()).node(node)
    pf = hw.plan.by_name("nic3")  # 4 of its 8 VFs enabled at boot
    numvfs = hw.sys_root / "bus" / "pci" / "devices" / pf.bdf / "sriov_numvfs"
    vf_names = {f"{pf.netdev}-vf{i}" for i in range(pf.sriov_total)}
    in_slice = lambda: vf_names & {d["name"] for d in slices_by_node(api, VF)[node]}  # noqa: E731
    assert len(in_slice()) == 4, f"{node}'s slice before the change: {sorted(in_slice())}"
    try:
        numvfs.write_text("0")
        wait_for(f"{pf.netdev}'s VFs withdrawn from {node}'s slice", lambda: not in_slice(), 30)
        numvfs.write_text("8")
        wait_for(f"8 VFs of {pf.netdev} in {node}'s slice", lambda: in_slice() == vf_names, 30)

        vf = hw.plan.by_name("nic3-vf6")
        dev = hw.sys_root / "bus" / "pci" / "devices" / vf.bdf
        (dev / "driver_override").write_text("vfio-pci")
        (dev / "driver" / "unbind").write_text(vf.bdf)
        (hw.sys_root / "bus" / "pci" / "drivers_probe").write_text(vf.bdf)
        wait_for(f"{vf.name} withdrawn from the slice once on vfio-pci", lambda: f"{pf.netdev}-vf6" not in in_slice(), 30)
        seen = reference_drivers.local_node(node).run("stat", "-c", "%F %t:%T", f"/dev/vfio/{vf.iommu_group}").stdout
        assert seen.strip() == f"character special file f0:{vf.iommu_group:x}", seen
    finally:
        numvfs.write_text("0")
        wait_for(f"{pf.netdev}'s VFs gone", lambda: not in_slice(), 30)
        numvfs.write_text("4")
    wait_for(f"{pf.netdev}'s 4 boot VFs back in {node}'s slice", lambda: len(in_slice()) == 4, 30)


def test_vendor_style_profile_deploys_a_second_instance_from_a_tarball(reference_drivers: Lab, api, tmp_path) -> None:
    """What a vendor does: a profile in its own directory, its own manifests and an image tarball;
    here the reference GPU driver under another name, as MD-07 needs."""
    from drivers_under_test.deploy import deploy, remove

    manifests = Path(load_profile("gpu").source).parent.parent / "manifests"
    for name in ("dra-driver-rbac.yaml", "gpu-dra-driver.yaml"):
        shutil.copy(manifests / name, tmp_path / name)
    (tmp_path / "gpu-b.yaml").write_text(f"""
name: gpu-b
description: the reference GPU driver as a second driver
drivers: [gpu-b.dralab.dev]
capabilities: [metadata, device-status]
hardware: dgx-like
namespace: gpu-b
images: [{{archive: {reference_drivers.local.tools.drivers_image.archive}}}]
manifests: [dra-driver-rbac.yaml, gpu-dra-driver.yaml]
parameters: {{DRIVER_NAME: gpu-b.dralab.dev, COMPONENT: gpu-b-dra-driver,
             METADATA_VERSIONS: metadata.resource.k8s.io/v1beta1, NVML_LIBRARY: "", CDI_DIR: /var/run/cdi}}
""")
    profile = load_profile(str(tmp_path / "gpu-b.yaml"))
    deploy(reference_drivers, profile)
    try:
        nodes = {n.name for n in reference_drivers.nodes}
        # Both instances on every node; the first one untouched (its slices of a node whose kubelet an
        # earlier test restarted come back once the driver re-registers, hence a wait, not a snapshot).
        wait_for(
            "both GPU drivers' slices on every node",
            lambda: set(slices_by_node(api, "gpu-b.dralab.dev")) == nodes and set(slices_by_node(api, GPU)) == nodes,
            60,
        )
    finally:
        remove(reference_drivers, profile)
    assert slices_by_node(api, "gpu-b.dralab.dev") == {}


@pytest.mark.requirement("LAB-04")
def test_driver_follows_a_non_default_kubelet_root_dir(lab: Lab, extra_lab) -> None:
    from drivers_under_test.deploy import deploy, remove
    from clusters.lab_configurations import GATES_OFF

    if Capability.HOST_PROCESSES not in lab.capabilities:
        pytest.skip("needs local labs")
    other = extra_lab(GATES_OFF)
    api, node = other.api(), other.local_cluster("its nodes").nodes[0]
    profile = load_profile("gpu")
    deploy(other, profile)
    try:
        ns = "root-dir"
        client.CoreV1Api(api).create_namespace({"metadata": {"name": ns}})
        wait_for("ServiceAccount default", lambda: client.CoreV1Api(api).read_namespaced_service_account("default", ns), 30)
        claims.create(api, ns, ClaimBuilder("gpu").request("one", GPU))
        pods.run(
            api,
            ns,
            PodBuilder("gpu")
            .with_claim("gpu", claim="gpu")
            .running(*pods.until_stopped(f"echo ---; cat {METADATA_DIR}/gpu/one/{GPU}-metadata.json")),
        )
        _, metadata = _output(api, ns, "gpu")
        assert _first_object(metadata)["metadata"]["name"] == "gpu"
        host = node.host_path(f"{node.kubelet_root_dir}/plugins/{GPU}/dra-device-metadata/{ns}_gpu/one/metadata.json")
        assert node.kubelet_root_dir == "/var/lib/kubelet-dralab" and host.is_file()
    finally:
        remove(other, profile)


# Variants that run (a crash-looping one never does: DEP-01's e2e test takes it).
VARIANTS = [
    (p, v) for p in shipped_profiles() for v in load_profile(p).broken_variants() if "DEP-01" not in load_profile(p).variants[v].breaks
]


@pytest.mark.parametrize("profile,variant", VARIANTS, ids=[f"{p}:{v}" for p, v in VARIANTS])
def test_broken_variant_deploys_and_runs(reference_drivers: Lab, deploy_driver, profile: str, variant: str) -> None:
    p = deploy_driver(profile, variant)

    def logs() -> str:
        return subprocess.run(
            [
                str(reference_drivers.kubectl),
                f"--kubeconfig={reference_drivers.kubeconfig}",
                "logs",
                "-n",
                p.namespace,
                "-l",
                f"dralab.dev/variant={variant}",
                "--prefix",
                "--tail=-1",
            ],
            capture_output=True,
            text=True,
        ).stdout

    def saying() -> set[str]:  # the pods (kubectl's --prefix) whose log names the variant, once or more
        return {line.split(" ", 1)[0] for line in logs().splitlines() if f"BROKEN variant {variant}" in line}

    # Every node's pod runs the variant: it says so at start-up.
    wait_for(
        f"{len(reference_drivers.nodes)} pods of {profile} logging BROKEN variant {variant}",
        lambda: len(saying()) == len(reference_drivers.nodes),
        30,
    )


def test_reference_drivers_restored_after_variants(reference_drivers: Lab, deploy_driver, api) -> None:
    for name in ("gpu", "net", "fake-gpu-plugin"):
        deploy_driver(name)
    assert set(slices_by_node(api, GPU)) == {n.name for n in reference_drivers.nodes}
