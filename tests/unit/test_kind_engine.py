"""What the dockerd dralab started leaves on the host when it stops, found in `iptables -S` as
Docker 20.10 left it here, so that stop can remove it (LAB-05)."""

from __future__ import annotations

from clusters.kind.engine import docker_leftovers

FILTER = """-P INPUT ACCEPT
-P FORWARD ACCEPT
-P OUTPUT ACCEPT
-N DOCKER
-N DOCKER-ISOLATION-STAGE-1
-N DOCKER-ISOLATION-STAGE-2
-N DOCKER-USER
-N DRALAB-KEEP
-A FORWARD -j DOCKER-USER
-A FORWARD -j DOCKER-ISOLATION-STAGE-1
-A FORWARD -o docker0 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A FORWARD -o docker0 -j DOCKER
-A FORWARD -i docker0 ! -o docker0 -j ACCEPT
-A FORWARD -i dralab3 -j ACCEPT
-A FORWARD -m comment --comment "not docker0's" -j DRALAB-KEEP
-A DOCKER-ISOLATION-STAGE-1 -i docker0 ! -o docker0 -j DOCKER-ISOLATION-STAGE-2
-A DOCKER-ISOLATION-STAGE-1 -j RETURN
-A DOCKER-USER -j RETURN""".splitlines()

NAT = """-P PREROUTING ACCEPT
-P POSTROUTING ACCEPT
-N DOCKER
-A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER
-A POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE
-A POSTROUTING -s 10.99.3.0/24 -j MASQUERADE
-A DOCKER -i docker0 -j RETURN""".splitlines()


def test_dockers_chains_and_the_rules_that_reach_them_or_its_bridge_are_found_and_nothing_else() -> None:
    deletes, chains = docker_leftovers(FILTER)
    assert chains == ["DOCKER", "DOCKER-ISOLATION-STAGE-1", "DOCKER-ISOLATION-STAGE-2", "DOCKER-USER"]
    assert deletes == [
        ["-D", "FORWARD", "-j", "DOCKER-USER"],
        ["-D", "FORWARD", "-j", "DOCKER-ISOLATION-STAGE-1"],
        ["-D", "FORWARD", "-o", "docker0", "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"],
        ["-D", "FORWARD", "-o", "docker0", "-j", "DOCKER"],
        ["-D", "FORWARD", "-i", "docker0", "!", "-o", "docker0", "-j", "ACCEPT"],
    ]


def test_in_nat_the_masquerade_of_dockers_bridge_goes_a_labs_stays() -> None:
    deletes, chains = docker_leftovers(NAT)
    assert chains == ["DOCKER"]
    assert deletes == [
        ["-D", "PREROUTING", "-m", "addrtype", "--dst-type", "LOCAL", "-j", "DOCKER"],
        ["-D", "POSTROUTING", "-s", "172.17.0.0/16", "!", "-o", "docker0", "-j", "MASQUERADE"],
    ]


def test_a_host_without_docker_has_nothing_to_remove() -> None:
    assert docker_leftovers(["-P INPUT ACCEPT", "-A FORWARD -i dralab1 -j ACCEPT"]) == ([], [])
