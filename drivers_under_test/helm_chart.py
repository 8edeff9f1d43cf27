"""Helm charts in driver profiles: most drivers ship one, so a vendor names the chart and its
values instead of hand-rendering manifests. dralab renders it with its pinned helm (built from
its Go module by `dralab provision`) and deploy treats the objects as a manifest's: applied
CRDs first, labelled, given the emulated sysfs and a variant's args; a variant's chartValues
come after the profile's values, so helm merges them over those."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from basics.errors import BadInput
from clusters import versions
from drivers_under_test.profile import DriverProfile, object_problems

# Built-in kinds the API server keeps outside namespaces (Kubernetes v1.37). `helm template`
# leaves metadata.namespace unset wherever a chart's templates do, and helm install would put
# those objects in the release's namespace: dralab does the same for every other kind, and for
# none the chart's own cluster-scoped CRDs define.
CLUSTER_SCOPED = frozenset(
    {
        "APIService",
        "CertificateSigningRequest",
        "ClusterRole",
        "ClusterRoleBinding",
        "ClusterTrustBundle",
        "CSIDriver",
        "CSINode",
        "CustomResourceDefinition",
        "DeviceClass",
        "DeviceTaintRule",
        "FlowSchema",
        "IngressClass",
        "IPAddress",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "MutatingWebhookConfiguration",
        "Namespace",
        "Node",
        "PersistentVolume",
        "PriorityClass",
        "PriorityLevelConfiguration",
        "ResourceSlice",
        "RuntimeClass",
        "ServiceCIDR",
        "StorageClass",
        "StorageVersionMigration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
        "VolumeAttachment",
        "VolumeAttributesClass",
    }
)


def _values(profile: DriverProfile, params: Mapping[str, str], variant: str | None) -> tuple[list[dict[str, Any]], list[str]]:
    """The chart's values files, its inline values, then the variant's chartValues, with `params`
    substituted; the problems."""
    assert profile.chart is not None
    sources: list[tuple[str, str]] = []
    problems: list[str] = []
    for relative in profile.chart.values_files:
        path = profile.path(relative)
        try:
            sources.append((f"values file {path}", path.read_text()))
        except OSError as e:
            problems.append(f"cannot read values file {path}: {e.strerror}")
    chosen = profile.variant(variant)
    inline = [("chart.values", profile.chart.values), (f"variants.{variant}.chartValues", chosen.chart_values if chosen else {})]
    sources += [(f"{field} of driver profile {profile.source}", yaml.safe_dump(values)) for field, values in inline if values]
    values = []
    for what, text in sources:
        docs, found = profile.read_template(what, text, params)
        problems += found
        if len(docs) > 1 or (docs and not isinstance(docs[0], dict)):
            problems.append(f"{what} is not one mapping of values")
        else:
            values += docs
    return values, problems


def _helm_template(profile: DriverProfile, values: list[dict[str, Any]], helm: Path, kube_version: str) -> subprocess.CompletedProcess[str]:
    assert profile.chart is not None
    with tempfile.TemporaryDirectory(prefix="dralab-chart-") as tmp:
        files = []
        for i, doc in enumerate(values):
            files.append(Path(tmp) / f"values-{i}.yaml")
            files[-1].write_text(yaml.safe_dump(doc))
        # helm's own homes in the temporary directory: no repositories, plugins or cache of the user's.
        env = {**os.environ, **{f"HELM_{d}_HOME": str(Path(tmp) / d.lower()) for d in ("CACHE", "CONFIG", "DATA")}}
        return subprocess.run(
            [
                str(helm),
                "template",
                profile.name,
                str(profile.chart_path()),
                f"--namespace={profile.namespace}",
                "--include-crds",
                f"--kube-version={kube_version}",
                *(f"--values={f}" for f in files),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )


def _set_namespaces(objects: list[dict[str, Any]], namespace: str) -> None:
    """The release's namespace where the chart leaves it out, as helm install would set it."""
    cluster_scoped = CLUSTER_SCOPED | {
        o.get("spec", {}).get("names", {}).get("kind")
        for o in objects
        if o.get("kind") == "CustomResourceDefinition" and o.get("spec", {}).get("scope") == "Cluster"
    }
    for obj in objects:
        if obj["kind"] not in cluster_scoped:
            obj["metadata"].setdefault("namespace", namespace)


def render_chart(profile: DriverProfile, params: Mapping[str, str], variant: str | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """The objects of the profile's chart rendered with its values (and `variant`'s chartValues),
    and every problem (of the values, of helm, of the output); no objects when there is one."""
    from clusters.provision import helm

    assert profile.chart is not None
    chart = profile.chart_path()
    values, problems = _values(profile, params, variant)
    try:
        helm_binary = helm()
    except BadInput as e:
        return [], problems + [f"chart {chart} cannot be rendered: {e}"]
    if problems:
        return [], problems
    # The chart sees the cluster's version as `.Capabilities.KubeVersion`, as helm install would.
    out = _helm_template(profile, values, helm_binary, params.get("KUBERNETES_VERSION", versions.KUBERNETES))
    if out.returncode != 0:
        # helm's hint to rerun with --debug is for its own command line, not dralab's.
        error = "\n".join(line for line in out.stderr.strip().splitlines() if "--debug" not in line).strip()
        return [], [f"chart {chart}: `helm template` refused it: {error}"]
    docs = [d for d in yaml.safe_load_all(out.stdout) if d is not None]
    problems = object_problems(f"chart {chart} (as rendered)", docs)
    if problems:
        return [], problems
    _set_namespaces(docs, profile.namespace)
    return docs, []
