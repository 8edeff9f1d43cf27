"""Where shipped Kubernetes (v1.37) puts device metadata: in containers, on the node, in CDI
(the spec's file name; its directory is the driver's choice among those containerd reads)."""

from __future__ import annotations

CONTAINER_ROOT = "/var/run/kubernetes.io/dra-device-attributes"
KEP_CONTAINER_ROOT = "/var/run/dra-device-attributes"  # the KEP text's path (spec drift 1)


def in_container(claim: str, request: str, driver: str, template: bool = False) -> str:
    kind = "resourceclaimtemplates" if template else "resourceclaims"
    return f"{CONTAINER_ROOT}/{kind}/{claim}/{request}/{driver}-metadata.json"


def kep_in_container(claim: str, request: str, driver: str) -> str:
    return f"{KEP_CONTAINER_ROOT}/{claim}/{request}/{driver}-metadata.json"


def claim_dir_on_node(kubelet_root: str, driver: str, namespace: str, claim: str) -> str:
    return f"{kubelet_root}/plugins/{driver}/dra-device-metadata/{namespace}_{claim}"


def on_node(kubelet_root: str, driver: str, namespace: str, claim: str, request: str) -> str:
    return f"{claim_dir_on_node(kubelet_root, driver, namespace, claim)}/{request}/metadata.json"


def cdi_spec_name(driver: str, claim_uid: str, request: str) -> str:
    return f"{driver}_metadata_{claim_uid}_{request}.json"
