"""Derived attributes over what the driver under test publishes (--driver, or each reference
driver): the scheduler pairs its devices by a value derived from one of its own attributes
(own_attributes.py chooses the node, attribute and devices from its ResourceSlices)."""

from __future__ import annotations

import pytest

from suites.derived_attributes import checks, own_attributes
from suites.framework import slices
from suites.framework.claims import ClaimBuilder
from suites.framework.drivers import DriverUnderTest
from suites.framework.evidence import Evidence
from suites.framework.verdicts import require, skip

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("derived_gate")]


@pytest.mark.requirement("DA-02")
def test_a_value_derived_from_the_drivers_attribute_pairs_its_devices(
    api, driver: DriverUnderTest, namespace: str, evidence: Evidence
) -> None:
    require(
        driver.profile.drivers,
        f"driver profile {driver.profile.name} names no DRA driver",
        "derived attributes apply to DRA drivers' devices: name the driver in the profile's drivers",
    )
    free = slices.free(api, driver.name)
    plan = own_attributes.plan(free)
    if plan is None:
        skip(
            f"no node has free devices of {driver.name} that all publish an int, string or bool attribute "
            "with one value on two of them and another value on a third",
            "publish such devices (a topology attribute such as a NUMA node does) or free them",
        )
    evidence.observe(
        "plan",
        {
            "node": plan.node,
            "attribute": plan.attribute,
            "value": plan.value,
            "request a pinned to": plan.pinned.name,
            "selector": plan.selector,
            "derived": plan.expression,
        },
    )
    claim = (
        ClaimBuilder("own-attribute")
        .request("a", driver.device_class, selector=plan.selector, derived={own_attributes.DERIVED: plan.expression})
        .request("b", driver.device_class, derived={own_attributes.DERIVED: plan.expression})
        .constraint(["a", "b"], match=own_attributes.DERIVED)
    )
    if driver.profile.claim_config is not None:  # it configures one device (an interface name): a's
        claim.opaque(driver.name, driver.profile.claim_config, requests=("a",))
    got = checks.paired(checks.schedule(api, namespace, claim, plan.node, evidence))
    partners = sorted(d.name for d in plan.partners(free))
    assert got["a"] == plan.pinned.name and got["b"] in partners, (
        f"want a = {plan.pinned.name} and b one of {partners} ({plan.attribute} {plan.value}); the scheduler paired {got}"
    )
