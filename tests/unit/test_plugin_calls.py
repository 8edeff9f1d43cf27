"""The plugin recorder's trace as the suites read it (clusters/plugin_calls.py) and the KP rules
over it (suites/kubelet_plugin/contract.py): lines as plugin-recorder writes them."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from clusters.watch_log import WATCHED, allocation_history, allocations, record, versions
from clusters.local.node import injected
from clusters.plugin_calls import CONTAINER_FILES_LOG, FAULT_LOG, append_to_run_trace, read
from suites.kubelet_plugin.contract import (
    calls_to,
    changed_answers,
    failed_unprepares,
    first_prepares,
    left_specs,
    specs_now,
    unanswered_claims,
    wrong_devices,
    wrong_requests,
)
from suites.resource_claim_status.checks import (
    entries_before_prepare,
    fail_if_refused,
    not_ready_over_the_run,
    others_not_kept_over_the_run,
    refused_for_another,
)

PREPARE = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources"
UNPREPARE = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources"
GET_INFO = "/pluginregistration.Registration/GetInfo"
SOCKET = "gpu.example.com-reg.sock"
second = iter(range(10, 60))


def line(
    method: str,
    request: Any = None,
    response: Any = None,
    error: str = "",
    socket: str = SOCKET,
    cdi: dict[str, Any] | None = None,
    at_second: int | None = None,
) -> str:
    at = f"2026-11-28T09:18:{at_second if at_second is not None else next(second)}.123456789Z"
    rec = {"node": "node-1", "start": at, "end": at, "socket": socket, "method": method}
    rec |= {k: v for k, v in (("request", request), ("response", response), ("error", error)) if v}
    if cdi is not None:
        rec["cdi"] = {"dirs": ["/var/run/cdi"], "specs": cdi}
    return json.dumps(rec)


def claim(uid: str) -> dict[str, str]:
    return {"namespace": "ns", "name": f"claim-{uid}", "uid": uid}


def devices(*names: str) -> dict[str, Any]:
    return {
        "devices": [
            {"request_names": ["gpu"], "pool_name": "node-1", "device_name": n, "cdi_device_ids": [f"example.com/gpu={n}"]} for n in names
        ]
    }


def trace(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "plugin-calls.jsonl"
    registered = [line("socket created"), line(GET_INFO, response={"type": "DRAPlugin", "name": "gpu.example.com"})]
    path.write_text("\n".join([*registered, *lines]) + "\n")
    return path


def test_records_are_read_with_their_times_and_only_the_drivers_are_its(tmp_path: Path) -> None:
    path = trace(
        tmp_path,
        line(PREPARE, {"claims": [claim("a")]}, {"claims": {"a": devices("gpu-0")}}),
        line("socket created", socket="other-reg.sock"),
        line(GET_INFO, response={"name": "other.example.com"}, socket="other-reg.sock"),
        line(PREPARE, {"claims": [claim("b")]}, {"claims": {"b": devices("nic-0")}}, socket="other-reg.sock"),
    )
    calls = read(path)
    assert [c.name for c in calls] == [
        "socket created",
        "GetInfo",
        "NodePrepareResources",
        "socket created",
        "GetInfo",
        "NodePrepareResources",
    ]
    assert calls[2].start.microsecond == 123456 and calls[2].node == "node-1"
    mine = calls_to(calls, "gpu.example.com")
    assert [c.request["claims"][0]["uid"] for c in mine if c.name == "NodePrepareResources"] == ["a"]
    assert read(tmp_path / "absent.jsonl") == []


def test_a_claim_left_out_of_a_prepare_answer_is_named(tmp_path: Path) -> None:
    calls = read(trace(tmp_path, line(PREPARE, {"claims": [claim("a"), claim("b")]}, {"claims": {"a": devices("gpu-0")}})))
    (problem,) = unanswered_claims(calls)
    assert "ns/claim-b (b)" in problem and "answered ['a'] of 2 asked" in problem


def test_an_error_for_the_claim_or_the_call_is_an_answer(tmp_path: Path) -> None:
    calls = read(
        trace(
            tmp_path,
            line(PREPARE, {"claims": [claim("a")]}, {"claims": {"a": {"error": "no such device"}}}),
            line(PREPARE, {"claims": [claim("b")]}, error="rpc error: code = Internal"),
        )
    )
    assert unanswered_claims(calls) == []


def test_a_claim_prepared_again_with_other_devices_is_named_unless_unprepared_between(tmp_path: Path) -> None:
    calls = read(
        trace(
            tmp_path,
            line(PREPARE, {"claims": [claim("a")]}, {"claims": {"a": devices("gpu-0", "gpu-1")}}),
            line(PREPARE, {"claims": [claim("a")]}, {"claims": {"a": devices("gpu-1", "gpu-0")}}),  # order free
            line(UNPREPARE, {"claims": [claim("a")]}, {"claims": {"a": {}}}),
            line(PREPARE, {"claims": [claim("a")]}, {"claims": {"a": devices("gpu-2")}}),
            line(PREPARE, {"claims": [claim("a")]}, {"claims": {"a": devices("gpu-3")}}),
        )
    )
    (problem,) = changed_answers(calls)
    assert "gpu-3" in problem and "gpu-2" in problem


def test_the_first_prepare_of_each_claim_is_its_earliest_answered_or_failed(tmp_path: Path) -> None:
    calls = read(
        trace(
            tmp_path,
            line(PREPARE, {"claims": [claim("a")]}, error="rpc error: code = Unavailable", at_second=30),
            line(PREPARE, {"claims": [claim("a"), claim("b")]}, {"claims": {"a": devices("gpu-0")}}, at_second=20),
            line(UNPREPARE, {"claims": [claim("c")]}, {"claims": {"c": {}}}, at_second=10),
        )
    )
    first = first_prepares(calls)
    assert sorted(first) == ["a", "b"] and first["a"].start.second == 20 and first["b"] is first["a"]


def test_a_labs_node_traces_join_the_runs_trace_in_order_of_start(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    for node, seconds in (("node-1", ("12", "10.5")), ("node-2", ("10.503",))):
        (logs / node).mkdir(parents=True)
        (logs / node / "plugin-calls.jsonl").write_text(
            "".join(
                json.dumps({"node": node, "start": f"2026-11-28T09:18:{s}Z", "end": f"2026-11-28T09:18:{s}Z", "method": "socket created"})
                + "\n"
                for s in seconds
            )
        )
    (logs / "claims.jsonl").write_text(
        json.dumps(
            {"kind": "ResourceClaim", "start": "2026-11-28T09:18:11.000001+00:00", "end": "2026-11-28T09:18:11.000001+00:00", "uid": "a"}
        )
        + "\n"
    )
    (logs / "pods.jsonl").write_text(
        json.dumps({"kind": "Pod", "start": "2026-11-28T09:18:11.5+00:00", "end": "2026-11-28T09:18:11.5+00:00", "uid": "p"}) + "\n"
    )
    (logs / CONTAINER_FILES_LOG).write_text(
        json.dumps({"kind": "ContainerFiles", "start": "2026-11-28T09:18:11.7+00:00", "pod": "gen-0", "files": {}}) + "\n"
    )
    trace = tmp_path / "results" / "trace.jsonl"
    assert append_to_run_trace(logs, "cert", trace) == 6
    rows = [json.loads(line) for line in trace.read_text().splitlines()]
    # "10.5Z" sorts after "10.503Z" as text; 10.5 s is before 10.503 s. The watch logs' lines join by time too.
    assert [(r["lab"], r.get("node", r.get("kind")), r["start"][17:23]) for r in rows] == [
        ("cert", "node-1", "10.5Z"),
        ("cert", "node-2", "10.503"),
        ("cert", "ResourceClaim", "11.000"),
        ("cert", "Pod", "11.5+0"),
        ("cert", "ContainerFiles", "11.7+0"),
        ("cert", "node-1", "12Z"),
    ]
    # A reused lab: what its nodes recorded before this run took it is an earlier run's.
    later = tmp_path / "later" / "trace.jsonl"
    assert append_to_run_trace(logs, "cert", later, since=datetime(2026, 11, 28, 9, 18, 11, tzinfo=timezone.utc)) == 4


def spec(*names: str, claims: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"kind": "example.com/gpu", "devices": list(names), "claims": list(claims)}


def seen(uid: str, *results: tuple[str, str], at: str = "00") -> dict[str, Any]:
    """A claim log record seen at 09:18:`at`: (request, device) results of gpu.example.com on pool node-1."""
    return {
        "uid": uid,
        "start": f"2026-11-28T09:18:{at}+00:00",
        "status": {
            "allocation": {
                "devices": {"results": [{"request": r, "driver": "gpu.example.com", "pool": "node-1", "device": d} for r, d in results]}
            }
        },
    }


def prepared(uid: str, answer: dict[str, Any], cdi: dict[str, Any] | None = None, at_second: int | None = None) -> str:
    return line(PREPARE, {"claims": [claim(uid)]}, {"claims": {uid: answer}}, cdi=cdi, at_second=at_second)


def test_a_device_not_allocated_answered_twice_or_unresolvable_is_named(tmp_path: Path) -> None:
    specs = {"/var/run/cdi/a.json": spec("gpu-0", "gpu-1")}
    both = {"devices": devices("gpu-0")["devices"] * 2}
    calls = read(
        trace(
            tmp_path,
            prepared("a", devices("gpu-0", "gpu-1"), specs),
            prepared("b", devices("gpu-2"), specs),
            prepared("c", both, specs),
            prepared("d", devices("gpu-0"), None),
        )
    )
    history = {
        "a": [seen("a", ("gpu", "gpu-0"), ("gpu", "gpu-1"))],
        "b": [seen("b", ("gpu", "gpu-3"))],
        "c": [seen("c", ("gpu", "gpu-0"))],
        "d": [seen("d", ("gpu", "gpu-5"))],
    }
    problems = wrong_devices(calls, history, "gpu.example.com")
    assert len(problems) == 6, problems
    assert "claim ns/claim-b (b)" in problems[0] and "answered device(s) [('node-1', 'gpu-2')], which its allocation" in problems[0]
    assert "claim ns/claim-b (b)" in problems[1] and "left out device(s) [('gpu', 'node-1', 'gpu-3')]" in problems[1]
    assert "CDI device 'example.com/gpu=gpu-2', which no CDI spec" in problems[2]
    assert "claim ns/claim-c (c)" in problems[3] and "more than once" in problems[3]
    assert "claim ns/claim-d (d)" in problems[4] and "which its allocation does not give" in problems[4]  # no snapshot: only the allocation
    assert "claim ns/claim-d (d)" in problems[5] and "left out device(s) [('gpu', 'node-1', 'gpu-5')]" in problems[5]


def _answer(*devs: tuple[str, list[str], list[str]]) -> dict[str, Any]:
    """A claim's answer: (device, request names, CDI device IDs) each, on pool node-1."""
    return {"devices": [{"pool_name": "node-1", "device_name": d, "request_names": n, "cdi_device_ids": ids} for d, n, ids in devs]}


def test_a_correct_answer_of_every_device_passes_whichever_request_names_and_cdi_ids(tmp_path: Path) -> None:
    specs = {"/var/run/cdi/a.json": spec("gpu-0", "gpu-1", "base")}
    calls = read(
        trace(
            tmp_path,
            # The subrequest's name as the allocation has it ("big/large") or its request's ("big",
            # what the framework answers); each device with two CDI devices, its own and the node's.
            prepared(
                "a",
                _answer(
                    ("gpu-0", ["big/large"], ["example.com/gpu=gpu-0", "example.com/gpu=base"]),
                    ("gpu-1", ["big"], ["example.com/gpu=gpu-1", "example.com/gpu=base"]),
                ),
                specs,
                at_second=10,
            ),
            # No request names (every request of the claim).
            prepared("b", _answer(("gpu-0", [], ["example.com/gpu=base"])), specs, at_second=11),
            prepared("a", _answer(*((f"gpu-{i}", ["big"], []) for i in "01")), specs, at_second=12),  # again, no CDI device
            prepared("s", _answer(("gpu-0", ["gpu"], []), ("gpu-0", ["gpu"], [])), specs, at_second=13),  # two shares of a device
        )
    )
    history = {
        "a": [seen("a", ("big/large", "gpu-0"), ("big/large", "gpu-1"))],
        "b": [seen("b", ("gpu", "gpu-0"))],
        "s": [seen("s", ("gpu", "gpu-0"), ("gpu", "gpu-0"))],
    }
    assert wrong_devices(calls, history, "gpu.example.com") == []
    assert wrong_requests(calls, history, "gpu.example.com") == []  # and KP-04 takes the same names


def test_a_device_left_out_is_named_against_the_allocation_at_the_call(tmp_path: Path) -> None:
    calls = read(
        trace(
            tmp_path,
            prepared("a", devices("gpu-0"), at_second=10),
            prepared("a", devices("gpu-2"), at_second=30),  # deallocated since, allocated gpu-2 anew
            prepared("l", devices("gpu-4"), at_second=20),  # the log saw its allocation a moment after
            prepared("s", devices("gpu-0"), at_second=21),  # one of two shares
        )
    )
    history = {
        "a": [
            seen("a", ("gpu", "gpu-0"), ("gpu", "gpu-1"), at="05"),
            {"uid": "a", "start": "2026-11-28T09:18:25+00:00", "status": {}},
            seen("a", ("gpu", "gpu-2"), at="28"),
        ],
        "l": [{"uid": "l", "start": "2026-11-28T09:18:19+00:00", "status": {}}, seen("l", ("gpu", "gpu-4"), at="20.5")],
        "s": [seen("s", ("gpu", "gpu-0"), ("other", "gpu-0"))],
    }
    problems = wrong_devices(calls, history, "gpu.example.com")
    assert len(problems) == 2, problems
    assert "09:18:10" in problems[0] and "claim ns/claim-a (a): left out device(s) [('gpu', 'node-1', 'gpu-1')]" in problems[0]
    assert "that its allocation gives gpu.example.com (it answered [('node-1', 'gpu-0')])" in problems[0]
    assert "claim ns/claim-s (s): left out device(s) [('other', 'node-1', 'gpu-0')]" in problems[1]


def test_the_claim_history_keeps_every_version_of_each_claim_ever_allocated(tmp_path: Path) -> None:
    log = tmp_path / "claims.jsonl"
    allocated = {"allocation": {"devices": {"results": [{"device": "gpu-0"}]}}}
    rows = [("a", {}), ("a", allocated), ("a", {}), ("b", {})]
    log.write_text(
        "".join(json.dumps({"uid": u, "status": st, "start": f"2026-11-28T09:18:0{i}+00:00"}) + "\n" for i, (u, st) in enumerate(rows))
    )
    history = allocation_history(log)
    assert list(history) == ["a"] and [v["status"] for v in history["a"]] == [{}, allocated, {}]
    assert allocation_history(tmp_path / "none.jsonl") == {}


def test_an_unprepare_that_fails_for_a_claim_is_named_unless_it_never_reached_the_driver(tmp_path: Path) -> None:
    calls = read(
        trace(
            tmp_path,
            line(UNPREPARE, {"claims": [claim("a"), claim("b")]}, {"claims": {"a": {}, "b": {}}}, at_second=10),
            line(UNPREPARE, {"claims": [claim("c")]}, {"claims": {"c": {"error": "claim c: no record of it"}}}, at_second=11),
            line(UNPREPARE, {"claims": [claim("d"), claim("e")]}, {"claims": {"d": {}}}, at_second=12),
            line(
                UNPREPARE,
                {"claims": [claim("f")]},
                error="rpc error: code = Unknown desc = unprepare resource claims: disk full",
                at_second=13,
            ),
            line(UNPREPARE, {"claims": [claim("g")]}, error="rpc error: code = Unavailable desc = connection refused", at_second=14),
            line(
                UNPREPARE,
                {"claims": [claim("h")]},
                error="rpc error: code = DeadlineExceeded desc = context deadline exceeded",
                at_second=15,
            ),
            line(UNPREPARE, {"claims": [claim("i")]}, error="the recorder could not decode the answer", at_second=16),
            prepared("j", {"error": "no such device"}, at_second=17),  # a prepare's error is not unprepare's
        )
    )
    problems = failed_unprepares(calls)
    assert len(problems) == 3, problems
    assert (
        problems[0]
        == "on node-1 at 09:18:11.123456: NodeUnprepareResources of claim ns/claim-c (c) answered the error 'claim c: no record of it'"
    )
    assert "NodeUnprepareResources of claim ns/claim-e (e): the answer has no entry for it" in problems[1]
    assert "NodeUnprepareResources of claim(s) ns/claim-f (f) failed as a whole: 'rpc error: code = Unknown" in problems[2]


def test_a_device_answered_for_a_request_it_is_not_allocated_for_is_named(tmp_path: Path) -> None:
    def answer(*devs: tuple[str, list[str]]) -> dict[str, Any]:
        return {"devices": [{"pool_name": "node-1", "device_name": d, "request_names": names, "cdi_device_ids": []} for d, names in devs]}

    calls = read(
        trace(
            tmp_path,
            prepared("a", answer(("gpu-0", ["r0"]), ("gpu-1", ["r0"]))),
            prepared("b", answer(("gpu-0", []), ("gpu-1", ["r1"]))),
            prepared("c", answer(("gpu-0", []))),
            prepared("d", answer(("gpu-0", ["big"]))),
        )
    )
    history = {u: [seen(u, ("r0", "gpu-0"), ("r1", "gpu-1"))] for u in "ab"}
    history |= {"c": [seen("c", ("r0", "gpu-0"))], "d": [seen("d", ("big/large", "gpu-0"))]}
    problems = wrong_requests(calls, history, "gpu.example.com")
    assert len(problems) == 2, problems
    assert "(a)" in problems[0] and "device node-1/gpu-1 was answered for request(s) ['r0'], but is allocated for ['r1']" in problems[0]
    assert "(b)" in problems[1] and "gpu-0 was answered with no request names" in problems[1] and "use ['r1']" in problems[1]


def test_a_claims_own_cdi_spec_left_past_the_grace_after_its_unprepare_is_named(tmp_path: Path) -> None:
    own = {"/var/run/cdi/claim-a.json": spec("gpu-0", claims=("a",)), "/var/run/cdi/node.json": spec("base")}
    answer = {
        "devices": [{"pool_name": "node-1", "device_name": "gpu-0", "cdi_device_ids": ["example.com/gpu=gpu-0", "example.com/gpu=base"]}]
    }
    unprepare = line(UNPREPARE, {"claims": [claim("a")]}, {"claims": {"a": {}}}, at_second=11, cdi=own)
    still = {"/var/run/cdi/claim-a.json": spec("gpu-0"), "/var/run/cdi/node.json": spec("base")}
    calls = read(
        trace(
            tmp_path,
            prepared("a", answer, own, at_second=10),
            unprepare,
            prepared("b", devices("gpu-1"), still, at_second=15),
            prepared("b", devices("gpu-1"), still, at_second=30),
        )
    )
    (problem,) = left_specs(calls)
    assert "claim ns/claim-a (a)" in problem and "['/var/run/cdi/claim-a.json'] were still on the node at 09:18:30" in problem
    gone = read(
        trace(
            tmp_path,
            prepared("a", answer, own, at_second=10),
            unprepare,
            prepared("b", devices("gpu-1"), {"/var/run/cdi/node.json": spec("base")}, at_second=30),
        )
    )
    assert left_specs(gone) == []  # the node's shared spec may stay
    again = read(
        trace(
            tmp_path,
            prepared("a", answer, own, at_second=10),
            unprepare,
            prepared("a", answer, own, at_second=20),
            prepared("b", devices("gpu-1"), still, at_second=40),
        )
    )
    assert left_specs(again) == []  # prepared again: its spec is its own once more
    last = read(trace(tmp_path, prepared("a", answer, own, at_second=10), unprepare))  # no call after the unprepare
    assert left_specs(last) == []
    at = datetime(2026, 11, 28, 9, 18, 30, tzinfo=timezone.utc)
    (problem,) = left_specs(
        last, {"node-1": specs_now({"/var/run/cdi/claim-a.json": {"kind": "example.com/gpu", "devices": [{"name": "gpu-0"}]}})}, at
    )
    assert "['/var/run/cdi/claim-a.json'] were still on the node at 09:18:30.000000, the end of the run" in problem
    assert left_specs(last, {"node-1": {}}, at) == []  # gone by the end of the run
    assert (
        left_specs(
            last,
            {"node-1": specs_now({"/var/run/cdi/claim-a.json": {"kind": "example.com/gpu", "devices": [{"name": "gpu-0"}]}})},
            datetime(2026, 11, 28, 9, 18, 15, tzinfo=timezone.utc),
        )
        == []
    )  # within the grace


def test_the_claim_log_keeps_each_allocated_claim_after_it_is_gone(tmp_path: Path) -> None:
    log = tmp_path / "claims.jsonl"
    allocated = {"allocation": {"devices": {"results": [{"device": "gpu-0"}]}}}
    log.write_text(
        "\n".join(
            json.dumps(
                {"uid": u, "event": e, "status": st, "start": "2026-11-28T09:18:0%d+00:00" % i, "end": "2026-11-28T09:18:0%d+00:00" % i}
            )
            for i, (u, e, st) in enumerate(
                [("a", "ADDED", {}), ("a", "MODIFIED", allocated), ("a", "DELETED", allocated), ("b", "ADDED", {})]
            )
        )
        + "\n"
    )
    assert list(allocations(log)) == ["a"] and allocations(log)["a"]["event"] == "DELETED"
    assert allocations(tmp_path / "none.jsonl") == {}


def version(uid: str, at: str, *entries: str, created: str = "2026-11-28T09:18:00Z") -> dict[str, Any]:
    """A claim log record seen at 09:18:`at` with status.devices entries of gpu.example.com."""
    return {
        "uid": uid,
        "namespace": "ns",
        "name": f"claim-{uid}",
        "created": created,
        "start": f"2026-11-28T09:18:{at}+00:00",
        "status": {"devices": [{"driver": "gpu.example.com", "pool": "node-1", "device": d} for d in entries]},
    }


def test_status_entries_seen_before_the_claims_first_prepare_are_named_once_a_claim(tmp_path: Path) -> None:
    calls = read(trace(tmp_path, prepared("a", devices("gpu-0"), at_second=20), prepared("b", devices("gpu-1"), at_second=20)))
    versions = [
        version("a", "21.000000", "gpu-0"),
        version("b", "19.000000", "gpu-1"),
        version("b", "25.000000", "gpu-1"),
        version("c", "30.000000", "gpu-2"),
        version("d", "31.000000"),
    ]
    problems = entries_before_prepare(versions, calls, "gpu.example.com")
    assert len(problems) == 2, problems
    assert "claim ns/claim-b (b)" in problems[0] and "before the first NodePrepareResources of it at 09:18:20.123456" in problems[0]
    assert "claim ns/claim-c (c)" in problems[1] and "none recorded" in problems[1]
    assert entries_before_prepare(versions[:1], calls, "other.example.com") == []  # another driver's entries aside


def shared(rv: int, event: str, *entries: tuple[str, str], allocated: bool = True) -> dict[str, Any]:
    """Version `rv` of claim s, allocated gpu-0 of gpu.example.com and nic-0 of net.example.com,
    with status.devices entries (driver, data)."""
    results = [
        {"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"},
        {"driver": "net.example.com", "pool": "node-1", "device": "nic-0"},
    ]
    devices = [{"driver": d, "pool": "node-1", "device": "gpu-0" if d.startswith("gpu") else "nic-0", "data": {"v": v}} for d, v in entries]
    return {
        "uid": "s",
        "namespace": "ns",
        "name": "s",
        "event": event,
        "resourceVersion": str(rv),
        "start": f"2026-11-28T09:18:{rv:02d}+00:00",
        "status": {"allocation": {"devices": {"results": results}} if allocated else None, "devices": devices},
    }


def test_a_write_of_the_drivers_status_that_drops_another_drivers_entries_is_named() -> None:
    gpu, net = ("gpu.example.com", "1"), ("net.example.com", "1")
    versions = [
        shared(1, "ADDED", net),
        shared(2, "MODIFIED", net, gpu),  # the driver's write keeps net's: judged, fine
        shared(3, "MODIFIED", ("gpu.example.com", "2")),  # its next write drops net's entry
        shared(4, "MODIFIED", ("gpu.example.com", "2"), net),  # net writes its own again: not the driver's
        shared(5, "ADDED", ("gpu.example.com", "3")),  # listed anew after a lost watch: several writes maybe
        shared(6, "MODIFIED", allocated=False),
    ]  # deallocated: every entry goes, not by a write of the driver
    judged, violating, problems = others_not_kept_over_the_run(versions, "gpu.example.com")
    assert judged == 2 and [v["resourceVersion"] for v in violating] == ["2", "3"]
    assert problems == [
        "2026-11-28T09:18:03+00:00 claim ns/s (s): resourceVersion 3, a write of gpu.example.com's entries, "
        "removed the entries net.example.com owns: ['node-1/nic-0'], still allocated"
    ]
    assert others_not_kept_over_the_run(versions, "net.example.com")[2] == []  # net's writes never dropped gpu's


def test_a_refused_write_of_the_drivers_status_names_the_other_driver_only_when_the_driver_wrote_it() -> None:
    from drivers_under_test.profile import load_profile
    from suites.framework.drivers import DriverUnderTest

    gpu = DriverUnderTest(load_profile("gpu"))
    said = (
        'Failed to prepare: write status.devices of claim ns/c: ResourceClaim.resource.k8s.io "c" is invalid: '
        'status.devices: Forbidden: ...: resourceclaims.resource.k8s.io "{other}" is forbidden: User '
        '"system:serviceaccount:{ns}:driver" cannot associated-node:update resource "resourceclaims/driver"'
    )
    line = said.format(other="gpu-b.dralab.dev", ns=gpu.profile.namespace)
    assert refused_for_another(f"event:\n{line}\n", gpu) == ("gpu-b.dralab.dev", line)
    assert refused_for_another(said.format(other=gpu.name, ns=gpu.profile.namespace), gpu) is None  # its own entries
    assert refused_for_another(said.format(other="gpu-b.dralab.dev", ns="dralab-gpu-b"), gpu) is None  # the other's write
    with pytest.raises(AssertionError) as failed:
        fail_if_refused(line, gpu, "claim shared's", "(the driver's log)")
    assert str(failed.value) == (
        f"gpu.dralab.dev wrote claim shared's status.devices without the entries gpu-b.dralab.dev "
        f"owns as they were (removed or changed); the API server refused it (the driver's log): {line}"
    )
    fail_if_refused("nothing refused", gpu, "claim shared's", "(the driver's log)")


def test_an_entry_of_a_claim_a_pod_ran_with_that_never_became_ready_is_named() -> None:
    def claim(uid: str, *entries: tuple[str, bool]) -> dict[str, Any]:
        conditions = lambda ready: [{"type": "Ready", "status": "True"}] if ready else []  # noqa: E731
        return {
            "uid": uid,
            "namespace": "ns",
            "name": f"claim-{uid}",
            "status": {
                "devices": [{"driver": "gpu.example.com", "pool": "node-1", "device": d, "conditions": conditions(r)} for d, r in entries]
            },
        }

    pods = [
        {
            "namespace": "ns",
            "name": "p",
            "spec": {"resourceClaims": [{"name": "c", "resourceClaimName": "claim-a"}]},
            "status": {"phase": "Running", "resourceClaimStatuses": [{"name": "t", "resourceClaimName": "claim-b"}]},
        },
        {
            "namespace": "ns",
            "name": "q",
            "spec": {"resourceClaims": [{"name": "c", "resourceClaimName": "claim-c"}]},
            "status": {"phase": "Pending"},
        },
    ]
    versions = [
        claim("a", ("gpu-0", False), ("gpu-1", False)),
        claim("a", ("gpu-0", True), ("gpu-1", False)),  # gpu-1 never
        claim("b", ("gpu-2", False)),
        claim("b", ("gpu-2", True)),  # from a template: Ready later
        claim("c", ("gpu-3", False)),
    ]  # its pod never ran: not configured, not judged
    judged, problems = not_ready_over_the_run(versions, pods, "gpu.example.com")
    assert judged == 3 and problems == [
        "claim ns/claim-a (a): the entry of gpu.example.com for node-1/gpu-1 never carried a "
        "Ready=True condition, though a pod ran with the claim"
    ]


def test_the_claim_versions_of_a_run_are_those_of_claims_it_created(tmp_path: Path) -> None:
    log = tmp_path / "claims.jsonl"
    log.write_text(
        "\n".join(json.dumps(version(u, "30.0", created=c)) for u, c in [("old", "2026-11-28T09:17:59Z"), ("new", "2026-11-28T09:18:05Z")])
        + "\n"
    )
    assert [v["uid"] for v in versions(log, datetime(2026, 11, 28, 9, 18, 0, 500000, tzinfo=timezone.utc))] == ["new"]


def test_a_watched_slice_keeps_its_device_names_and_a_pod_how_far_it_got() -> None:
    slice_, pod = (next(w for w in WATCHED if w.kind == k) for k in ("ResourceSlice", "Pod"))
    big = {
        "metadata": {"name": "s", "uid": "u1", "resourceVersion": "7"},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": "node-1",
            "pool": {"name": "node-1", "generation": 2},
            "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "x" * 500}}}],
        },
    }
    line = record(slice_, "ADDED", big)
    assert (
        line["spec"]
        == {"driver": "gpu.example.com", "nodeName": "node-1", "pool": {"name": "node-1", "generation": 2}, "devices": ["gpu-0"]}
        and line["resourceVersion"] == "7"
        and line["kind"] == "ResourceSlice"
    )
    running = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u2"},
        "spec": {"nodeName": "node-1"},
        "status": {
            "phase": "Running",
            "initContainerStatuses": [{"name": "init", "ready": False, "restartCount": 0}],
            "containerStatuses": [{"name": "main", "ready": True, "restartCount": 1, "image": "w"}],
        },
    }
    assert record(pod, "MODIFIED", running)["status"] == {
        "phase": "Running",
        "resourceClaimStatuses": [],
        "containers": [{"name": "init", "ready": False, "restartCount": 0}, {"name": "main", "ready": True, "restartCount": 1}],
    }


def test_a_fault_injected_into_a_node_is_a_line_of_its_fault_log_and_joins_the_trace(tmp_path: Path) -> None:
    class Node:  # what the decorator needs of a LocalNode
        name, log_dir = "node-1", tmp_path / "logs" / "node-1"

        @injected("pod sandbox killed")
        def kill(self, uid: str) -> None:
            raise RuntimeError("the kill failed")  # recorded all the same: it was attempted

    with pytest.raises(RuntimeError):
        Node().kill("uid-1")
    (line,) = (Node.log_dir / FAULT_LOG).read_text().splitlines()
    assert json.loads(line) | {"start": "", "end": ""} == {
        "node": "node-1",
        "kind": "Fault",
        "fault": "pod sandbox killed",
        "args": ["uid-1"],
        "start": "",
        "end": "",
    }
    assert append_to_run_trace(tmp_path / "logs", "cert", tmp_path / "trace.jsonl") == 1
