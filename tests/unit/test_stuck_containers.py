"""A driver container that will not come up says why in one line, in its own words first."""

from kubernetes.client import V1ContainerState, V1ContainerStateTerminated, V1ContainerStateWaiting, V1ContainerStatus

from drivers_under_test.deploy import _stuck

LOG_TAIL = "I1123 starting plugin\nE1123 crash-at-start: cannot open the device control node /dev/dralab-ctl\n"


def status(waiting: str | None, restarts: int) -> V1ContainerStatus:
    return V1ContainerStatus(
        name="plugin",
        image="i",
        image_id="",
        ready=False,
        restart_count=restarts,
        state=V1ContainerState(waiting=V1ContainerStateWaiting(reason=waiting, message="back-off 10s") if waiting else None),
        last_state=V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=1, message=LOG_TAIL)),
    )


def test_a_back_off_shows_the_containers_last_log_line_before_the_back_off() -> None:
    why = _stuck(status("CrashLoopBackOff", 1))
    assert why == (
        "died 1 times, last with exit code 1: E1123 crash-at-start: cannot open the device control "
        "node /dev/dralab-ctl; CrashLoopBackOff: back-off 10s"
    )


def test_a_container_between_two_restarts_is_stuck_after_two_deaths_only() -> None:
    assert _stuck(status(None, 1)) is None
    assert "cannot open the device control node" in (_stuck(status(None, 2)) or "")
