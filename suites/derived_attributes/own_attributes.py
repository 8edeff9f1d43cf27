"""A derived-attribute claim over what the driver under test publishes, whatever driver it is: on a
node where one of its attributes has a value shared by two free devices and another value on a
third, request `a` is pinned to a device with the shared value and request `b` must get the other
one, both deriving the attribute through an expression and matched on it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from suites.framework.slices import Device, selector_for

DERIVED = "derived.dralab.dev/shared"
SCALARS = ("int", "string", "bool")  # what a CEL comparison of the derived value handles alike


@dataclass(frozen=True)
class Plan:
    node: str
    attribute: str  # as published: qualified, or bare in the driver's domain
    value: dict[str, object]  # the shared value, typed as published
    pinned: Device  # request a's device
    selector: str  # pins request a to it
    expression: str  # what both requests derive

    def partners(self, devices: list[Device]) -> list[Device]:
        """The devices request b may get: the other free devices of the node with the shared value."""
        return [d for d in devices if d.node == self.node and d != self.pinned and d.attributes.get(self.attribute) == self.value]


def _expression(driver: str, attribute: str) -> str:
    domain, _, name = attribute.rpartition("/")
    return f'string(device.attributes["{domain or driver}"].{name})'


def plan(free: list[Device]) -> Plan | None:
    """The first node and attribute (sorted) that make the claim meaningful, None if none does.
    Every free device of the node must publish the attribute: reading a missing one is a runtime
    error that fails scheduling (DA-06), not a pairing."""
    for node in sorted({d.node for d in free if d.node}):
        devices = [d for d in free if d.node == node]
        shared = set.intersection(*(set(d.attributes) for d in devices))
        for attribute in sorted(shared):
            values = [d.attributes[attribute] for d in devices]
            if any(next(iter(v)) not in SCALARS for v in values):
                continue
            counts = Counter(repr(v) for v in values)
            for device in devices:
                value = device.attributes[attribute]
                if counts[repr(value)] < 2 or len(counts) < 2:
                    continue
                selector = selector_for(device, devices)
                if selector is None:  # nothing tells this device from the others
                    continue
                return Plan(node, attribute, value, device, selector, _expression(device.driver, attribute))
    return None
