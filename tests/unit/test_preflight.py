import json

import pytest

from basics.errors import BadInput
from clusters.config import ClusterConfig
from clusters.local import cluster, network, preflight

# One listener on 0.0.0.0:6443 (0x192B), one established connection on 2379 (not a listener).
PROC_NET_TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:192B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0 100 0 0 10 0
   1: 0100007F:094B 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0 100 0 0 10 0
"""


def test_a_port_in_use_is_refused_naming_port_and_component(fs) -> None:
    fs.create_file("/proc/net/tcp", contents=PROC_NET_TCP)
    with pytest.raises(BadInput, match=r"port 6443 on 0.0.0.0 \(needed by kube-apiserver\) is already in use"):
        preflight.require_free_ports(ClusterConfig(slot=4))


def test_established_connections_do_not_count_as_listeners(fs) -> None:
    fs.create_file("/proc/net/tcp", contents=PROC_NET_TCP.replace(" 0A ", " 01 "))
    preflight.require_free_ports(ClusterConfig(slot=4))


def test_first_free_slot_skips_other_labs(fs, monkeypatch) -> None:
    monkeypatch.setenv("DRALAB_LABS", "/srv/dralab")
    monkeypatch.setattr(network, "links_named", lambda prefix: ["dralab2", "dralab2n1"])
    fs.create_file("/srv/dralab/labs/other/cluster.json", contents=json.dumps({"slot": 1}))
    assert preflight.allocate_slot(ClusterConfig(name="mine")).slot == 3
    with pytest.raises(BadInput, match="slot 1 is used by another lab"):
        preflight.allocate_slot(ClusterConfig(name="mine", slot=1))


def test_existing_lab_with_live_processes_is_refused_with_them_and_the_force_hint(fs, monkeypatch) -> None:
    monkeypatch.setenv("DRALAB_LABS", "/srv/dralab")
    monkeypatch.setattr(preflight, "live_processes", lambda cfg: {4242, 17})
    monkeypatch.setattr(cluster, "teardown", lambda cfg: pytest.fail("a live lab must not be torn down"))
    fs.create_dir("/srv/dralab/labs/crashed")
    with pytest.raises(BadInput, match=r"2 of its processes are running \(pids 17, 4242\).*dralab down --name crashed --force"):
        cluster.require_no_live_lab(ClusterConfig(name="crashed"))


def test_lab_without_live_processes_is_torn_down_with_its_saved_config(fs, monkeypatch) -> None:
    monkeypatch.setenv("DRALAB_LABS", "/srv/dralab")
    monkeypatch.setattr(preflight, "live_processes", lambda cfg: set())
    torn: list[ClusterConfig] = []
    monkeypatch.setattr(cluster, "teardown", lambda cfg: torn.append(cfg) or fs.remove_object(str(cfg.lab_dir)))
    cluster.require_no_live_lab(ClusterConfig(name="stopped"))  # no lab: nothing to do
    fs.create_file("/srv/dralab/labs/stopped/cluster.json", contents=ClusterConfig(name="stopped", slot=3).model_dump_json())
    cluster.require_no_live_lab(ClusterConfig(name="stopped"))
    assert [c.slot for c in torn] == [3]  # its links are known from the slot it was started in


def test_inotify_limits_are_raised_only_where_lower(fs) -> None:
    fs.create_file("/proc/sys/fs/inotify/max_user_instances", contents="128\n")
    fs.create_file("/proc/sys/fs/inotify/max_user_watches", contents="1048576\n")
    assert preflight.raise_inotify_limits() == ["fs.inotify.max_user_instances 128 -> 512"]
    assert (preflight.INOTIFY / "max_user_instances").read_text() == "512"
    assert (preflight.INOTIFY / "max_user_watches").read_text().strip() == "1048576"
    assert preflight.raise_inotify_limits() == []
