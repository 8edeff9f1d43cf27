"""Running the generated workloads (generated.py) on a lab: each shape's claims and pods started,
what their containers found recorded, the restart it drew done under it, then all removed; the
second driver of claims of two drivers deployed for the while. What the driver did is in the
trace, for the checks over the run; a shape that fails is the run's own finding (Run.failure)."""

from __future__ import annotations

import contextlib
import functools
from typing import Any

from kubernetes import client

from clusters.providers import Lab
from suites.framework import namespaces, other_driver, pods, restarts, slices
from suites.framework.drivers import DriverUnderTest
from suites.framework.verdicts import DriverFailure
from suites.framework.waits import DriverTimedOut, WaitTimeout, wait_for
from suites.kubelet_plugin import generated


def _restart_under(component: str, lab: Lab, api, driver: DriverUnderTest, namespace: str, pod: client.V1Pod) -> None:
    """Restart `component` (generated.RESTARTED) on the node of `pod` while it runs and wait until
    it is back: the driver's pods, or the pod started anew with its claims prepared again (a
    DriverFailure: what the kubelet and the runtime said of the driver's part, else the timeout)."""
    if component == "driver":
        driver.restart_on(api, pod.spec.node_name)  # type: ignore[arg-type]  # a running pod's, Optional in the client
        return
    name: str = pod.metadata.name  # type: ignore[assignment]  # Optional in the client, set
    try:
        restarts.prepare_again(lab, api, component, namespace, name, tuple(c.name for c in pod.spec.containers))
    except DriverTimedOut as e:
        raise restarts.why_not_started(api, namespace, name, restarts.RESTARTS[component]) or type(e)(
            f"{e}\nevents of {name}:\n{pods.events(api, namespace, name)}"
        ) from None


# How long the second driver of the generated claims may take to publish its devices once deployed.
SECOND_DRIVER_SLICES = 60


def _second_driver(lab: Lab, api, room: slices.Room, run: generated.Run, stack: contextlib.ExitStack) -> tuple[DriverUnderTest | None, int]:
    """The second driver of the generated claims of two drivers, deployed for as long as `stack`
    lasts, and how many of its devices are free on a node where the driver under test has the
    most; (None, 0) on a lab without one, why being in `run.second_driver`."""
    if why := other_driver.unavailable(lab):
        run.second_driver = f"none: {why}"
        return None, 0
    other = stack.enter_context(other_driver.deployed(lab))
    nodes = room.nodes_with(run.capacity, [n.name for n in lab.nodes])

    def published() -> slices.Room | None:
        theirs = slices.room(api, other.name)
        return theirs if theirs.most_free else None

    try:
        theirs = wait_for(f"devices of {other.name} published", published, SECOND_DRIVER_SLICES)
    except WaitTimeout:
        run.second_driver = f"none: {other.name} published no free device within {SECOND_DRIVER_SLICES}s"
        return None, 0
    free = max(theirs.free_on(n) for n in nodes)
    run.second_driver = f"{other.name}, up to {free} device(s) a pod"
    return other, free


def draw(lab: Lab, api: Any, dra_driver: DriverUnderTest, seed: int, budget: int, seeds: int = 1) -> generated.Run:
    """Pod and claim shapes drawn by hypothesis (generated.py) with `seed` and the `seeds` - 1
    after it, `budget` each, each started (its containers' metadata files recorded, a restart
    under it where drawn), then removed, in a namespace of their own."""
    run = generated.Run(seed=seed, budget=budget, seeds=seeds)
    room = slices.room(api, dra_driver.name)
    run.capacity = room.most_free
    if run.capacity == 0:
        run.skipped = f"no node has a free device of {dra_driver.name} ({room.describe()}): no pod shape to draw"
        return run

    with contextlib.ExitStack() as stack:
        namespace = run.namespace = stack.enter_context(namespaces.fresh(api, "gen"))
        other, other_room = _second_driver(lab, api, room, run, stack)

        def attempt(shape: generated.PodShape, seed: int) -> generated.Failure | None:
            name = f"gen-{len(run.tried)}"
            run.tried.append(f"{name} (seed {seed}): {shape}")
            run.manifests[name] = shape.manifests(dra_driver, name, other)
            generated.start(api, namespace, dra_driver, shape, name, other)
            doing = f"pod(s) {', '.join(shape.pods(name))} with claims of {dra_driver.name} did not start"
            requirement = "KP-03"
            try:
                started = [pods.wait_phase(api, namespace, pod, cdi_refused=True) for pod in shape.pods(name)]
                run.started.update(generated.claims_of(api, namespace, name))
                lab.record_container_files(generated.files_seen(api, namespace, shape.pods(name), batch=name))
                if shape.restart:
                    node = started[0].spec.node_name
                    event = generated.RESTART_EVENTS[shape.restart]
                    doing, requirement = f"after a {event} on {node}, {name} did not run again", "KP-07"
                    _restart_under(shape.restart, lab, api, dra_driver, namespace, started[0])
                    run.restarted.append(f"{name}: {event} on {node}")
                return None
            except DriverFailure as e:  # the driver's, its timeouts too; the lab's own errors end the run
                then = f" (then the {event} on the node of pod {name})" if requirement == "KP-07" else ""
                return generated.Failure(f"{doing} (seed {seed}): {e}\nthe case, to apply{then}:\n{run.manifests[name]}", requirement)
            finally:
                generated.remove(api, namespace, name)

        shapes = generated.pod_shapes(
            run.capacity,
            configured=dra_driver.profile.claim_config is not None,
            shared=not dra_driver.profile.claims_serve_one_pod,
            one_container=dra_driver.profile.claims_serve_one_container,
            restarted=("driver", *lab.restartable),
            other_devices=other_room,
        )
        for seed in range(run.seed, run.seed + run.seeds):
            run.failure = generated.explore(shapes, seed, budget, functools.partial(attempt, seed=seed))
            if run.failure:
                break
    return run
