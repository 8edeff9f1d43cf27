"""What the kind provider builds from Go modules, besides the lab's own components: kind's CLI,
kubeadm (kind drives each node with it) and CoreDNS (kubeadm's DNS add-on, an image of the node)."""

from __future__ import annotations

from dataclasses import replace

from clusters import versions
from clusters.provision.components import KUBERNETES
from clusters.provision.gobuild import RECIPES, GoRecipe

KIND = GoRecipe(
    name="kind",
    version=versions.KIND,
    requires={"sigs.k8s.io/kind": versions.KIND},
    binaries={"kind": "sigs.k8s.io/kind"},
)

# The lab's own Kubernetes recipe (modules, pins, version stamps), for the one binary its
# multi-call build leaves out.
KUBEADM = replace(KUBERNETES, name="kubeadm", recipe_dir=None, links={}, binaries={"kubeadm": "k8s.io/kubernetes/cmd/kubeadm"})

_coredns = "github.com/coredns/coredns"
COREDNS = GoRecipe(
    name="coredns",
    version=versions.COREDNS,
    requires={_coredns: versions.COREDNS},
    recipe_dir=RECIPES / "coredns",  # kubeadm's Corefile's plugins only
    binaries={"coredns": "."},
    ldflags=f"-s -w -X {_coredns}/coremain.GitCommit={versions.COREDNS}",
)

KIND_RECIPES = (KIND, KUBEADM, COREDNS)
