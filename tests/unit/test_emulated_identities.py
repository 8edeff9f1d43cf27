"""Which emulated device a published one stands for (KP-02's hotplug, KP-10's fault): matched by
the UUID or PCI address among its attribute values, whatever the attribute is called."""

from __future__ import annotations

from pathlib import Path

from clusters.config import ClusterConfig
from clusters.provider_registry import provider
from clusters.providers import Lab
from fake_hardware.lab import HardwareLab
from suites.kubelet_plugin import emulated

CFG = ClusterConfig(name="ids", nodes=1, hardware={"node-1": "dgx-like"})
LAB = Lab(provider("local"), Path("kubeconfig"), Path("kubectl"), Path("logs"), [], cfg=CFG)


def test_a_published_device_is_found_by_its_uuid_or_pci_address() -> None:
    functions = {f.name: f for f in HardwareLab(CFG.hardware_site()).node("node-1").plan.functions}
    ids = emulated.identities(LAB, "node-1")
    gpu3, vf = functions["gpu3"], next(f for f in functions.values() if f.kind == "vf")
    assert emulated.named(ids, {"attributes": {"uuid": {"string": gpu3.gpu["uuid"]}}}) == "gpu3"
    assert emulated.named(ids, {"attributes": {"vendor/pciAddress": {"string": vf.bdf}, "n": {"int": 3}}}) == vf.name
    assert emulated.named(ids, {"attributes": {"uuid": {"string": "GPU-not-on-this-node"}}}) is None
    assert emulated.named(ids, {"name": "no-attributes"}) is None
    only_gpus = emulated.identities(LAB, "node-1", ("gpu",))
    assert set(only_gpus.values()) == {n for n, f in functions.items() if f.kind == "gpu"}


def test_on_a_cluster_dralab_did_not_start_the_check_does_not_apply_rather_than_erring() -> None:
    import pytest

    from basics.errors import NotSupported

    theirs = Lab(provider("kubeconfig"), Path("kubeconfig"), Path("kubectl"), Path("logs"), [])
    with pytest.raises(
        NotSupported, match="identifying the emulated devices needs emulated hardware, which the kubeconfig provider does not give"
    ):
        emulated.identities(theirs, "node-1")
    with pytest.raises(NotSupported, match="reaching node node-1's processes needs the nodes' processes on this host"):
        theirs.local_node("node-1")
