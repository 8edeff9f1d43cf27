"""kind's node image, assembled offline: `kind build node-image` pulls its base and the cluster's
images from registries, which dralab never reaches. Instead:

- a Debian rootfs from mmdebstrap with the packages kind's base image installs (the ones a node
  uses), set up as kind's base Dockerfile does, with kind's own base files from its Go module;
- the lab's pinned containerd, runc, kubelet, kubectl, plus kubeadm, and Debian's CNI plugins;
- every image `kubeadm config images list` names, built from our binaries (provision's OCI
  archive code), and the lab's pause and workload images, imported into the node's containerd
  store at build time by the pinned containerd itself.

The result is a rootfs tarball cached under the dralab cache, keyed by everything that goes into
it; `docker import` turns it into the image (done under the lab lock, with the engine up).
The reference drivers' image changes with their sources: it is loaded at bring-up instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from clusters import versions
from basics.errors import BadInput, LabBroken
from clusters.kind import engine
from clusters.kind.recipes import COREDNS, KIND, KUBEADM
from basics.progress import run_logged, step
from clusters.provision import Toolchain, c_library_files, ensure_go, _prune, cache_root, images

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
# Named, not left to apt's trusted keys: on a host that is not Debian (an Ubuntu CI runner) those
# are the host's distribution's.
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# kind's base image packages (images/base/Dockerfile) that a node of ours uses.
PACKAGES = (
    "systemd",
    "dbus",
    "conntrack",
    "iptables",
    "nftables",
    "iproute2",
    "ethtool",
    "util-linux",
    "mount",
    "kmod",
    "libseccomp2",
    "pigz",
    "bash",
    "ca-certificates",
    "jq",
    "procps",
    "e2fsprogs",
)
KUBE_COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy")
CNI_PLUGINS = ("bridge", "host-local", "loopback", "portmap", "ptp")
# The etcd image is tagged with the lab's pinned etcd; the kind config tells kubeadm so.
ETCD_IMAGE_TAG = versions.ETCD
# kube-proxy (iptables mode) runs iptables and conntrack from its image: the host's Debian ones,
# in nft mode, as the node's entrypoint selects on a host with nf_tables.
XTABLES = Path("/usr/sbin/xtables-nft-multi")
XTABLES_PLUGINS = Path("/usr/lib/x86_64-linux-gnu/xtables")
IPTABLES_NAMES = tuple(f"{p}{s}" for p in ("iptables", "ip6tables") for s in ("", "-save", "-restore"))
ENTRYPOINT = ["/usr/local/bin/entrypoint", "/sbin/init"]


def kind_base_files() -> Path:
    """images/base/files of the pinned kind module (entrypoint, units, /kind/bin)."""
    out = subprocess.run(["go", "mod", "download", "-json", f"sigs.k8s.io/kind@{versions.KIND}"], capture_output=True, text=True)
    info = json.loads(out.stdout or "{}")
    if "Dir" not in info:
        raise LabBroken(f"cannot download sigs.k8s.io/kind@{versions.KIND}: {info.get('Error') or out.stderr}")
    return Path(info["Dir"]) / "images" / "base" / "files"


@dataclass(frozen=True)
class NodeImage:
    ref: str
    rootfs_tar: Path
    kubeadm_config: dict  # the ClusterConfiguration fields that make kubeadm name our images


def kubeadm_image_fields() -> dict:
    return {"etcd": {"local": {"imageTag": ETCD_IMAGE_TAG}}}


def _kube_layer_spec(tools: Toolchain, ref: str, component: str) -> images.ImageSpec:
    """One layer for every Kubernetes image (kube, its component names, iptables for kube-proxy):
    the images differ in their entrypoint only, so the node stores the layer once."""
    plugins = {str(p): p for p in sorted(XTABLES_PLUGINS.glob("*.so"))}
    conntrack = Path(shutil.which("conntrack") or "/usr/sbin/conntrack")
    return images.ImageSpec(
        ref=ref,
        files={
            "/usr/local/bin/kube": tools.kube("kube"),
            str(XTABLES): XTABLES,
            "/usr/sbin/conntrack": conntrack,
            **plugins,
            **c_library_files([XTABLES, conntrack, *plugins.values()]),
        },
        symlinks={**{f"/usr/local/bin/{c}": "kube" for c in KUBE_COMPONENTS}, **{f"/usr/sbin/{n}": XTABLES.name for n in IPTABLES_NAMES}},
        dirs=("/tmp", "/run", "/var/lib", "/etc"),
        entrypoint=[f"/usr/local/bin/{component}"],
    )


def cluster_image_specs(tools: Toolchain, kubeadm: Path, coredns: Path) -> list[images.ImageSpec]:
    """An image for every name `kubeadm config images list` gives for our versions."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as conf:
        yaml.safe_dump(
            {
                "apiVersion": "kubeadm.k8s.io/v1beta4",
                "kind": "ClusterConfiguration",
                "kubernetesVersion": versions.KUBERNETES,
                **kubeadm_image_fields(),
            },
            conf,
        )
        conf.flush()
        refs = subprocess.run(
            [str(kubeadm), "config", "images", "list", "--config", conf.name], capture_output=True, text=True, check=True
        ).stdout.split()
    specs = []
    for ref in refs:
        name = ref.rsplit("/", 1)[-1].split(":")[0]
        if name in KUBE_COMPONENTS:
            specs.append(_kube_layer_spec(tools, ref, name))
        elif name == "etcd":
            specs.append(
                images.ImageSpec(
                    ref=ref, files={"/usr/local/bin/etcd": tools.etcd}, dirs=("/tmp", "/var/lib"), entrypoint=["/usr/local/bin/etcd"]
                )
            )
        elif name == "coredns":
            if not ref.endswith(":" + versions.COREDNS):
                raise BadInput(f"kubeadm {versions.KUBERNETES} names {ref}; pin versions.COREDNS to its tag")
            specs.append(images.ImageSpec(ref=ref, files={"/coredns": coredns}, dirs=("/tmp", "/etc"), entrypoint=["/coredns"]))
        elif ref != versions.PAUSE_IMAGE:  # the lab's own pause image, already provisioned
            raise BadInput(f"kubeadm names an image dralab cannot build: {ref}")
    return specs


def _key(tools: Toolchain, kubeadm: Path, coredns: Path, kind: Path) -> str:
    """Of what goes in, by the cache's names for it (version and key), not where the cache is: a CI
    job restores it under another path."""

    def named(path: Path) -> str:
        return "/".join(path.parts[-2:])

    h = hashlib.sha256()
    h.update(
        json.dumps(
            [
                SUITE,
                PACKAGES,
                CNI_PLUGINS,
                ETCD_IMAGE_TAG,
                versions.KIND,
                versions.COREDNS,
                *map(named, (tools.kubernetes, tools.etcd_dir, tools.containerd, tools.runc_dir, kubeadm, coredns, kind)),
                [named(i.archive) for i in tools.node_images],
            ]
        ).encode()
    )
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:12]


def _base_rootfs(rootfs: Path, offline: bool, log: Path) -> None:
    """Debian with kind's base packages, cached as a tarball. mmdebstrap, not debootstrap: apt's
    parallel downloads make it 36 s here against debootstrap's 442."""
    cached = cache_root() / "kind" / f"rootfs-{SUITE}-{hashlib.sha256(' '.join(PACKAGES).encode()).hexdigest()[:12]}.tar"
    if not cached.exists():
        engine.apt_install({"mmdebstrap": "mmdebstrap", "debian-archive-keyring": KEYRING}, offline, log)
        cached.parent.mkdir(parents=True, exist_ok=True)
        with step(f"mmdebstrap {SUITE} (log: {log})"):
            run_logged(
                [
                    "mmdebstrap",
                    "--variant=minbase",
                    f"--include={','.join(PACKAGES)}",
                    f"--keyring={KEYRING}",
                    "--format=tar",
                    SUITE,
                    cached.with_suffix(".partial"),
                    MIRROR,
                ],
                log,
                what=f"mmdebstrap {SUITE}",
            )
            cached.with_suffix(".partial").rename(cached)
    rootfs.mkdir(parents=True)
    run_logged(["tar", "-C", rootfs, "--numeric-owner", "-xf", cached], log, what="unpacking the rootfs")


def _as_kind_base(rootfs: Path, log: Path) -> None:
    """What kind's base Dockerfile does to its Debian, with its files."""
    files = kind_base_files()
    for src in files.rglob("*"):
        if src.is_file():
            dst = rootfs / src.relative_to(files)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            executable = src.parent.name == "bin" or src.name in ("entrypoint", "clean-install")
            dst.chmod(0o755 if executable else 0o644)
    for pattern in (
        "lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service",
        "lib/systemd/system/multi-user.target.wants/*",
        "etc/systemd/system/*.wants/*",
        "lib/systemd/system/local-fs.target.wants/*",
        "lib/systemd/system/sockets.target.wants/*udev*",
        "lib/systemd/system/sockets.target.wants/*initctl*",
        "lib/systemd/system/basic.target.wants/*",
    ):
        for p in rootfs.glob(pattern):
            p.unlink()
    with open(rootfs / "etc/systemd/journald.conf", "a") as f:
        f.write("ReadKMsg=no\n")
    init = rootfs / "usr/sbin/init"
    init.unlink(missing_ok=True)
    init.symlink_to("/usr/lib/systemd/systemd")
    for unit in ("kubelet.service", "containerd.service", "undo-mount-hacks.service"):
        run_logged(["chroot", rootfs, "systemctl", "enable", unit], log, what=f"enabling {unit}")
    run_logged(["chroot", rootfs, "systemctl", "mask", "systemd-binfmt.service"], log, what="masking binfmt")
    (rootfs / "etc/kubernetes/manifests").mkdir(parents=True, exist_ok=True)
    config = rootfs / "etc/containerd/config.toml"
    config.write_text(
        config.read_text().replace('sandbox_image = "registry.k8s.io/pause:3.10"', f'sandbox_image = "{versions.PAUSE_IMAGE}"')
    )


def _binaries(rootfs: Path, tools: Toolchain, kubeadm: Path) -> None:
    def put(src: Path, dst: str) -> None:
        target = rootfs / dst.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
        target.chmod(0o755)

    for name in ("containerd", "containerd-shim-runc-v2", "ctr"):
        put(tools.containerd / name, f"/usr/local/bin/{name}")
    put(tools.runc, "/usr/local/sbin/runc")
    put(tools.kube("kube"), "/usr/bin/kube")
    for name in ("kubelet", "kubectl"):
        (rootfs / "usr/bin" / name).symlink_to("kube")
    put(kubeadm, "/usr/bin/kubeadm")
    for plugin in CNI_PLUGINS:
        put(tools.cni_bin_dir / plugin, f"/opt/cni/bin/{plugin}")
    # kind's cri-base.json: containerd's default spec, plus kind's hook, without rlimits.
    spec = json.loads(subprocess.run([tools.containerd / "ctr", "oci", "spec"], capture_output=True, text=True, check=True).stdout)
    spec.setdefault("hooks", {}).setdefault("createContainer", []).append({"path": "/kind/bin/mount-product-files.sh"})
    spec["process"].pop("rlimits", None)
    (rootfs / "etc/containerd/cri-base.json").write_text(json.dumps(spec, indent=2))
    (rootfs / "kind/version").write_text(versions.KUBERNETES)


def _preload(rootfs: Path, tools: Toolchain, archives: list[Path], log: Path) -> None:
    """Import the images into the node's containerd store with the pinned containerd, run on the
    host against the rootfs's /var/lib/containerd for as long as the import takes."""
    with tempfile.TemporaryDirectory(prefix="dralab-preload-") as tmp:
        sock = Path(tmp) / "containerd.sock"
        conf = Path(tmp) / "config.toml"
        conf.write_text(
            f'version = 3\nroot = "{rootfs}/var/lib/containerd"\nstate = "{tmp}/state"\n'
            f'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n[grpc]\n  address = "{sock}"\n'
        )
        with open(log, "ab") as out:
            daemon = subprocess.Popen(
                [tools.containerd / "containerd", "--config", conf], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        try:
            deadline = time.monotonic() + 30
            while not sock.exists():
                if daemon.poll() is not None or time.monotonic() > deadline:
                    raise LabBroken(f"the preload containerd did not start; see {log}")
                time.sleep(0.2)
            for archive in archives:
                run_logged(
                    [
                        tools.containerd / "ctr",
                        "--address",
                        sock,
                        "-n",
                        "k8s.io",
                        "images",
                        "import",
                        "--snapshotter",
                        "overlayfs",
                        archive,
                    ],
                    log,
                    what=f"importing {archive.name}",
                )
        finally:
            daemon.terminate()
            daemon.wait(30)


def build(tools: Toolchain, offline: bool = False) -> NodeImage:
    """The node image's rootfs tarball, from the cache or built (a few minutes, cold)."""
    kubeadm = ensure_go(KUBEADM, offline) / "kubeadm"
    coredns = ensure_go(COREDNS, offline) / "coredns"
    kind = ensure_go(KIND, offline) / "kind"
    key = _key(tools, kubeadm, coredns, kind)
    ref = f"dralab.dev/kind-node:{versions.KUBERNETES}-{key}"
    out = cache_root() / "kind" / f"node-{versions.KUBERNETES}-{key}.tar"
    result = NodeImage(ref, out, kubeadm_image_fields())
    if out.exists():
        os.utime(out)
        return result
    if offline:
        raise BadInput(f"the kind node image is not in the cache ({out}); run without --offline first")
    log = cache_root() / "logs" / "kind-node-image.log"
    work = cache_root() / "work" / f"kind-node-{key}"
    shutil.rmtree(work, ignore_errors=True)
    rootfs = work / "rootfs"
    with step(f"Assembling the kind node image {ref} (log: {log})"):
        _base_rootfs(rootfs, offline, log)
        _as_kind_base(rootfs, log)
        _binaries(rootfs, tools, kubeadm)
        built = work / "images"
        built.mkdir()
        archives = [i.archive for i in tools.node_images]
        for spec in cluster_image_specs(tools, kubeadm, coredns):
            archive = built / f"{spec.ref.rsplit('/', 1)[-1].replace(':', '_')}.tar"
            archive.write_bytes(images.oci_archive(spec)[0])
            archives.append(archive)
        _preload(rootfs, tools, archives, log)
        run_logged(
            ["tar", "-C", rootfs, "--numeric-owner", "--xattrs", "-cf", out.with_suffix(".partial"), "."],
            log,
            what="packing the node image",
        )
        out.with_suffix(".partial").rename(out)
    shutil.rmtree(work)
    _prune(out.parent.glob("node-*.tar"), keep=out)  # older builds, once unused for a day
    return result


def kind_binary(offline: bool = False) -> Path:
    return ensure_go(KIND, offline) / "kind"


def docker_import(image: NodeImage, docker: str, log: Path) -> None:
    """Make the node image known to the engine (kept there: it is the cache's, not a run's)."""
    if subprocess.run([docker, "image", "inspect", image.ref], capture_output=True).returncode == 0:
        return
    # No STOPSIGNAL (kind's base image has SIGRTMIN+3): Docker 20.10's import refuses it, and kind
    # removes its nodes with `docker rm -f` anyway.
    changes = ["ENV container=docker", f"ENTRYPOINT {json.dumps(ENTRYPOINT)}"]
    with step(f"docker import {image.ref}"):
        run_logged(
            [docker, "import", *[a for c in changes for a in ("--change", c)], image.rootfs_tar, image.ref],
            log,
            what="docker import of the kind node image",
        )
