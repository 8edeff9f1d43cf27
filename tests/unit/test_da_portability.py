"""The DA suite on clusters that are not ours: feature gates read from what the API server does,
and a derived-attribute claim planned from any driver's published devices."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.rest import ApiException

from suites.derived_attributes import gates, own_attributes
from suites.framework.slices import Device

GPU = "gpu.example.com"


def gpu(name: str, node: str, numa: int, **more: object) -> Device:
    attrs = {
        "numa": {"int": numa},
        "uuid": {"string": f"GPU-{name}"},
        "model": {"string": "X1"},
        **{k: {"int": v} for k, v in more.items()},
    }
    return Device(GPU, node, name, node, attrs)


def test_the_plan_pins_a_device_whose_value_another_shares() -> None:
    free = [gpu("g0", "n1", 0), gpu("g1", "n1", 1), gpu("g2", "n1", 0)]
    plan = own_attributes.plan(free)
    assert plan is not None and (plan.node, plan.attribute, plan.value) == ("n1", "numa", {"int": 0})
    assert plan.pinned.name == "g0" and [d.name for d in plan.partners(free)] == ["g2"]
    assert plan.selector == f'device.driver == "{GPU}" && device.attributes["{GPU}"].uuid == "GPU-g0"'
    assert plan.expression == f'string(device.attributes["{GPU}"].numa)'


def test_no_plan_without_a_shared_value_and_a_different_one() -> None:
    assert own_attributes.plan([gpu("g0", "n1", 0), gpu("g1", "n1", 0)]) is None  # nothing to tell apart
    assert own_attributes.plan([gpu("g0", "n1", 0), gpu("g1", "n1", 1)]) is None  # nothing shared
    assert own_attributes.plan([gpu("g0", "n1", 0), gpu("g1", "n2", 0), gpu("g2", "n1", 1)]) is None  # other nodes


def test_an_attribute_some_devices_lack_is_not_used() -> None:
    free = [
        gpu("g0", "n1", 0, tier=1),
        gpu("g1", "n1", 1, tier=1),
        Device(GPU, "n1", "g2", "n1", {"numa": {"int": 0}, "uuid": {"string": "u"}}),
    ]
    plan = own_attributes.plan(free)
    assert plan is not None and plan.attribute == "numa"


def refused(message: str) -> ApiException:
    e = ApiException(status=422, reason="Invalid")
    e.body = json.dumps({"details": {"causes": [{"field": "spec.x", "reason": "FieldValueInvalid", "message": message}]}})
    return e


def probing(monkeypatch: pytest.MonkeyPatch, keeps: bool, lists: ApiException | None) -> gates.Gates:
    def dry_run(api: object, expression: str) -> dict:
        if expression.startswith("[") and lists:
            raise lists
        exactly = {"derivedAttributes": [{"name": "d/x", "expression": expression}]} if keeps else {}
        return {"spec": {"devices": {"requests": [{"name": "r", "exactly": exactly}]}}}

    monkeypatch.setattr(gates, "_dry_run", dry_run)
    return gates.Gates(None)


def test_gate_off_in_the_api_server_is_a_skip_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(pytest.skip.Exception, match="DRADerivedAttributes is off in the API server.*came back without"):
        probing(monkeypatch, keeps=False, lists=None).require(gates.DERIVED)
    on = probing(monkeypatch, keeps=True, lists=refused("must evaluate to a primitive scalar, got list"))
    assert "came back with them" in on.require(gates.DERIVED)
    with pytest.raises(pytest.skip.Exception, match="DRAListTypeAttributes is off.*--feature-gates=DRAListTypeAttributes"):
        on.require(gates.LISTS)
    assert "accepted" in probing(monkeypatch, keeps=True, lists=None).require(gates.LISTS)


def test_a_list_refused_for_another_reason_is_no_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ApiException):
        probing(monkeypatch, keeps=True, lists=refused("compilation failed")).require(gates.LISTS)


def test_the_schedulers_gate_off_answer_is_a_skip_naming_the_gate() -> None:
    from suites.derived_attributes.checks import SCHEDULER_GATE_OFF, skip_if_scheduler_gate_off

    skip_if_scheduler_gate_off("Warning FailedScheduling: 0/3 nodes are available: cannot allocate all claims")
    with pytest.raises(pytest.skip.Exception, match="DRADerivedAttributes is off in kube-scheduler"):
        skip_if_scheduler_gate_off(f"Warning FailedScheduling: claim ns/c, request gpu: {SCHEDULER_GATE_OFF}")
