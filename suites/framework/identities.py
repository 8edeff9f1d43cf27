"""Real identities for authorization checks: service-account tokens from the TokenRequest API
(bound to a pod, so they carry its node), and API clients that act as them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client, config

from clusters.api_client import canonical


def token(api: client.ApiClient, namespace: str, service_account: str, pod: client.V1Pod | None = None) -> str:
    """A token of the service account; bound to `pod`, it carries the pod's node
    (authentication.kubernetes.io/node-name), as a per-node driver's projected token does."""
    spec: dict[str, Any] = {"expirationSeconds": 3600}
    if pod is not None:
        spec["boundObjectRef"] = {"kind": "Pod", "apiVersion": "v1", "name": pod.metadata.name, "uid": pod.metadata.uid}
    # Any: the client types status.token Optional, a TokenRequest's answer has it.
    response: Any = client.CoreV1Api(api).create_namespaced_service_account_token(service_account, namespace, {"spec": spec})  # type: ignore[arg-type]  # a dict: validate_call builds the model
    return response.status.token


def acting_as(kubeconfig: Path, bearer_token: str | None = None) -> client.ApiClient:
    """A client of the cluster in `kubeconfig`: as its own user, or as the holder of `bearer_token`."""
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    if bearer_token is not None:
        cfg.cert_file = cfg.key_file = None
        cfg.api_key = {"authorization": f"Bearer {bearer_token}"}
    return canonical(client.ApiClient(cfg))


def who_am_i(api: client.ApiClient) -> dict[str, Any]:
    """The user the API server authenticated (SelfSubjectReview): name, groups, extra."""
    review = client.AuthenticationV1Api(api).create_self_subject_review(
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}  # type: ignore[arg-type]  # a dict: validate_call builds the model
    )
    return review.status.user_info.to_dict()
