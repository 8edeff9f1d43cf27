"""Pinned versions of every component the lab builds. Changing one changes the cache key."""

KUBERNETES = "v1.37.1"
# k8s.io/kubernetes requires its staging modules at v0.0.0; the wrapper module replaces them.
KUBERNETES_STAGING = "v0.37.1"
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
