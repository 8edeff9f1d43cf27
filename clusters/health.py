"""The lab's diagnosis: is it healthy enough that a check's failure is the driver's (FAIL), or
is something of the lab down (ERROR)? Components alive, API server responsive, nodes Ready."""

from __future__ import annotations

from typing import Any

from clusters.providers import Lab

API_TIMEOUT = 5  # seconds: an API server slower than this to answer /readyz is unresponsive


def dead_components(lab: Lab) -> list[str]:
    """The lab's parts that died (not those a test stopped on purpose), each with its evidence (a
    log's tail); cheap (the process table; for kind, the engine's container list)."""
    return lab.dead_parts()


def diagnose(lab: Lab) -> list[str]:
    """What is wrong with the lab, each problem with its evidence (a dead component's log tail);
    empty when it is healthy."""
    problems = dead_components(lab)
    try:
        from kubernetes import client

        api = lab.api()
        readyz = api.call_api(*api.param_serialize("GET", "/readyz", auth_settings=["BearerToken"]), _request_timeout=API_TIMEOUT)
        readyz.read()
        if readyz.status != 200:
            problems.append(f"kube-apiserver /readyz answered {readyz.status}: {readyz.data.decode()[:500]}")
        nodes: list[Any] = client.CoreV1Api(api).list_node(_request_timeout=API_TIMEOUT).items  # a listed node's name is set
        wanted = {n.name for n in lab.nodes}
        for node in nodes:
            if node.metadata.name not in wanted:
                continue
            ready = next((c for c in node.status.conditions or [] if c.type == "Ready"), None)
            if ready is None or ready.status != "True":
                problems.append(
                    f"node {node.metadata.name} is not Ready" + (f": {ready.reason}: {ready.message}" if ready is not None else "")
                )
        problems += [f"node {n} is missing from the API" for n in sorted(wanted - {n.metadata.name for n in nodes})]
    except Exception as e:  # the API server itself may be what is down
        problems.append(f"kube-apiserver does not answer: {type(e).__name__}: {str(e)[:500]}")
    return problems
