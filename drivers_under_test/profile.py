"""Driver profiles: what dralab needs to know to deploy a driver and to decide, per
requirement, whether it applies (PASS/FAIL) or not (SKIP).

A profile is YAML. Paths in it are relative to the profile file. Manifests are templates:
`${NAME}` is replaced by the profile's `parameters` and by what the lab provides
(LAB_PARAMETERS), so the same manifests follow a non-default kubelet root dir (LAB-04) and a
second instance of a driver can run under another name.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from basics.errors import BadInput
from basics.yaml_profiles import load_yaml, profile_path, validated
from drivers_under_test.from_module import BuiltImage, GoModule, module_dir
from fake_hardware.profile import node_profile_path

PROFILES_DIR = Path(__file__).parent / "profiles"
WHAT = "driver profile"
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
REQUIREMENT_ID = re.compile(r"^[A-Z]+-\d\d$")
REQUIREMENT_ID_OR_SUITE = re.compile(r"^[A-Z]+(-\d\d)?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# A Kubernetes label key (optional DNS-subdomain prefix, then a name) and value.
LABEL_KEY = re.compile(rf"^({DNS_SUBDOMAIN.pattern[1:-1]}/)?[A-Za-z0-9]([-A-Za-z0-9_.]{{0,61}}[A-Za-z0-9])?$")
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")

# The objects whose pods dralab patches: labels, the emulated hardware, container settings.
WORKLOAD_KINDS = ("DaemonSet", "Deployment")
WORKLOAD = re.compile(rf"^({'|'.join(WORKLOAD_KINDS)})/{DNS_SUBDOMAIN.pattern.removeprefix('^')}")

# `hardware: none`: a driver that needs no emulated hardware (it publishes devices of its own
# making, or those a kind node really has); the checks that count or fault the emulated devices SKIP.
NO_HARDWARE = "none"

# What the lab fills in (the kubelet root dir of its nodes, the reference drivers' image, the
# emulated sysfs and NVIDIA driver root as nodes see them) and the profile's own namespace.
LAB_PARAMETERS = ("KUBELET_ROOT_DIR", "DRIVERS_IMAGE", "HARDWARE_SYSFS_ROOT", "HARDWARE_DRIVER_ROOT", "NAMESPACE", "KUBERNETES_VERSION")


def _not_lab_owned(parameters: dict[str, str]) -> dict[str, str]:
    """Parameters of a profile or variant: none of them may be one the lab sets."""
    taken = sorted(set(parameters) & set(LAB_PARAMETERS))
    if taken:
        raise ValueError(f"{taken} are set by the lab, not by a profile")
    return parameters


class Capability(str, Enum):
    METADATA = "metadata"  # KEP-5304 immediate metadata
    METADATA_DEFERRED = "metadata-deferred"  # KEP-5304 updates after prepare (network drivers)
    DEVICE_STATUS = "device-status"  # KEP-4817 status.devices
    NETWORK_DATA = "network-data"  # KEP-4817 networkData
    DEVICE_PLUGIN = "device-plugin"  # the classic device plugin API
    HEALTH = "health"  # device faults reach the pods (KEP-4680 health stream) or the slices (KP-10)
    EXCLUSIVE_CPUS = "exclusive-cpus"  # its devices are CPUs a claim's containers get alone (KP-13; cpuDevices says which)


class SysfsExposure(str, Enum):
    """How the emulated sysfs reaches the driver's containers (HW-05)."""

    STANDARD = "standard"  # bind-mounted at /sys/bus/pci, /sys/devices, ... for unmodified drivers
    ROOT = "root"  # the whole tree at one path, passed as --sysfs-root
    NONE = "none"


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Image(Model):
    """An image to import into every node: a tarball (OCI layout or docker-archive) the vendor
    brings, `reference: drivers` (dralab's own reference-driver image built by provision), or
    `build`, assembled by dralab from the profile's module."""

    archive: Path | None = None
    reference: str | None = None
    build: BuiltImage | None = None

    @model_validator(mode="after")
    def _one(self) -> "Image":
        if [self.archive, self.reference, self.build].count(None) != 2:
            raise ValueError("give exactly one of archive (a tarball path), reference: drivers, or build")
        if self.reference not in (None, "drivers"):
            raise ValueError(f"reference {self.reference!r}: the only reference image is 'drivers'")
        return self


class Chart(Model):
    """The driver's helm chart, rendered at deploy by dralab's pinned helm (`helm template`, its
    CRDs included) as release `<profile name>` in the profile's namespace; its objects are applied
    with the profile's manifests, CRDs first. Values are templates as manifests are: `${NAME}`
    takes the profile's parameters and the lab's."""

    path: Path = Field(
        description="the chart directory or packaged chart (.tgz), relative to the profile file (to the module's root with inModule)"
    )
    in_module: bool = Field(default=False, alias="inModule", description="the chart is the one in the profile's module, at path in it")
    values_files: list[Path] = Field(
        default_factory=list, alias="valuesFiles", description="values files, relative to the profile file; a later one wins"
    )
    values: dict[str, Any] = Field(default_factory=dict, description="values that win over the valuesFiles")


class ContainerSettings(Model):
    """Environment variables and args for one container of one workload, as rendered. For a
    chart whose container runs its binary through `bash -c`, which drops appended args but keeps
    its environment, and for pods whose containers take different flags."""

    workload: str = Field(
        pattern=WORKLOAD.pattern,
        description=(f"the workload as Kind/name ({', '.join(WORKLOAD_KINDS)}), named as rendered: DaemonSet/acme-gpu-kubelet-plugin"),
    )
    container: str = Field(pattern=DNS_LABEL.pattern, description="the container's name, a regular or an init container")
    env: dict[Annotated[str, Field(pattern=r"^[^=]+$")], str] = Field(
        default_factory=dict, description=("environment variables to set, in place of the container's own of the same name; literal values")
    )
    args: list[str] = Field(default_factory=list, description="appended to the container's args; literal")

    @model_validator(mode="after")
    def _env_or_args(self) -> "ContainerSettings":
        if not self.env and not self.args:
            raise ValueError("give env, args or both")
        return self


# The variant that deploys the driver with device metadata turned off (MD-15); a profile
# without it gets MD-15 skipped.
METADATA_DISABLED = "metadata-disabled"


class Variant(Model):
    """Another way to deploy the driver: extra container args, env and manifests, template
    parameters and chart values of its own. A broken variant (MUT-01) names the requirements it
    must break (FAIL); a valid one (MUT-02: another choice a correct driver may make) breaks
    nothing and names the SHOULDs it misses in `warns` (WARNING, still certifiable);
    METADATA_DISABLED is a configuration the suites ask for by name."""

    args: list[str] = Field(
        default_factory=list,
        description=(
            "appended to every regular container (not the init containers) of every workload; for some containers "
            "only, or with a chart that drops appended args (bash -c), use containers"
        ),
    )
    containers: list[ContainerSettings] = Field(
        default_factory=list,
        description=("env and args for named containers in this variant, applied after the profile's containers (they win)"),
    )
    chart_values: dict[str, Any] = Field(
        default_factory=dict,
        alias="chartValues",
        description=("helm values merged over the chart's (helm merges maps, a list replaces a list); templates as chart.values"),
    )
    manifests: list[Path] = Field(default_factory=list)
    parameters: dict[str, str] = Field(
        default_factory=dict,
        description=("template parameters that win over the profile's in this variant (another CDI spec directory, say)"),
    )
    breaks: list[str] = Field(default_factory=list)
    warns: list[str] = Field(default_factory=list)
    device_classes: list[Annotated[str, Field(pattern=DNS_SUBDOMAIN.pattern)]] | None = Field(
        default=None,
        alias="deviceClasses",
        description="the device classes to request the driver's devices with in this variant, instead of the "
        "profile's deviceClasses (one its manifests bring)",
    )
    violations: dict[str, str] = Field(
        default_factory=dict,
        description=("per ID it breaks, a regular expression the FAIL's message must match: the violation named (MUT-01)"),
    )
    concerns: list[str] = Field(
        default_factory=list,
        description=(
            "for a valid variant (MUT-02): the requirement IDs or suites (MD, ST-01) its choice can change the outcome "
            "of; `dralab selfcheck` certifies it on those and DEP instead of on every requirement of the driver "
            "(empty: every one)"
        ),
    )
    claims_serve_one_pod: bool | None = Field(
        default=None, alias="claimsServeOnePod", description=("the profile's claimsServeOnePod in this variant")
    )
    seeds: int = Field(
        default=1,
        ge=1,
        description=(
            "for a broken variant whose fault only the generated workloads show (MUT-03): how many seeds of them "
            "`dralab selfcheck` draws in turn, each --budget shapes, so that a shape showing it comes up in every run"
        ),
    )

    _lab_owned = field_validator("parameters")(_not_lab_owned)

    @field_validator("breaks", "warns")
    @classmethod
    def _ids(cls, v: list[str]) -> list[str]:
        bad = [i for i in v if not REQUIREMENT_ID.match(i)]
        if bad:
            raise ValueError(f"{bad} are not requirement IDs like MD-04")
        return v

    @model_validator(mode="after")
    def _violations_of_what_it_breaks(self) -> "Variant":
        stray = sorted(set(self.violations) - set(self.breaks))
        if stray:
            raise ValueError(f"violations name {stray}, which the variant does not break (breaks: {self.breaks})")
        for rid, pattern in self.violations.items():
            try:
                re.compile(pattern)
            except re.error as e:
                raise ValueError(f"violations[{rid}] {pattern!r} is not a regular expression: {e}") from None
        bad = [c for c in self.concerns if not REQUIREMENT_ID_OR_SUITE.match(c)]
        if bad:
            raise ValueError(f"concerns {bad} are not requirement IDs or suites like MD-04 or ST")
        if self.concerns and self.breaks:
            raise ValueError("concerns is for a valid variant: a broken one is checked on what it breaks")
        return self


# A Kubernetes release as a driver's project names it: a minor version (every patch) or a patch release.
KUBERNETES_RELEASE = re.compile(r"^v1\.\d+(\.\d+)?$")


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in version.removeprefix("v").split("."))


def _at_most(older: tuple[int, ...], newer: tuple[int, ...]) -> bool:
    """older <= newer on the parts both give: v1.36 is at most v1.36.3, and v1.36.3 at most v1.36."""
    common = min(len(older), len(newer))
    return older[:common] <= newer[:common]


class KubernetesVersions(Model):
    """The Kubernetes versions the driver's own project says it supports: `dralab matrix` runs no
    cell of another version (a SKIP cell with this range and its source)."""

    # The schema says what _a_range does, so that an editor flags a range without bounds.
    model_config = ConfigDict(**Model.model_config, json_schema_extra={"anyOf": [{"required": ["min"]}, {"required": ["max"]}]})
    min: str | None = Field(
        default=None, pattern=KUBERNETES_RELEASE.pattern, description=("the oldest version supported: v1.X (every patch of it) or v1.X.Y")
    )
    max: str | None = Field(
        default=None, pattern=KUBERNETES_RELEASE.pattern, description=("the newest version supported: v1.X (every patch of it) or v1.X.Y")
    )
    source: str = Field(
        min_length=1, description=("where the driver's project says so, at the pinned version: a file (and line) of its module, or a URL")
    )

    @model_validator(mode="after")
    def _a_range(self) -> "KubernetesVersions":
        if self.min is None and self.max is None:
            raise ValueError("give min, max or both")
        if self.min and self.max and not _at_most(_release(self.min), _release(self.max)):
            raise ValueError(f"min {self.min} is newer than max {self.max}")
        return self

    def supports(self, version: str) -> bool:
        """Whether `version` (v1.X.Y) is in the range; a bound v1.X takes every patch of v1.X."""
        release = _release(version)
        return (self.min is None or _at_most(_release(self.min), release)) and (self.max is None or _at_most(release, _release(self.max)))

    def __str__(self) -> str:
        if self.min and self.max:
            return f"{self.min} to {self.max}"
        return f">= {self.min}" if self.min else f"<= {self.max}"


class CpuScope(str, Enum):
    """What a CPU device's attribute value names: one CPU, or the CPUs of a NUMA node or a socket
    as the node's topology lists them."""

    CPU = "cpu"
    NUMA_NODE = "numaNode"
    SOCKET = "socket"


class CpuDevices(Model):
    """How a CPU driver's devices stand for the node's CPUs, which KP-13 holds each container using
    them to."""

    attributes: dict[Annotated[str, Field(min_length=1)], CpuScope] = Field(
        min_length=1,
        description=(
            "attribute name -> what its value names (cpu, numaNode, socket): the first of them, in this order, that a device "
            "publishes tells which CPUs it stands for (dra.cpu/cpuID: cpu, dra.cpu/numaNodeID: numaNode)"
        ),
    )
    capacity: str | None = Field(
        default=None,
        description=(
            "the device capacity whose consumption (the allocation's consumedCapacity) counts the CPUs a claim "
            "gets; without it, or where an allocation consumed none, a claim gets all of the device's CPUs"
        ),
    )


class Rendering(NamedTuple):
    """One rendering of a profile's objects: the template parameters, the manifests, the variant
    whose chartValues the chart takes (None: the profile's values alone) and the variants (None:
    the profile alone) that deploy these objects."""

    params: dict[str, str]
    manifests: list[Path]
    chart_variant: str | None
    variants: list[str | None]


class DriverProfile(Model):
    name: str = Field(pattern=r"^[a-z0-9][-a-z0-9]*$")
    description: str
    drivers: list[str] = Field(default_factory=list, description="DRA driver names")
    extended_resources: list[str] = Field(default_factory=list, alias="extendedResources", description="device plugin resource names")
    capabilities: list[Capability]
    device_classes: list[str] = Field(default_factory=list, alias="deviceClasses")
    hardware: str = Field(
        description="the hardware profile the driver expects on every node (a name in "
        "fake_hardware/profiles or a .yaml path), or none for a driver that needs no "
        "emulated hardware"
    )
    sysfs: SysfsExposure = Field(
        default=SysfsExposure.STANDARD,
        description="how the emulated sysfs reaches the driver's containers; none by default with hardware: none",
    )
    driver_root: str | None = Field(
        default=None,
        alias="driverRoot",
        pattern=r"^/",
        description="mount the node's NVIDIA driver root (libnvidia-ml.so.1, dev/nvidia*, "
        "proc/driver/nvidia) at this path in the driver's containers",
    )
    host_root: str | None = Field(
        default=None,
        alias="hostRoot",
        pattern=r"^/.",
        description="mount the node's root (its tree at sys, /dev, /proc, the driver root, "
        "a modprobe) at this path in the driver's containers, where a chart "
        "expects the host's / (NVIDIA's /host-root)",
    )
    namespace: str = Field(pattern=DNS_LABEL.pattern)
    images: list[Image] = Field(min_length=1)
    manifests: list[Path] = Field(
        default_factory=list,
        description="manifest templates, relative to the profile file; ${NAME} takes the profile's parameters and the lab's",
    )
    chart: Chart | None = None
    module: GoModule | None = Field(
        default=None, description=("the Go module dralab builds the `build` images from and takes an inModule chart from")
    )
    containers: list[ContainerSettings] = Field(
        default_factory=list, description=("env and args for named containers of the rendered workloads (a variant's follow)")
    )
    parameters: dict[str, str] = Field(default_factory=dict)
    node_labels: dict[Annotated[str, Field(pattern=LABEL_KEY.pattern)], Annotated[str, Field(pattern=LABEL_VALUE.pattern)]] = Field(
        default_factory=dict,
        alias="nodeLabels",
        description=(
            "labels put on every node while the driver is deployed, where its chart's node affinity asks for "
            'what a real cluster\'s feature discovery sets (nvidia.com/gpu.present: "true"); removed with it'
        ),
    )
    # Opaque parameters the suites put in their claims for this driver (a network driver needs
    # an interface to configure); none by default.
    claim_config: dict[str, Any] | None = Field(default=None, alias="claimConfig")
    claims_serve_one_pod: bool = Field(
        default=False,
        alias="claimsServeOnePod",
        description=(
            "each claim serves one pod at a time (its device moves into that pod's network namespace, say): the "
            "suites' pods share no claim, and a claim of one pod must still be prepared"
        ),
    )
    claims_serve_one_container: bool = Field(
        default=False,
        alias="claimsServeOneContainer",
        description=(
            "each claim serves one container (its devices are that container's alone: exclusive CPUs, say): in the "
            "suites' pods no two containers use one claim, and no two pods"
        ),
    )
    cpu_devices: CpuDevices | None = Field(
        default=None,
        alias="cpuDevices",
        description="for a driver of exclusive CPUs: which CPUs each device stands for (KP-13 judges the containers' cpusets)",
    )
    findings: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "for a public driver: per requirement ID it FAILs, the cause read in the driver's own code at the pinned "
            "version (file:line and what it does), shown with the matrix's finding, ready to file upstream"
        ),
    )
    variants: dict[str, Variant] = Field(default_factory=dict)
    kubernetes_versions: KubernetesVersions | None = Field(
        default=None,
        alias="kubernetesVersions",
        description=(
            "the Kubernetes versions the driver's own project supports (min, max, and where it says so); "
            "`dralab matrix` shows a cell of another version as SKIP instead of certifying it (default: every one)"
        ),
    )
    # Where the profile file is; set by load_profile, resolves the relative paths above.
    source: Path = Field(default=Path("."), exclude=True)

    @field_validator("drivers", "device_classes")
    @classmethod
    def _dns(cls, v: list[str]) -> list[str]:
        bad = [n for n in v if not DNS_SUBDOMAIN.match(n)]
        if bad:
            raise ValueError(f"{bad} are not DNS subdomains (lower case, dots, dashes)")
        return v

    _lab_owned = field_validator("parameters")(_not_lab_owned)

    @model_validator(mode="before")
    @classmethod
    def _no_hardware_no_sysfs(cls, data: Any) -> Any:
        """With hardware: none there is no emulated sysfs to mount: sysfs defaults to none."""
        if isinstance(data, dict) and data.get("hardware") == NO_HARDWARE and "sysfs" not in data:
            return {**data, "sysfs": SysfsExposure.NONE.value}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> "DriverProfile":
        if not self.needs_hardware and self.sysfs is not SysfsExposure.NONE:
            raise ValueError(
                f"sysfs: {self.sysfs.value} mounts the emulated hardware into the driver's containers, "
                "and hardware is none: drop sysfs, or name a hardware profile"
            )
        if not self.needs_hardware and self.driver_root:
            raise ValueError(
                "driverRoot mounts the emulated GPUs' NVIDIA driver root, and hardware is none: "
                "drop driverRoot, or name a hardware profile with GPUs"
            )
        if not self.needs_hardware and self.host_root:
            raise ValueError("hostRoot mounts the emulated node's root, and hardware is none: drop hostRoot, or name a hardware profile")
        built = [i for i in self.images if i.build is not None]
        if (built or (self.chart and self.chart.in_module)) and self.module is None:
            raise ValueError("build images and a chart inModule come from the profile's module: give module (path and version)")
        if not self.manifests and self.chart is None:
            raise ValueError("give the driver's manifests, its chart, or both")
        valued = [n for n, v in self.variants.items() if v.chart_values]
        if valued and self.chart is None:
            raise ValueError(f"variants {', '.join(valued)} set chartValues, and the profile has no chart")
        if self.has(Capability.EXCLUSIVE_CPUS) != (self.cpu_devices is not None):
            raise ValueError(
                "capability exclusive-cpus and cpuDevices go together: cpuDevices says which CPUs each device stands "
                "for, which is what KP-13 holds the containers of a driver of exclusive CPUs to"
            )
        if not self.drivers and not self.extended_resources:
            raise ValueError("name at least one DRA driver (drivers) or device plugin resource (extendedResources)")
        if Capability.DEVICE_PLUGIN in self.capabilities and not self.extended_resources:
            raise ValueError("capability device-plugin needs extendedResources")
        if Capability.NETWORK_DATA in self.capabilities and Capability.DEVICE_STATUS not in self.capabilities:
            raise ValueError("capability network-data is part of device-status: claim both")
        return self

    @property
    def needs_hardware(self) -> bool:
        return self.hardware != NO_HARDWARE

    def has(self, capability: Capability | str) -> bool:
        return Capability(capability) in self.capabilities

    def unsupported_kubernetes(self, version: str) -> str | None:
        """Why the driver's own project does not support Kubernetes `version`; None when it does."""
        supported = self.kubernetes_versions
        if supported is None or supported.supports(version):
            return None
        return f"{self.name} supports Kubernetes {supported} per {supported.source}"

    def path(self, relative: Path) -> Path:
        return relative if relative.is_absolute() else self.source.parent / relative

    def chart_path(self) -> Path:
        """The chart directory or packaged chart: the profile's own, or the one in its module
        (downloaded through the Go module proxy first)."""
        assert self.chart is not None
        if not self.chart.in_module:
            return self.path(self.chart.path)
        assert self.module is not None
        chart = module_dir(self.module.path, self.module.version) / self.chart.path
        if not (chart / "Chart.yaml").is_file() and not chart.is_file():
            raise BadInput(
                f"driver profile {self.source}: chart {self.chart.path} is not a chart in module "
                f"{self.module.path}@{self.module.version} ({chart} has no Chart.yaml): give its path "
                "relative to the module's root"
            )
        return chart

    def variant(self, name: str | None) -> Variant | None:
        if name is None:
            return None
        if name not in self.variants:
            known = ", ".join(sorted(self.variants)) or "none"
            raise BadInput(f"driver profile {self.name} has no variant {name!r} (its variants: {known})")
        return self.variants[name]

    def in_variant(self, name: str | None) -> "DriverProfile":
        """The profile as the suites see it deployed in variant `name`: with the device classes and
        the claimsServeOnePod the variant sets, where it sets them."""
        chosen = self.variant(name)
        if chosen is None:
            return self
        changed = {"device_classes": chosen.device_classes, "claims_serve_one_pod": chosen.claims_serve_one_pod}
        return self.model_copy(update={k: v for k, v in changed.items() if v is not None})

    def broken_variants(self) -> list[str]:
        return sorted(n for n, v in self.variants.items() if v.breaks)

    def second_instance(self, suffix: str) -> "DriverProfile":
        """The same driver deployed again under other names (MD-07 needs two drivers): profile
        `{name}-{suffix}`, namespace `{namespace}-{suffix}`, DRA driver and device class
        `{first label}-{suffix}.{rest}`. Only for profiles whose manifests take DRIVER_NAME and
        COMPONENT from the parameters, as the reference drivers' do."""
        needed = {"DRIVER_NAME", "COMPONENT"} - set(self.parameters)
        if needed or len(self.drivers) != 1:
            raise BadInput(
                f"driver profile {self.name} cannot be deployed twice: it needs exactly one driver and "
                f"the parameters DRIVER_NAME and COMPONENT (missing: {', '.join(sorted(needed)) or 'none'})"
            )
        first, _, rest = self.drivers[0].partition(".")
        driver = f"{first}-{suffix}.{rest}" if rest else f"{first}-{suffix}"
        parameters = {**self.parameters, "DRIVER_NAME": driver, "COMPONENT": f"{self.parameters['COMPONENT']}-{suffix}"}
        return self.model_copy(
            update={
                "name": f"{self.name}-{suffix}",
                "namespace": f"{self.namespace}-{suffix}",
                "drivers": [driver],
                "device_classes": [driver] if self.device_classes else [],
                "parameters": parameters,
            }
        )

    def template_parameters(self, lab: Mapping[str, str], variant: str | None = None) -> dict[str, str]:
        """What `${NAME}` in the manifests becomes: the profile's parameters, the variant's over
        them, the lab's, the namespace."""
        chosen = self.variant(variant)
        return {**self.parameters, **(chosen.parameters if chosen else {}), **lab, "NAMESPACE": self.namespace}

    def container_settings(self, variant: str | None) -> list[tuple[str, ContainerSettings]]:
        """The targeted env and args a deployment of `variant` applies, each with its field: the
        profile's, then the variant's, which win."""
        chosen = self.variant(variant)
        theirs = chosen.containers if chosen else []
        return [(f"containers.{i}", s) for i, s in enumerate(self.containers)] + [
            (f"variants.{variant}.containers.{i}", s) for i, s in enumerate(theirs)
        ]

    def renderings(self, lab: Mapping[str, str], variants: Iterable[str | None]) -> list[Rendering]:
        """What renders every object `variants` deploy (None: the profile alone): one entry per
        distinct set of parameters and chart values, so the chart, rendered once per entry, is not
        rendered again for variants that only add args, env or manifests."""
        found: dict[tuple[tuple[tuple[str, str], ...], str], Rendering] = {}
        for name in variants:
            params = self.template_parameters(lab, name)
            chosen = self.variant(name)
            chart_variant = name if chosen and chosen.chart_values else None
            values = yaml.safe_dump(chosen.chart_values if chosen else {}, sort_keys=True)
            entry = found.setdefault(
                (tuple(sorted(params.items())), values), Rendering(params, list(dict.fromkeys(self.manifests)), chart_variant, [])
            )
            entry.manifests.extend(m for m in (chosen.manifests if chosen else []) if m not in entry.manifests)
            entry.variants.append(name)
        return list(found.values())

    def reference_problems(self) -> list[str]:
        """Files the profile names that do not exist and an unknown hardware profile, one message
        each: load_profile refuses them, validation lists them with the rest."""
        files = [("manifest", m) for m in self.manifests]
        files += [("image archive", i.archive) for i in self.images if i.archive is not None]
        files += [(f"manifest of variant {n}", m) for n, v in self.variants.items() for m in v.manifests]
        files += [("values file", v) for v in (self.chart.values_files if self.chart else [])]
        problems = [
            f"driver profile {self.source}: {what} {self.path(p)} does not exist (paths are relative to the profile file)"
            for what, p in files
            if not self.path(p).is_file()
        ]
        chart = self.path(self.chart.path) if self.chart and not self.chart.in_module else None
        if chart is not None and not (chart / "Chart.yaml").is_file() and not chart.is_file():
            problems.append(
                f"driver profile {self.source}: chart {chart} is neither a chart directory (with "
                "Chart.yaml) nor a packaged chart (paths are relative to the profile file)"
            )
        if self.needs_hardware:
            try:
                node_profile_path(self.hardware)
            except BadInput as e:
                problems.append(f"driver profile {self.source}: hardware: {e} (or none for a driver that needs no emulated hardware)")
        return problems

    def read_manifest(self, relative: Path, params: Mapping[str, str]) -> tuple[list[dict[str, Any]], list[str]]:
        """The objects of one manifest template with `params` substituted, and every problem with
        it (read_template's, and documents that are no Kubernetes object)."""
        path = self.path(relative)
        try:
            text = path.read_text()
        except OSError as e:
            return [], [f"cannot read manifest {path}: {e.strerror}"]
        docs, problems = self.read_template(f"manifest {path}", text, params)
        return docs, problems + object_problems(f"manifest {path}", docs)

    def read_template(self, what: str, text: str, params: Mapping[str, str]) -> tuple[list[Any], list[str]]:
        """The YAML documents of a template (a manifest, a chart's values) with `params` substituted,
        and every problem of `what`: parameters nobody sets, stray `$`s, YAML errors. A deploy stops
        at the problems; a validation lists them all, so an undefined parameter gets a stand-in
        value and the YAML is still checked."""
        names, invalid = template_placeholders(text)
        undefined = [n for n in names if n not in params]
        problems = [
            f"{what} uses ${{{n}}}, which neither driver profile {self.name} (parameters) nor "
            f"the lab ({', '.join(LAB_PARAMETERS)}) sets: add {n} to the profile's parameters"
            for n in undefined
        ]
        problems += [f"{what} line {line}: a $ that starts no ${{NAME}} (write a literal $ as $$)" for line in invalid]
        text = string.Template(text).safe_substitute({**params, **{n: n for n in undefined}})
        try:
            return [d for d in yaml.safe_load_all(text) if d is not None], problems
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            return [], problems + [f"{what} is not valid YAML after substitution{at}: {getattr(e, 'problem', None) or e}"]


def object_problems(what: str, docs: list[Any]) -> list[str]:
    """Documents of `what` that are no Kubernetes object (no apiVersion, kind or metadata.name)."""
    problems = []
    for i, doc in enumerate(docs, 1):
        obj = doc if isinstance(doc, dict) else {}
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        fields = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata.name": meta.get("name")}
        missing = [f for f, value in fields.items() if not value]
        if missing:
            problems.append(f"{what} document {i} is not a Kubernetes object: it has no {', '.join(missing)}")
    return problems


def template_placeholders(text: str) -> tuple[list[str], list[int]]:
    """The parameter names a manifest template uses (`${X}` and `$X`; `$$` is a literal $), in
    order of first use, and the lines of `$`s that start no placeholder."""
    names: list[str] = []
    invalid: list[int] = []
    for m in string.Template.pattern.finditer(text):
        name = m.group("named") or m.group("braced")
        if name:
            names.append(name)
        elif m.group("invalid") is not None:
            invalid.append(text.count("\n", 0, m.start()) + 1)
    return list(dict.fromkeys(names)), invalid


def load_profile(name_or_path: str) -> DriverProfile:
    path = profile_path(name_or_path, PROFILES_DIR, WHAT)
    data = load_yaml(path, WHAT)
    profile = validated(DriverProfile, data, path, WHAT).model_copy(update={"source": path.resolve()})
    problems = profile.reference_problems()
    if problems:
        raise BadInput("\n".join(problems))
    return profile


def shipped_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))
