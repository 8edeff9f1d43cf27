"""Pinned versions of every component the lab builds. Changing one changes the cache key."""

KUBERNETES = "v1.37.1"
# The versions a lab can run (`--kubernetes-version`), newest last; KUBERNETES is the default.
# Patch releases the Go module proxy serves.
KUBERNETES_VERSIONS = ("v1.35.4", "v1.36.3", KUBERNETES)


def staging(kubernetes: str) -> str:
    """k8s.io/kubernetes requires its staging modules (k8s.io/api, ...) at v0.0.0; the wrapper module
    replaces them with the tag each is released under: v1.37.1 -> v0.37.1."""
    return "v0." + kubernetes.removeprefix("v1.")


KUBERNETES_STAGING = staging(KUBERNETES)


def unsupported(kubernetes: str) -> str | None:
    """Why a lab cannot run `kubernetes`; None when it can."""
    if kubernetes in KUBERNETES_VERSIONS:
        return None
    return f"Kubernetes {kubernetes} is not one dralab builds; choose one of {', '.join(KUBERNETES_VERSIONS)}"


ETCD = "v3.7.3"
CONTAINERD = "v2.3.7"
RUNC = "v1.4.3"
NRI = "v0.12.5"
# helm renders the charts driver profiles may name (`helm template`); it never talks to a cluster.
HELM = "v4.3.1"
# kwok's controller runs the lab's nodes without a kubelet (LAB-09): Node objects Ready with their
# leases renewed, pods bound to them Running.
KWOK = "v0.8.0"
# The kind provider (LAB-06): kind's CLI, built from its Go module, and the CoreDNS of its
# offline node image, the version kubeadm KUBERNETES names (`kubeadm config images list`).
KIND = "v0.33.0"
COREDNS = "v1.14.6"

# containerd's pinned sandbox image (internal/cri/config DefaultSandboxImage in CONTAINERD):
# the local pause image is tagged exactly so, so containerd never tries to pull it.
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.2"
WORKLOAD_IMAGE = "dralab.dev/workload:lab"
# The reference drivers (drivers_under_test/), one image for all of them, tagged with the
# build's source hash so that a rebuilt driver rolls out to running DaemonSets.
DRIVERS_IMAGE_REPO = "dralab.dev/drivers"

# The allure report CLI (npm package `allure`, version 3), which renders certify's allure results as HTML.
ALLURE = "3.18.0"

ALL = {
    "kubernetes": KUBERNETES,
    "etcd": ETCD,
    "containerd": CONTAINERD,
    "runc": RUNC,
    "nri": NRI,
    "helm": HELM,
    "kwok": KWOK,
}
