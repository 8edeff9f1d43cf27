"""Deploy a driver profile into a lab and remove it again (`dralab driver deploy/remove`).

Deploying imports the profile's images into every node's containerd, renders its manifests
(parameters, the emulated-sysfs mounts of HW-05 in every container, the containers' env and
args, the variant's args, manifests and chart values), applies
them server-side and waits until every DaemonSet is ready, every DRA driver's ResourceSlices on
every kubelet node have settled (publication.py: complete pools, devices no longer changing) and
every device plugin resource is in every node's capacity. If that does not happen, the evidence (pod states, logs, events) is printed and
everything is removed again: a failed deploy leaves nothing behind.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import yaml

from basics.errors import BadInput, DralabError
from clusters.local.kwok import SLICE_ONLY_LABEL
from basics.progress import console, step
from clusters.providers import Capability, Lab
from drivers_under_test import evidence
from drivers_under_test.helm_chart import render_chart
from drivers_under_test.evidence import PROFILE_LABEL
from drivers_under_test.from_module import image_archive
from drivers_under_test.profile import WORKLOAD_KINDS, ContainerSettings, DriverProfile, SysfsExposure
from drivers_under_test.publication import Settling
from fake_hardware.exposure import driver_root_mounts, host_root_mounts, node_modules_mount, standard_sysfs_mounts, sysfs_root_mount
from fake_hardware.lab import NODE_DRIVER_ROOT, NODE_SYSFS_ROOT

if TYPE_CHECKING:
    from clusters.provision import Toolchain

VARIANT_LABEL = "dralab.dev/variant"


class DeployFailed(DralabError):
    """The driver under test did not come up; the message carries the evidence."""

    exit_code = 1


@dataclass
class Rendered:
    profile: DriverProfile
    variant: str | None
    objects: list[dict[str, Any]] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o.get("kind") == kind]


def _tools(lab: Lab) -> Toolchain:
    """The lab's toolchain, or the cache's for a lab without one of its own (kind, kubeconfig)."""
    from clusters.provision import provision

    if Capability.HOST_PROCESSES in lab.capabilities:
        return lab.local_cluster("using the lab's toolchain").tools
    return provision(offline=True)


def lab_parameters(lab: Lab) -> dict[str, str]:
    from kubernetes import client

    tools = _tools(lab)
    version = (
        lab.started_config("its Kubernetes version").kubernetes_version
        if Capability.LAB_STARTS in lab.capabilities
        else client.VersionApi(lab.api()).get_code().git_version
    )
    return {
        "KUBELET_ROOT_DIR": lab.nodes[0].kubelet_root_dir,
        "DRIVERS_IMAGE": tools.drivers_image.ref,
        "HARDWARE_SYSFS_ROOT": NODE_SYSFS_ROOT,
        "HARDWARE_DRIVER_ROOT": NODE_DRIVER_ROOT,
        "KUBERNETES_VERSION": version,
    }  # NAMESPACE: the profile's


def _or_refused(found: tuple[list[dict[str, Any]], list[str]]) -> list[dict[str, Any]]:
    """The objects (of a manifest, a chart, a rendering), unless there are problems: then nothing
    is applied."""
    objects, problems = found
    if problems:
        raise BadInput("\n".join(problems))
    return objects


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["template"]["spec"]


def _all_containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Every container the pods run, init containers first (ephemeral ones are never in a template)."""
    return [*(spec.get("initContainers") or []), *spec["containers"]]


def _append_args(container: dict[str, Any], args: list[str]) -> None:
    if args:  # a container without args gets none rather than an empty list
        container["args"] = [*(container.get("args") or []), *args]


def _expose_hardware(spec: dict[str, Any], profile: DriverProfile) -> None:
    """HW-05: the emulated sysfs and, if the profile asks, the NVIDIA driver root (HW-10) and the
    node's root, in every container: an init container that checks the devices must see the driver's."""
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    args: list[str] = []
    if profile.sysfs is SysfsExposure.STANDARD:
        volumes, mounts = standard_sysfs_mounts()
    elif profile.sysfs is SysfsExposure.ROOT:
        volume, mount, flag = sysfs_root_mount()
        volumes, mounts, args = [volume], [mount], [flag]
    if profile.driver_root:
        more_volumes, more_mounts = driver_root_mounts(profile.driver_root)
        volumes, mounts = volumes + more_volumes, mounts + more_mounts
    if profile.host_root:
        # The chart's own mounts of the machine's / and /lib/modules: the node's take their place.
        for path in (profile.host_root, "/lib/modules"):
            _drop_mounts_at(spec, path)
        more_volumes, more_mounts = host_root_mounts(profile.host_root)
        modules_volume, modules_mount = node_modules_mount()
        volumes, mounts = volumes + more_volumes + [modules_volume], mounts + more_mounts + [modules_mount]
    spec.setdefault("volumes", []).extend(volumes)
    for c in _all_containers(spec):
        c.setdefault("volumeMounts", []).extend(mounts)
        _append_args(c, args)


def _drop_mounts_at(spec: dict[str, Any], path: str) -> None:
    """Remove every container's mount at `path` and the volumes no container mounts any more."""
    for c in _all_containers(spec):
        c["volumeMounts"] = [m for m in c.get("volumeMounts") or [] if m["mountPath"].rstrip("/") != path.rstrip("/")]
    used = {m["name"] for c in _all_containers(spec) for m in c["volumeMounts"]}
    spec["volumes"] = [v for v in spec.get("volumes") or [] if v["name"] in used]


def _move_plugin_registry(spec: dict[str, Any], registry: str, to: str) -> None:
    """The driver's registration sockets go to the lab's driver registry instead of the kubelet's
    plugins_registry (`registry`), where the plugin recorder stands in for them
    (clusters/plugin_calls.py): a hostPath volume of the registry itself points there; one of a
    directory above it gets a mount of the driver registry over the registry's place in it."""
    moved = {"name": "dralab-driver-registry", "hostPath": {"path": to, "type": "DirectoryOrCreate"}}
    for volume in spec.get("volumes") or []:
        path = (volume.get("hostPath") or {}).get("path", "").rstrip("/")
        if path == registry:
            volume["hostPath"]["path"] = to
        elif path and registry.startswith(path + "/"):
            below = registry[len(path) + 1 :]
            for c in _all_containers(spec):
                for m in list(c.get("volumeMounts") or []):
                    if m["name"] == volume["name"] and not m.get("subPath"):
                        c["volumeMounts"].append({"name": moved["name"], "mountPath": f"{m['mountPath'].rstrip('/')}/{below}"})
    if any(m["name"] == moved["name"] for c in _all_containers(spec) for m in c.get("volumeMounts") or []):
        spec["volumes"].append(moved)


def _keep_off_slice_only_nodes(spec: dict[str, Any]) -> None:
    """Slice-only nodes have no kubelet: a DaemonSet pod there would never start (nor end)."""
    required = (
        spec.setdefault("affinity", {})
        .setdefault("nodeAffinity", {})
        .setdefault("requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": [{}]})
    )
    for term in required["nodeSelectorTerms"]:
        term.setdefault("matchExpressions", []).append({"key": SLICE_ONLY_LABEL, "operator": "DoesNotExist"})


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def _workload(obj: dict[str, Any]) -> str:
    """A workload's Kind/name, as container settings name it."""
    return f"{obj['kind']}/{obj['metadata']['name']}"


def _workloads(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {_workload(o): o for o in objects if o.get("kind") in WORKLOAD_KINDS}


def _apply_settings(container: dict[str, Any], settings: ContainerSettings) -> None:
    """The settings' env in place of the container's own of the same name, their args after its."""
    if settings.env:
        kept = [e for e in container.get("env") or [] if e.get("name") not in settings.env]
        container["env"] = kept + [{"name": n, "value": v} for n, v in settings.env.items()]
    _append_args(container, settings.args)


def target_problems(profile: DriverProfile, variant: str | None, objects: list[dict[str, Any]]) -> list[str]:
    """Container settings of a deployment of `variant` whose workload or container `objects`
    do not have, each with the names they do have: a setting that reaches nothing is a typo."""
    workloads = _workloads(objects)
    problems = []
    for setting, settings in profile.container_settings(variant):
        where = f"driver profile {profile.source}: {setting}"
        if settings.workload not in workloads:
            problems.append(f"{where}: no workload {settings.workload} is rendered (the workloads: {', '.join(workloads) or 'none'})")
            continue
        names = [c["name"] for c in _all_containers(_pod_spec(workloads[settings.workload]))]
        if settings.container not in names:
            problems.append(f"{where}: {settings.workload} has no container {settings.container!r} (its containers: {', '.join(names)})")
    return problems


def _patch_pods(
    obj: dict[str, Any],
    profile: DriverProfile,
    args: list[str],
    settings: list[ContainerSettings],
    plugin_registries: tuple[str, str] | None,
) -> None:
    """A workload's pods as dralab runs them: off slice-only nodes, the emulated hardware in
    every container, the registration sockets in the driver registry of a lab that records
    plugin calls (`plugin_registries`: the kubelet's and the driver registry), a variant's plain
    `args` after every regular container's, the settings that name a container."""
    spec = _pod_spec(obj)
    _keep_off_slice_only_nodes(spec)
    _expose_hardware(spec, profile)
    if plugin_registries:
        _move_plugin_registry(spec, *plugin_registries)
    for c in spec["containers"]:
        _append_args(c, args)
    for c in _all_containers(spec):
        for s in settings:
            if s.workload == _workload(obj) and s.container == c["name"]:
                _apply_settings(c, s)
        # A container that dies leaves its last log lines in its status: DEP-01's evidence.
        c.setdefault("terminationMessagePolicy", "FallbackToLogsOnError")


def render(
    profile: DriverProfile,
    variant: str | None,
    lab_params: dict[str, str],
    all_variants: bool = False,
    plugin_registries: tuple[str, str] | None = None,
) -> Rendered:
    """The profile's objects, labelled with the profile; with `all_variants`, every object any
    variant deploys, once (what removal must find whichever variant was deployed)."""
    chosen = profile.variant(variant)
    namespace: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": profile.namespace}}
    objects = [namespace]
    for r in profile.renderings(lab_params, [None, *profile.variants] if all_variants else [variant]):
        objects += [o for m in r.manifests for o in _or_refused(profile.read_manifest(m, r.params))]
        objects += _or_refused(render_chart(profile, r.params, r.chart_variant)) if profile.chart else []
    if all_variants:  # an object several variants render alike is deleted once
        unique: dict[tuple[str, str, str], dict[str, Any]] = {}
        for obj in objects:
            unique.setdefault(_key(obj), obj)
        objects = list(unique.values())
    else:  # removal (all variants) must not be refused for a setting that reaches nothing
        objects = _or_refused((objects, target_problems(profile, variant, objects)))
    settings = [s for _, s in profile.container_settings(None if all_variants else variant)]
    for obj in objects:
        labels = obj.setdefault("metadata", {}).setdefault("labels", {})
        labels[PROFILE_LABEL] = profile.name
        labels[VARIANT_LABEL] = variant or "none"
        if obj.get("kind") in WORKLOAD_KINDS:
            # The pods carry the labels too: tests find the pods of a profile and variant by them.
            obj["spec"]["template"].setdefault("metadata", {}).setdefault("labels", {}).update(
                {PROFILE_LABEL: profile.name, VARIANT_LABEL: variant or "none"}
            )
            _patch_pods(obj, profile, chosen.args if chosen else [], settings, plugin_registries)
    return Rendered(profile, variant, objects)


def _other_variants_objects(rendered: Rendered, lab_params: dict[str, str]) -> list[dict[str, Any]]:
    """Objects only other variants of the profile have: what a switch to `rendered` removes."""
    keep = {_key(o) for o in rendered.objects}
    everything = render(rendered.profile, rendered.variant, lab_params, all_variants=True)
    return [o for o in everything.objects if _key(o) not in keep]


def _kubectl(lab: Lab, *args: str, stdin: str | None = None, check: bool = True) -> str:
    cmd = [str(lab.kubectl), f"--kubeconfig={lab.kubeconfig}", *args]
    out = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise DeployFailed(f"`kubectl {' '.join(args)}` failed: {out.stderr.strip()}")
    return out.stdout


def _as_list(objects: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})


# The labs (kubeconfig and its time: a lab started again is another) that have dralab's own image.
_with_drivers_image: set[tuple[Path, int]] = set()


def drivers_image(lab: Lab) -> str:
    """The reference of dralab's own image (its reference drivers and the suites' probes), on every
    node of the lab: a vendor's profile brings only its own images, so it is imported once per lab
    where the provider can import."""
    key = (lab.kubeconfig, lab.kubeconfig.stat().st_mtime_ns)
    if Capability.IMAGE_LOADING in lab.capabilities and key not in _with_drivers_image:
        with step(f"Importing dralab's own image into {len(lab.nodes)} node(s)"):
            lab.import_images([_tools(lab).drivers_image.archive])
        _with_drivers_image.add(key)
    return lab_parameters(lab)["DRIVERS_IMAGE"]


def image_archives(profile: DriverProfile, drivers_archive: Path) -> list[Path]:
    """The archive of each of the profile's images; `build` images built when not cached."""
    return [
        drivers_archive if i.reference else profile.path(i.archive) if i.archive else image_archive(profile.name, profile.module, i.build)  # type: ignore[arg-type]  # validated
        for i in profile.images
    ]


def _import_images(lab: Lab, profile: DriverProfile) -> None:
    if Capability.IMAGE_LOADING not in lab.capabilities:
        console.print(
            f"[yellow]note:[/yellow] the {lab.provider.name} provider cannot import images: the cluster's "
            f"nodes must already have the images of driver profile {profile.name}"
        )
        return
    archives = image_archives(profile, _tools(lab).drivers_image.archive)
    with step(f"Importing {len(archives)} image(s) of {profile.name} into {len(lab.nodes)} node(s)"):
        lab.import_images(archives)


def _check_hardware(lab: Lab, profile: DriverProfile) -> None:
    if Capability.LAB_STARTS not in lab.capabilities or not profile.needs_hardware:
        return
    cfg = lab.started_config("checking its hardware")
    hardware = cfg.hardware
    if not hardware:
        raise BadInput(
            f"driver profile {profile.name} expects emulated hardware {profile.hardware!r}, and lab "
            f"{cfg.name} has none; start it with `dralab up --hardware {profile.hardware}`"
        )
    other = sorted({p for p in hardware.values() if p != profile.hardware})
    if other:
        console.print(
            f"[yellow]note:[/yellow] driver profile {profile.name} expects hardware {profile.hardware}; this lab has {', '.join(other)}"
        )


# Dependency order of an apply: what later objects need exists first (DEP-01).
APPLY_ORDER = (
    ("Namespace",),
    ("CustomResourceDefinition",),
    ("ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"),
)


def apply_groups(objects: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The objects in the groups they are applied in: namespaces, CRDs, RBAC, then the rest."""
    groups = [[o for o in objects if o.get("kind") in kinds] for kinds in APPLY_ORDER]
    ordered = {id(o) for g in groups for o in g}
    return [g for g in [*groups, [o for o in objects if id(o) not in ordered]] if g]


def _apply(lab: Lab, objects: list[dict[str, Any]], timeout: float) -> None:
    for group in apply_groups(objects):
        _kubectl(lab, "apply", "--server-side", "--field-manager=dralab", "--force-conflicts", "-f", "-", stdin=_as_list(group))
        crds = [f"crd/{o['metadata']['name']}" for o in group if o.get("kind") == "CustomResourceDefinition"]
        if crds:  # their custom resources are refused until the CRDs are served
            _kubectl(lab, "wait", "--for=condition=Established", f"--timeout={int(timeout)}s", *crds)


def deploy(lab: Lab, profile: DriverProfile, variant: str | None = None, timeout: float = 120, record_to: Path | None = None) -> Rendered:
    """Apply the profile and wait until the driver runs and has registered everywhere; with
    `record_to`, the manifests as applied are kept there."""
    _check_hardware(lab, profile)
    params = lab_parameters(lab)
    rendered = render(profile, variant, params, plugin_registries=lab.plugin_registries)
    stale = _other_variants_objects(rendered, params)
    if record_to is not None:
        record_to.mkdir(parents=True, exist_ok=True)
        (record_to / f"{profile.name}{f'-{variant}' if variant else ''}.yaml").write_text(
            yaml.safe_dump_all(rendered.objects, sort_keys=False)
        )
    _import_images(lab, profile)
    chosen = profile.variant(variant)
    label = profile.name + (f" ({'BROKEN ' if chosen.breaks else ''}variant {variant})" if chosen else "")
    try:
        with step(f"Deploying driver {label}"):
            # Another variant's extra objects (a broader ClusterRoleBinding, say) must not outlive it.
            if stale:
                _kubectl(lab, "delete", "--ignore-not-found", "-f", "-", stdin=_as_list(stale))
            _label_nodes(lab, profile)
            _apply(lab, rendered.objects, timeout)
        with step(f"Waiting for {label} to register on {len(lab.nodes)} node(s)"):
            _wait_ready(lab, rendered, timeout)
    except BaseException as e:
        found = _evidence(lab, profile) if isinstance(e, DeployFailed) else ""
        remove(lab, profile)
        if found:
            raise DeployFailed(f"{e}\n{found}") from None
        raise
    return rendered


def uninstall(lab: Lab, profile: DriverProfile, timeout: float = 120) -> None:
    """Delete the driver's objects as its user would (what it leaves behind is its own: KP-11)."""
    rendered = render(profile, None, lab_parameters(lab), all_variants=True)
    _kubectl(
        lab, "delete", "--ignore-not-found", "--wait=true", f"--timeout={int(timeout)}s", "-f", "-", stdin=_as_list(rendered.objects[::-1])
    )


def remove_slices(lab: Lab, profile: DriverProfile) -> None:
    # The kubelet deletes a driver's slices only after a grace period: do not leave them to the next driver.
    for driver in profile.drivers:
        _kubectl(lab, "delete", "resourceslices", f"--field-selector=spec.driver={driver}", "--ignore-not-found")


def remove(lab: Lab, profile: DriverProfile, timeout: float = 120) -> None:
    with step(f"Removing driver {profile.name}"):
        uninstall(lab, profile, timeout)
        remove_slices(lab, profile)
        _label_nodes(lab, profile, remove=True)


def _label_nodes(lab: Lab, profile: DriverProfile, remove: bool = False) -> None:
    """The profile's nodeLabels on every node (or off them again)."""
    if profile.node_labels:
        _kubectl(
            lab, "label", "nodes", "--all", "--overwrite", *(f"{k}-" if remove else f"{k}={v}" for k, v in profile.node_labels.items())
        )


# Readiness ------------------------------------------------------------------------------------


def _wait_ready(lab: Lab, rendered: Rendered, timeout: float) -> None:
    from kubernetes import client

    api = lab.api()
    apps, core, resource = client.AppsV1Api(api), client.CoreV1Api(api), client.ResourceV1Api(api)
    nodes = [n.name for n in lab.nodes]
    checks: list[tuple[str, Callable[[], list[str]]]] = []
    for ds in rendered.of_kind("DaemonSet"):
        ns, name = ds["metadata"].get("namespace", rendered.profile.namespace), ds["metadata"]["name"]

        def daemonset(ns: str = ns, name: str = name) -> list[str]:
            ds: Any = apps.read_namespaced_daemon_set(name, ns)  # the client types metadata.generation Optional: the server sets it
            s = ds.status
            if (s.observed_generation or 0) < ds.metadata.generation:  # the status still describes the old spec
                return [f"DaemonSet {ns}/{name}: generation {ds.metadata.generation} not yet rolled out"]
            desired = s.desired_number_scheduled or 0
            ready = s.number_ready or 0
            return (
                []
                if desired and ready == desired and (s.updated_number_scheduled or 0) == desired
                else [f"DaemonSet {ns}/{name}: {ready}/{desired} pods ready"]
            )

        checks.append(("daemonset", daemonset))
    for driver in rendered.profile.drivers:

        def slices(settling: Settling = Settling(driver, nodes)) -> list[str]:
            return settling.missing(resource.list_resource_slice(field_selector=f"spec.driver={settling.driver}").items)

        checks.append(("slices", slices))
    for res in rendered.profile.extended_resources:

        def capacity(res: str = res) -> list[str]:
            listed: list[Any] = core.list_node().items  # the client types metadata.name Optional: a listed node's is set
            return [
                f"node {n.metadata.name} has no {res} in its capacity"
                for n in listed
                if n.metadata.name in nodes and res not in (n.status.capacity or {})
            ]

        checks.append(("capacity", capacity))
    deadline = time.monotonic() + timeout
    while True:
        broken = _failing_containers(core, rendered.profile)
        if broken:
            raise DeployFailed(f"driver {rendered.profile.name} does not run: " + "; ".join(broken))
        missing = [m for _, check in checks for m in check()]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise DeployFailed(f"driver {rendered.profile.name} was not ready after {timeout:.0f}s:\n  " + "\n  ".join(missing))
        time.sleep(1)


# Container states a driver does not recover from by waiting.
STUCK = (
    "CrashLoopBackOff",
    "ErrImageNeverPull",
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
)
# A container that has died this often without becoming ready crash-loops, whatever state the
# kubelet shows between two restarts.
CRASHES = 2


def _stuck(c) -> str | None:  # c: V1ContainerStatus
    """Why a container of the driver will not come up by waiting, if it will not."""
    waiting, died = c.state and c.state.waiting, c.last_state and c.last_state.terminated
    # The container's own last words first (a back-off message only says that it died), on one
    # line: a message from FallbackToLogsOnError is a log tail, which ends with the fatal error.
    last_line = next(iter(reversed((died.message or "").strip().splitlines())), "") if died else ""
    last_words = f"died {c.restart_count} times, last with exit code {died.exit_code}: {last_line}" if died else ""
    if waiting and waiting.reason in STUCK:
        return "; ".join(filter(None, [last_words, f"{waiting.reason}: {waiting.message or ''}".rstrip(": ")]))
    if c.restart_count >= CRASHES and not c.ready and died:
        return last_words
    return None


def _failing_containers(core, profile: DriverProfile) -> list[str]:
    """The driver's containers that are stuck (crash-looping, image refused), with the reason."""
    pods = core.list_namespaced_pod(profile.namespace, label_selector=f"{PROFILE_LABEL}={profile.name}").items
    return [
        f"pod {p.metadata.name} on {p.spec.node_name}: container {c.name} {why}"
        for p in pods
        for c in (p.status.container_statuses or []) + (p.status.init_container_statuses or [])
        if (why := _stuck(c))
    ]


def _evidence(lab: Lab, profile: DriverProfile) -> str:
    """The driver's pods, their current and previous container logs, and its namespace's events."""
    try:
        return "\n".join(f"--- {title}\n{text}" for title, text in evidence.of_driver(lab, lab.api(), profile))
    except Exception as e:  # the API server may be what failed
        return f"(no evidence: {type(e).__name__}: {e})"
