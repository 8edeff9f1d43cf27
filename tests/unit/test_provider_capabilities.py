"""What each provider's labs can do (its Provider.capabilities): a check asks for what it
needs, and on a lab without it SKIPs naming what it needed; what dralab restarts under a pod follows."""

from __future__ import annotations

from pathlib import Path

import pytest

from basics.errors import NotSupported
from clusters.provider_registry import provider
from clusters.providers import Capability, Lab


def _lab(name: str) -> Lab:
    return Lab(provider(name), Path("kubeconfig"), Path("kubectl"), Path("logs"), [])


def test_each_provider_gives_what_its_labs_can_do_and_restarts_follow() -> None:
    assert _lab("local").capabilities == set(Capability)
    assert Capability.NODE_REBOOTS not in _lab("kind").capabilities
    assert Capability.HOST_ACCESS in _lab("kind").capabilities
    assert _lab("kubeconfig").capabilities == set()
    assert [_lab(p).restartable for p in ("local", "kind", "kubeconfig")] == [
        ("kubelet", "containerd", "node"),
        ("kubelet", "containerd"),
        (),
    ]


def test_a_check_on_a_lab_without_what_it_needs_does_not_apply_and_says_what_it_needed() -> None:
    _lab("local").require(Capability.HOST_ACCESS, "reading the node's CDI specs")
    with pytest.raises(
        NotSupported,
        match="^reading the node's CDI specs needs host access to the nodes' files and "
        "services, which the kubeconfig provider does not give$",
    ):
        _lab("kubeconfig").require(Capability.HOST_ACCESS, "reading the node's CDI specs")
