"""Running the suites on a cluster that is not ours: the workload image from the command line, and
node observers that ask Pod Security admission for the privileged level and SKIP, saying how to
allow them, when the cluster refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from clusters import versions
from suites.framework import node_files, pods, workload
from suites.framework.node_files import NAMESPACE, NodeFiles
from suites.framework.pods import PodBuilder


def configured(monkeypatch: pytest.MonkeyPatch, image: str | None) -> None:
    monkeypatch.setattr(workload, "_image", versions.WORKLOAD_IMAGE)
    workload.use(image)


def test_the_lab_image_is_never_pulled_a_given_one_when_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    configured(monkeypatch, None)
    container = PodBuilder("p").build()["spec"]["containers"][0]
    assert (container["image"], container["imagePullPolicy"]) == (versions.WORKLOAD_IMAGE, "Never")
    configured(monkeypatch, "registry.example/tools:1")
    container = PodBuilder("p").build()["spec"]["containers"][0]
    assert (container["image"], container["imagePullPolicy"]) == ("registry.example/tools:1", "IfNotPresent")
    # An image the lab imported (a driver's, say) is still never pulled.
    assert PodBuilder("p", image="dralab.dev/drivers:lab").build()["spec"]["containers"][0]["imagePullPolicy"] == "Never"


def forbidden(message: str) -> ApiException:
    e = ApiException(status=403, reason="Forbidden")
    e.body = json.dumps({"kind": "Status", "message": message})
    return e


class FakeCore:
    def __init__(self, create_ns: ApiException | None = None, patch_ns: ApiException | None = None) -> None:
        self.create_ns, self.patch_ns, self.calls = create_ns, patch_ns, []

    def read_namespace(self, name: str) -> Any:
        raise ApiException(status=404)

    def create_namespace(self, body: dict[str, Any]) -> None:
        self.calls.append(("create", body))
        if self.create_ns:
            raise self.create_ns

    def patch_namespace(self, name: str, body: dict[str, Any]) -> None:
        self.calls.append(("patch", body))
        if self.patch_ns:
            raise self.patch_ns


def observer(monkeypatch: pytest.MonkeyPatch, core: FakeCore, pod_refusal: ApiException | None = None) -> NodeFiles:
    monkeypatch.setattr(node_files.client, "CoreV1Api", lambda api: core)
    created: list[dict[str, Any]] = []

    def create(api: Any, namespace: str, pod: dict[str, Any]) -> str:
        if pod_refusal:
            raise pod_refusal
        created.append(pod)
        return pod["metadata"]["name"]

    monkeypatch.setattr(pods, "create", create)
    monkeypatch.setattr(pods, "wait_phase", lambda api, namespace, name: None)
    return NodeFiles(None, None)  # type: ignore[arg-type]  # no lab, no API: pods.create and wait_phase are faked


LABEL = {"pod-security.kubernetes.io/enforce": "privileged"}


def test_the_observers_namespace_is_created_privileged_or_labelled_so(monkeypatch: pytest.MonkeyPatch) -> None:
    core = FakeCore()
    assert observer(monkeypatch, core)._pod("node-1") == "node-files-node-1"
    assert core.calls == [("create", {"metadata": {"name": NAMESPACE, "labels": LABEL}})]
    core = FakeCore(create_ns=ApiException(status=409, reason="AlreadyExists"))
    observer(monkeypatch, core)._pod("node-1")
    assert core.calls[-1] == ("patch", {"metadata": {"labels": LABEL}})


@pytest.mark.parametrize(
    "core,pod_refusal,named",
    [
        (
            FakeCore(create_ns=forbidden('namespaces is forbidden: User "ci" cannot create resource "namespaces"')),
            None,
            "creating namespace dralab-node-files",
        ),
        (
            FakeCore(create_ns=ApiException(status=409), patch_ns=forbidden("admission webhook denied the request")),
            None,
            "labelling namespace",
        ),
        (
            FakeCore(),
            forbidden('pods "node-files-node-1" is forbidden: violates PodSecurity "baseline:latest": hostPath volumes (volume "host")'),
            "violates PodSecurity",
        ),
    ],
)
def test_a_refusal_is_a_skip_that_says_how_to_allow_it(
    monkeypatch: pytest.MonkeyPatch, core: FakeCore, pod_refusal: ApiException | None, named: str
) -> None:
    files = observer(monkeypatch, core, pod_refusal)
    with pytest.raises(pytest.skip.Exception) as skipped:
        files.read("node-1", "/etc/containerd/config.toml")
    assert named in str(skipped.value) and "pod-security.kubernetes.io/enforce=privileged" in str(skipped.value)


def test_other_api_errors_are_not_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    files = observer(monkeypatch, FakeCore(create_ns=ApiException(status=500, reason="InternalError")))
    with pytest.raises(ApiException):
        files.read("node-1", "/etc/containerd/config.toml")
