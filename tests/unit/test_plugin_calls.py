"""The plugin recorder's trace as the suites read it (clusters/plugin_calls.py) and the KP rules
over it (suites/kubelet_plugin/contract.py): lines as plugin-recorder writes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clusters.plugin_calls import append_to_run_trace, read
from suites.kubelet_plugin.contract import calls_to, changed_answers, unanswered_claims

PREPARE = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources"
UNPREPARE = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources"
GET_INFO = "/pluginregistration.Registration/GetInfo"
SOCKET = "gpu.example.com-reg.sock"
second = iter(range(10, 60))


def line(method: str, request: Any = None, response: Any = None, error: str = "", socket: str = SOCKET) -> str:
    at = f"2026-11-28T09:18:{next(second)}.123456789Z"
    rec = {"node": "node-1", "start": at, "end": at, "socket": socket, "method": method}
    rec |= {k: v for k, v in (("request", request), ("response", response), ("error", error)) if v}
    return json.dumps(rec)


def claim(uid: str) -> dict[str, str]:
    return {"namespace": "ns", "name": f"claim-{uid}", "uid": uid}


def devices(*names: str) -> dict[str, Any]:
    return {"devices": [{"request_names": ["gpu"], "pool_name": "node-1", "device_name": n,
                         "cdi_device_ids": [f"example.com/gpu={n}"]} for n in names]}


def trace(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "plugin-calls.jsonl"
    registered = [line("socket created"), line(GET_INFO, response={"type": "DRAPlugin", "name": "gpu.example.com"})]
    path.write_text("\n".join([*registered, *lines]) + "\n")
    return path


def test_records_are_read_with_their_times_and_only_the_drivers_are_its(tmp_path: Path) -> None:
    path = trace(tmp_path, line(PREPARE, {"claims": [claim("a")]}, {"claims": {"a": devices("gpu-0")}}),
                 line("socket created", socket="other-reg.sock"),
                 line(GET_INFO, response={"name": "other.example.com"}, socket="other-reg.sock"),
                 line(PREPARE, {"claims": [claim("b")]}, {"claims": {"b": devices("nic-0")}}, socket="other-reg.sock"))
    calls = read(path)
    assert [c.name for c in calls] == ["socket created", "GetInfo", "NodePrepareResources", "socket created", "GetInfo",
                                       "NodePrepareResources"]
    assert calls[2].start.microsecond == 123456 and calls[2].node == "node-1"
    mine = calls_to(calls, "gpu.example.com")
    assert [c.request["claims"][0]["uid"] for c in mine if c.name == "NodePrepareResources"] == ["a"]
    assert read(tmp_path / "absent.jsonl") == []


def test_a_claim_left_out_of_a_prepare_answer_is_named(tmp_path: Path) -> None:
    calls = read(trace(tmp_path, line(PREPARE, {"claims": [claim("a"), claim("b")]}, {"claims": {"a": devices("gpu-0")}})))
    (problem,) = unanswered_claims(calls)
    assert "ns/claim-b (b)" in problem and "answered ['a'] of 2 asked" in problem


def test_an_error_for_the_claim_or_the_call_is_an_answer(tmp_path: Path) -> None:
    calls = read(trace(tmp_path, line(PREPARE, {"claims": [claim("a")]}, {"claims": {"a": {"error": "no such device"}}}),
                       line(PREPARE, {"claims": [claim("b")]}, error="rpc error: code = Internal")))
    assert unanswered_claims(calls) == []


def test_a_claim_prepared_again_with_other_devices_is_named_unless_unprepared_between(tmp_path: Path) -> None:
    calls = read(trace(tmp_path,
                       line(PREPARE, {"claims": [claim("a")]}, {"claims": {"a": devices("gpu-0", "gpu-1")}}),
                       line(PREPARE, {"claims": [claim("a")]}, {"claims": {"a": devices("gpu-1", "gpu-0")}}),  # order free
                       line(UNPREPARE, {"claims": [claim("a")]}, {"claims": {"a": {}}}),
                       line(PREPARE, {"claims": [claim("a")]}, {"claims": {"a": devices("gpu-2")}}),
                       line(PREPARE, {"claims": [claim("a")]}, {"claims": {"a": devices("gpu-3")}})))
    (problem,) = changed_answers(calls)
    assert "gpu-3" in problem and "gpu-2" in problem


def test_a_labs_node_traces_join_the_runs_trace_in_order_of_start(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    for node, seconds in (("node-1", ("12", "10.5")), ("node-2", ("10.503",))):
        (logs / node).mkdir(parents=True)
        (logs / node / "plugin-calls.jsonl").write_text("".join(
            json.dumps({"node": node, "start": f"2026-11-28T09:18:{s}Z", "end": f"2026-11-28T09:18:{s}Z",
                        "method": "socket created"}) + "\n" for s in seconds))
    trace = tmp_path / "results" / "trace.jsonl"
    assert append_to_run_trace(logs, "cert", trace) == 3
    rows = [json.loads(line) for line in trace.read_text().splitlines()]
    # "10.5Z" sorts after "10.503Z" as text; 10.5 s is before 10.503 s.
    assert [(r["lab"], r["node"], r["start"][17:-1]) for r in rows] == [("cert", "node-1", "10.5"),
                                                                       ("cert", "node-2", "10.503"), ("cert", "node-1", "12")]
