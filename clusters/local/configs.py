"""Configuration files and command lines of the lab's components, rendered from a ClusterConfig."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from clusters import versions
from clusters.config import SERVICE_CIDR, ClusterConfig, Component, flag_map
from clusters.pki import CertKey
from clusters.provision import Toolchain

# Paths as a node sees them (its own /run and /var/lib): the standard ones.
CONTAINERD_SOCKET = "/run/containerd/containerd.sock"
NRI_SOCKET = "/var/run/nri/nri.sock"
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
ETCD_PORT, APISERVER_PORT, CONTROLLER_MANAGER_PORT, SCHEDULER_PORT = 2379, 6443, 10257, 10259


def containerd_toml(tools: Toolchain, cni_conf_dir: Path) -> str:
    runtime = "plugins.'io.containerd.cri.v1.runtime'"
    return f"""version = 3
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = "{CONTAINERD_SOCKET}"

[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = "{versions.PAUSE_IMAGE}"

[{runtime}]
  enable_cdi = true
  cdi_spec_dirs = {json.dumps(list(CDI_DIRS))}
  # The host has no hugetlb cgroup controller and no AppArmor parser.
  disable_hugetlb_controller = true
  disable_apparmor = true
  # The VM withholds CAP_SYS_RESOURCE, so no process may lower its oom_score_adj (the
  # sandbox's -998 fails in runc); keep every container at or above its parent's score.
  restrict_oom_score_adj = true

[{runtime}.containerd]
  default_runtime_name = "runc"

[{runtime}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{runtime}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  BinaryName = "{tools.runc}"

[{runtime}.cni]
  bin_dirs = ["{tools.cni_bin_dir}"]
  conf_dir = "{cni_conf_dir}"

[plugins.'io.containerd.nri.v1.nri']
  disable = false
  socket_path = "{NRI_SOCKET}"
"""


def cni_conflist(pod_cidr: str) -> str:
    return json.dumps(
        {
            "cniVersion": "1.0.0",
            "name": "dralab",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": "cni0",
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {"type": "host-local", "ranges": [[{"subnet": pod_cidr}]], "routes": [{"dst": "0.0.0.0/0"}]},
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        },
        indent=2,
    )


# The kubelet syncs each pod again this often (default 1m). In v1.37.1 a pod whose claims could not be
# prepared (its driver not registered yet, as after a node restart) is retried only at that resync:
# SyncPod returns without recording the failure, so the 10 s error backoff does not apply. 10 s saves
# most of a minute per such wait and changes no verdict.
SYNC_FREQUENCY = "10s"
# How often the kubelet computes its Node's status (default 10 s; it posts only what changed): device
# plugins' capacity and health changes reach the Node within 2 s, which the DP checks wait for.
NODE_STATUS_UPDATE_FREQUENCY = "2s"


def kubelet_config(cfg: ClusterConfig, node: str, ca: Path, serving: CertKey) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "failCgroupV1": False,  # the host has cgroup v1; kubelet >= 1.35 refuses it otherwise
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": f"{cfg.cgroup_parent}/{node}",  # two kubelets on one host need separate kubepods trees
            "containerRuntimeEndpoint": f"unix://{CONTAINERD_SOCKET}",
            "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True}, "x509": {"clientCAFile": str(ca)}},
            "authorization": {"mode": "Webhook"},
            "tlsCertFile": str(serving.cert),
            "tlsPrivateKeyFile": str(serving.key),
            "healthzBindAddress": "127.0.0.1",
            "clusterDomain": "cluster.local",
            "resolvConf": "/etc/resolv.conf",
            # Images are imported from files and can never be pulled again: never collect them.
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {"memory.available": "100Mi"},
            "featureGates": cfg.gates_for("kubelet"),
            "serializeImagePulls": False,
            "oomScoreAdj": 0,  # lowering it needs CAP_SYS_RESOURCE, which the VM withholds
            "shutdownGracePeriod": "0s",
            "syncFrequency": SYNC_FREQUENCY,
            "nodeStatusUpdateFrequency": NODE_STATUS_UPDATE_FREQUENCY,
        },
        sort_keys=False,
    )


def kube_proxy_config(cfg: ClusterConfig, node: str, kubeconfig: Path) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(kubeconfig)},
            "mode": "iptables",
            "clusterCIDR": cfg.cluster_cidr,
            "hostnameOverride": node,
            "healthzBindAddress": "127.0.0.1:10256",
            "metricsBindAddress": "127.0.0.1:10249",
            # Conntrack limits are host-wide sysctls: leave them alone.
            "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
            "featureGates": cfg.gates_for("kube-proxy"),
            "oomScoreAdj": 0,
        },
        sort_keys=False,
    )


def etcd_command(tools: Toolchain, cfg: ClusterConfig, data_dir: Path) -> list[str]:
    client, peer = f"http://{cfg.host_ip}:{ETCD_PORT}", f"http://{cfg.host_ip}:{ETCD_PORT + 1}"
    return [
        str(tools.etcd),
        "--name=lab",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=lab={peer}",
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]


def apiserver_command(
    tools: Toolchain, cfg: ClusterConfig, pki: dict[str, CertKey], ca: Path, audit_flags: tuple[str, ...] | list[str] = ()
) -> list[str]:
    cmd = [
        str(tools.kube("kube-apiserver")),
        f"--etcd-servers=http://{cfg.host_ip}:{ETCD_PORT}",
        f"--bind-address={cfg.host_ip}",
        f"--advertise-address={cfg.host_ip}",
        f"--secure-port={APISERVER_PORT}",
        f"--tls-cert-file={pki['apiserver'].cert}",
        f"--tls-private-key-file={pki['apiserver'].key}",
        f"--client-ca-file={ca}",
        f"--kubelet-client-certificate={pki['apiserver-kubelet-client'].cert}",
        f"--kubelet-client-key={pki['apiserver-kubelet-client'].key}",
        f"--kubelet-certificate-authority={ca}",
        "--kubelet-preferred-address-types=InternalIP",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki['sa'].cert}",
        f"--service-account-signing-key-file={pki['sa'].key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        "--allow-privileged=true",
        "--profiling=false",
        "--v=1",
        *audit_flags,
    ]
    return cmd + _gate_flags(cfg, "kube-apiserver") + ([f"--runtime-config={flag_map(cfg.runtime_config)}"] if cfg.runtime_config else [])


def controller_manager_command(tools: Toolchain, cfg: ClusterConfig, kubeconfig: Path, pki: dict[str, CertKey]) -> list[str]:
    ca = pki["ca"]
    return (
        [
            str(tools.kube("kube-controller-manager")),
            f"--kubeconfig={kubeconfig}",
            *_delegated_auth(kubeconfig),
            f"--bind-address={cfg.host_ip}",
            f"--secure-port={CONTROLLER_MANAGER_PORT}",
            f"--service-account-private-key-file={pki['sa'].key}",
            f"--root-ca-file={ca.cert}",
            f"--cluster-signing-cert-file={ca.cert}",
            f"--cluster-signing-key-file={ca.key}",
            "--use-service-account-credentials=true",
            "--leader-elect=false",
            "--v=1",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
        ]
        + _gate_flags(cfg, "kube-controller-manager")
        + _api_qps_flags(cfg)
    )


def scheduler_command(tools: Toolchain, cfg: ClusterConfig, kubeconfig: Path) -> list[str]:
    return (
        [
            str(tools.kube("kube-scheduler")),
            f"--kubeconfig={kubeconfig}",
            *_delegated_auth(kubeconfig),
            f"--bind-address={cfg.host_ip}",
            f"--secure-port={SCHEDULER_PORT}",
            "--leader-elect=false",
            "--v=1",
        ]
        + _gate_flags(cfg, "kube-scheduler")
        + _api_qps_flags(cfg)
    )


def _api_qps_flags(cfg: ClusterConfig) -> list[str]:
    qps = cfg.control_plane_api_qps
    return [f"--kube-api-qps={qps}", f"--kube-api-burst={2 * qps}"] if qps else []


def kubelet_command(tools: Toolchain, cfg: ClusterConfig, node: str, index: int, config: Path, kubeconfig: Path) -> list[str]:
    return [
        str(tools.kube("kubelet")),
        f"--config={config}",
        f"--kubeconfig={kubeconfig}",
        f"--root-dir={cfg.kubelet_root_dir}",
        f"--hostname-override={node}",
        f"--node-ip={cfg.node_ip(index)}",
        f"--node-labels=dralab.dev/lab={cfg.name}",
        "--v=1",
    ]


def _delegated_auth(kubeconfig: Path) -> list[str]:
    # The lab has no front proxy: skip looking up its request-header CA (an error every 10 s
    # otherwise). Skipping the lookup also skips the client CA, so name it: the lab's client
    # certificates (e.g. admin, to read /metrics) are then authenticated.
    return [
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--authentication-skip-lookup=true",
        f"--client-ca-file={kubeconfig.parent / 'ca.crt'}",
    ]


def _gate_flags(cfg: ClusterConfig, component: Component) -> list[str]:
    gates = cfg.gates_for(component)
    return [f"--feature-gates={flag_map(gates)}"] if gates else []
