"""CEL selectors that single out one published device (suites/framework/slices.py)."""

from __future__ import annotations

from typing import Any

from suites.framework.slices import Device, selector_for


def gpu(name: str, attributes: dict[str, Any]) -> Device:
    return Device("gpu.dralab.dev", "node-1", name, "node-1", attributes)


def test_picks_the_first_attribute_no_other_device_shares() -> None:
    a = gpu("gpu-0", {"driverVersion": {"version": "1.0.0"}, "index": {"int": 0}, "model": {"string": "A100"}})
    b = gpu("gpu-1", {"driverVersion": {"version": "1.0.0"}, "index": {"int": 1}, "model": {"string": "A100"}})
    assert selector_for(a, [a, b]) == 'device.driver == "gpu.dralab.dev" && device.attributes["gpu.dralab.dev"].index == 0'


def test_qualified_names_use_their_own_domain_and_strings_are_quoted() -> None:
    a = gpu("gpu-0", {"resource.kubernetes.io/pciBusID": {"string": "0000:3b:00.0"}})
    b = gpu("gpu-1", {"resource.kubernetes.io/pciBusID": {"string": "0000:5e:00.0"}})
    assert selector_for(a, [b]).endswith('device.attributes["resource.kubernetes.io"].pciBusID == "0000:3b:00.0"')


def test_a_device_nothing_tells_apart_has_no_selector() -> None:
    a, b = gpu("gpu-0", {"model": {"string": "A100"}}), gpu("gpu-1", {"model": {"string": "A100"}})
    assert selector_for(a, [a, b]) is None
