"""The recipes for every binary the lab runs, at the versions pinned in clusters.versions."""

from __future__ import annotations

from pathlib import Path

from clusters import versions
from clusters.provision.gobuild import RECIPES, GoRecipe

REPO = Path(__file__).resolve().parents[2]


def _stamp(package: str, values: dict[str, str]) -> str:
    return " ".join(f"-X {package}.{k}={v}" for k, v in values.items())


KUBE_COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl")


def kubernetes_recipe(version: str) -> GoRecipe:
    """Every Kubernetes component at `version` (one of versions.KUBERNETES_VERSIONS), one multi-call binary."""
    stamp = {
        "gitVersion": version,
        "gitMajor": version.split(".")[0].lstrip("v"),
        "gitMinor": version.split(".")[1],
        "gitTreeState": "clean",
    }
    return GoRecipe(
        name="kubernetes",
        version=version,
        requires={"k8s.io/kubernetes": version},
        pin_unversioned_requires_of=("k8s.io/kubernetes", versions.staging(version)),
        recipe_dir=RECIPES / "kubernetes",
        binaries={"kube": "."},
        links={name: "kube" for name in KUBE_COMPONENTS},
        ldflags=" ".join(["-s -w", _stamp("k8s.io/component-base/version", stamp), _stamp("k8s.io/client-go/pkg/version", stamp)]),
    )


KUBERNETES = kubernetes_recipe(versions.KUBERNETES)

ETCD = GoRecipe(
    name="etcd",
    version=versions.ETCD,
    requires={
        m: versions.ETCD
        for m in (
            "go.etcd.io/etcd/server/v3",
            "go.etcd.io/etcd/api/v3",
            "go.etcd.io/etcd/client/pkg/v3",
            "go.etcd.io/etcd/client/v3",
            "go.etcd.io/etcd/pkg/v3",
        )
    },
    recipe_dir=RECIPES / "etcd",
    binaries={"etcd": "."},
)

_containerd = "github.com/containerd/containerd/v2"
CONTAINERD = GoRecipe(
    name="containerd",
    version=versions.CONTAINERD,
    requires={_containerd: versions.CONTAINERD},
    binaries={name: f"{_containerd}/cmd/{name}" for name in ("containerd", "containerd-shim-runc-v2", "ctr")},
    tags=("urfave_cli_no_docs", "no_btrfs"),
    ldflags=f"-s -w -X {_containerd}/version.Version={versions.CONTAINERD}",
)

RUNC = GoRecipe(
    name="runc",
    version=versions.RUNC,
    requires={"github.com/opencontainers/runc": versions.RUNC},
    binaries={"runc": "github.com/opencontainers/runc"},
    cgo=True,  # runc's nsenter is C
    tags=("seccomp",),
    ldflags=f"-s -w -X main.version={versions.RUNC.lstrip('v')}",
)

# This repository's own programs, each in the room its purpose names and built in place from that
# room's Go module (docs/architecture.md, "Go code"), all into one cached component: the reference
# drivers; the probes the suites run as pods of the drivers image (dp-probe, dra-probe) or on a
# node (nri-probe), and the workload image's incluster-whoami; the FUSE server that gives the
# emulated sysfs the kernel's write semantics (fake_hardware/agent.py) and the modprobe of a node's
# host root (fake_hardware/host_root.py); the recorder between each node's kubelet and its plugins
# (clusters/plugin_calls.py) and the socket proxy `dralab qualify`'s upstream suite runs on each
# node (the hostpathplugin image's proxy mode).
DRIVER_BINARIES = ("vf-dra-driver", "fake-gpu-plugin", "dp-probe", "dra-probe")
DRIVERS_UNDER_TEST = GoRecipe(
    name="drivers-under-test",
    version="local",
    local_root=REPO,
    binaries={
        "vf-dra-driver": "drivers_under_test/cmd/vf-dra-driver",
        "fake-gpu-plugin": "drivers_under_test/cmd/fake-gpu-plugin",
        "dp-probe": "suites/device_plugin/probes/dp-probe",
        "dra-probe": "suites/kubelet_plugin/probes/dra-probe",
        "nri-probe": "suites/lab/probes/nri-probe",
        "incluster-whoami": "suites/probes/incluster-whoami",
        "sysfs-fuse": "fake_hardware/cmd/sysfs-fuse",
        "modprobe": "fake_hardware/cmd/modprobe",
        "plugin-recorder": "clusters/cmd/plugin-recorder",
        "socket-proxy": "clusters/cmd/socket-proxy",
    },
)

# With cgo: the lab's NVML, libnvidia-ml.so.1 (HW-10), a C shared library, and nvidia-smi over it,
# both for the driver roots of nodes with GPUs, and the GPU driver, which loads an NVML through
# go-nvml (dlopen). The drivers image carries the C library they link against.
CGO_DRIVER_BINARIES = ("gpu-dra-driver",)
NVML_LIBRARY_FILE = "libnvidia-ml.so.1"
NVIDIA_SMI_FILE = "nvidia-smi"
DRIVERS_WITH_CGO = GoRecipe(
    name="drivers-under-test-cgo",
    version="local",
    local_root=REPO,
    binaries={
        NVML_LIBRARY_FILE: "fake_hardware/cmd/libnvidia-ml",
        NVIDIA_SMI_FILE: "fake_hardware/cmd/nvidia-smi",
        **{name: f"drivers_under_test/cmd/{name}" for name in CGO_DRIVER_BINARIES},
    },
    cgo=True,
)

_helm = "helm.sh/helm/v4"
HELM = GoRecipe(
    name="helm",
    version=versions.HELM,
    requires={_helm: versions.HELM},
    binaries={"helm": f"{_helm}/cmd/helm"},
    ldflags=f"-s -w -X {_helm}/internal/version.version={versions.HELM}",
)

_kwok = "sigs.k8s.io/kwok"
# The kwok controller as released, and kwok-stages (recipes/kwok), which prints the default stages
# of the same kwok version for its --config.
KWOK = GoRecipe(
    name="kwok",
    version=versions.KWOK,
    requires={_kwok: versions.KWOK},
    recipe_dir=RECIPES / "kwok",
    binaries={"kwok": f"{_kwok}/cmd/kwok", "kwok-stages": "."},
)

GO_RECIPES = (KUBERNETES, ETCD, CONTAINERD, RUNC, DRIVERS_UNDER_TEST, DRIVERS_WITH_CGO, HELM, KWOK)

# Debian packages the lab uses as they are: CNI plugins, iptables for kube-proxy, the workload
# image's busybox (and bash, for public drivers' images), libseccomp for building runc, and
# chromium, which renders the HTML reports in their tests (headless screenshots), and lspci with
# pci.ids, the reference reader of the emulated PCI tree in its tests.
DEBIAN_PACKAGES = {
    "containernetworking-plugins": Path("/usr/lib/cni/bridge"),
    "busybox-static": Path("/bin/busybox"),
    "bash-static": Path("/bin/bash-static"),
    "libseccomp-dev": Path("/usr/include/seccomp.h"),
    "iptables": Path("/usr/sbin/iptables"),
    "conntrack": Path("/usr/sbin/conntrack"),
    "chromium": Path("/usr/bin/chromium"),
    "pciutils": Path("/usr/bin/lspci"),
    "pci.ids": Path("/usr/share/misc/pci.ids"),
}
CNI_BIN_DIR = Path("/usr/lib/cni")
# The static tools a driver's image may get (from_module.BuiltImage.tools), as in /bin of the image.
STATIC_TOOLS = {"busybox": DEBIAN_PACKAGES["busybox-static"], "bash": DEBIAN_PACKAGES["bash-static"]}


def e2e_dra_recipe(version: str) -> GoRecipe:
    """Kubernetes' own DRA e2e suite at `version` (`dralab qualify`): the test/e2e/dra package and
    the e2e framework as one test binary (recipes/e2e_dra), ginkgo at the version Kubernetes
    pins, and upstream's sample device plugin, which some specs deploy."""
    kubernetes = kubernetes_recipe(version)
    return GoRecipe(
        name="e2e-dra",
        version=version,
        requires=kubernetes.requires,
        pin_unversioned_requires_of=kubernetes.pin_unversioned_requires_of,
        recipe_dir=RECIPES / "e2e_dra",
        binaries={"ginkgo": "github.com/onsi/ginkgo/v2/ginkgo", "sampledeviceplugin": "k8s.io/kubernetes/test/images/sample-device-plugin"},
        tests={"e2e-dra.test": "."},
    )
