from clusters.local import network


def test_lab_netns_matches_one_lab_exactly(fs) -> None:
    for name in ("dralab-e2e-node-1", "dralab-e2e-node-2", "dralab-e2e-gates-off-node-1", "other"):
        fs.create_file(f"/run/netns/{name}")
    assert network.lab_netns("e2e") == ["dralab-e2e-node-1", "dralab-e2e-node-2"]
    assert network.lab_netns("e2e-gates-off") == ["dralab-e2e-gates-off-node-1"]
    assert network.lab_netns(None) == ["dralab-e2e-gates-off-node-1", "dralab-e2e-node-1", "dralab-e2e-node-2"]


def test_mounts_under_lists_deepest_first_and_not_siblings(fs) -> None:
    fs.create_file(
        "/proc/self/mountinfo",
        contents="\n".join(
            f"1 2 0:1 / {point} rw - ext4 /dev/vda rw"
            for point in ("/srv/dralab/labs/e2e/ns", "/srv/dralab/labs/e2e/ns/node-1.mnt", "/srv/dralab/labs/e2e-x/ns")
        ),
    )
    assert network.mounts_under(network.Path("/srv/dralab/labs/e2e")) == ["/srv/dralab/labs/e2e/ns/node-1.mnt", "/srv/dralab/labs/e2e/ns"]
