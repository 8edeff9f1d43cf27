"""The Docker engine kind runs its nodes in: a running one is used as it is (a vendor's CI);
otherwise Debian's docker.io is installed and dockerd started by dralab, detached with its pid
file and log under ENGINE dir, and stopped again when the last kind cluster goes.

What this host needs for it, and only where it needs it:
- an OCI runtime wrapper (capwrap.py) when root's bounding set lacks capabilities, or privileged
  containers cannot start;
- DOCKER-USER rules accepting the local labs' interfaces (dralab*): dockerd sets the FORWARD
  policy to DROP, which would cut the local labs' bridged and routed pod traffic. The policy
  found before dockerd started is restored when dralab stops it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from basics.errors import BadInput, LabBroken, log_tail
from basics.progress import run_logged, step
from clusters.config import labs_root
from clusters.kind import capwrap
from clusters.local import supervisor

RUNTIME = "dralab-runc"
START_TIMEOUT = 60.0
# The local labs' links: bridges dralab<slot>, node veths, the hardware fabric.
LAB_INTERFACES = "dralab+"
USER_RULES = (["-i", LAB_INTERFACES, "-j", "ACCEPT"], ["-o", LAB_INTERFACES, "-j", "ACCEPT"])
# What dockerd sets up on the host and leaves when it stops: its chains, the rules jumping to them
# or naming its default bridge, and the bridge.
DOCKER_TABLES = ("filter", "nat")
DOCKER_CHAIN_PREFIX = "DOCKER"
DOCKER_BRIDGE = "docker0"
# Written when dralab starts dockerd on a host without Docker's chains or bridge: stop removes them.
NETFILTER_MARK = "remove-docker-netfilter"


def engine_dir() -> Path:
    return labs_root() / "docker"


def docker() -> str:
    path = shutil.which("docker")
    if path is None:
        raise BadInput("`docker` is not on PATH; the kind provider installs Debian's docker.io when it may (run as root, not --offline)")
    return path


def engine_running() -> bool:
    return shutil.which("docker") is not None and subprocess.run([docker(), "info"], capture_output=True).returncode == 0


def started_by_dralab() -> supervisor.Component | None:
    """The running dockerd dralab started, if the engine is that one."""
    return next((c for c in supervisor.load(engine_dir()).values() if c.alive()), None)


def refused_capabilities() -> list[str]:
    """Capabilities Docker grants a privileged container that this host's root cannot."""
    mask = capwrap.bounding_set(Path("/proc/self/status").read_text())
    return capwrap.missing(mask, int(Path("/proc/sys/kernel/cap_last_cap").read_text()))


def apt_install(packages: dict[str, str], offline: bool, log: Path) -> None:
    """Install the Debian packages (name -> a command it provides, or an absolute path of one of its
    files) that are missing."""
    missing = [pkg for pkg, marker in packages.items() if not (Path(marker).exists() if marker.startswith("/") else shutil.which(marker))]
    if not missing:
        return
    if offline:
        raise BadInput(f"{', '.join(missing)} not installed and --offline forbids installing Debian packages")
    with step(f"Installing Debian packages: {', '.join(missing)} (log: {log})"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run_logged(
            ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
            log,
            env=env,
            what=f"apt-get install {' '.join(missing)}",
        )


def _runtime_shim(refused: list[str]) -> Path:
    """The executable dockerd calls as its runtime: capwrap.py in front of runc."""
    runc = shutil.which("runc")
    if runc is None:
        raise BadInput("runc is not on PATH (Debian's docker.io depends on it)")
    shim = engine_dir() / RUNTIME
    shim.write_text(
        f'#!/bin/sh\nDRALAB_RUNC={runc} DRALAB_REFUSED_CAPS={",".join(refused)} exec {sys.executable} {capwrap.__file__} "$@"\n'
    )
    shim.chmod(0o755)
    return shim


def _forward_policy() -> str:
    rules = subprocess.run(["iptables", "-S", "FORWARD"], capture_output=True, text=True, check=True).stdout
    return rules.splitlines()[0].split()[-1]  # "-P FORWARD ACCEPT"


def _accept_lab_interfaces() -> None:
    for rule in USER_RULES:
        if subprocess.run(["iptables", "-C", "DOCKER-USER", *rule], capture_output=True).returncode != 0:
            subprocess.run(["iptables", "-I", "DOCKER-USER", *rule], check=True)


def docker_leftovers(rules: list[str]) -> tuple[list[list[str]], list[str]]:
    """From `iptables -S` of one table: the rules of built-in chains to delete (as `-D` arguments)
    and Docker's own chains (to flush and delete)."""
    chains = [line.split()[1] for line in rules if line.startswith(f"-N {DOCKER_CHAIN_PREFIX}")]
    deletes = []
    for line in rules:
        words = shlex.split(line)
        if words[:1] == ["-A"] and words[1] not in chains and any(w in chains or w == DOCKER_BRIDGE for w in words[2:]):
            deletes.append(["-D", *words[1:]])
    return deletes, chains


def host_has_docker_netfilter() -> bool:
    chains = any(docker_leftovers(_iptables_rules(t))[1] for t in DOCKER_TABLES)
    return chains or Path(f"/sys/class/net/{DOCKER_BRIDGE}").exists()


def _iptables_rules(table: str) -> list[str]:
    return subprocess.run(["iptables", "-t", table, "-S"], capture_output=True, text=True, check=True).stdout.splitlines()


def _remove_docker_netfilter() -> None:
    for table in DOCKER_TABLES:
        deletes, chains = docker_leftovers(_iptables_rules(table))
        for rule in deletes:
            subprocess.run(["iptables", "-t", table, *rule], check=True)
        for flag in ("-F", "-X"):
            for chain in chains:
                subprocess.run(["iptables", "-t", table, flag, chain], check=True)
    subprocess.run(["ip", "link", "del", DOCKER_BRIDGE], capture_output=True)


def start(offline: bool = False) -> bool:
    """Make sure an engine runs; True if dralab started it (and must stop it)."""
    if engine_running():
        if started_by_dralab() is None:  # another engine: its own rules are its owner's
            return False
        _accept_lab_interfaces()
        return True
    d = engine_dir()
    d.mkdir(parents=True, exist_ok=True)
    apt_install({"docker.io": "dockerd"}, offline, d / "install.log")
    (d / "forward-policy").write_text(_forward_policy())
    if not host_has_docker_netfilter():
        (d / NETFILTER_MARK).touch()
    cmd = ["dockerd", "--pidfile", str(d / "dockerd.pid")]
    refused = refused_capabilities()
    if refused:
        cmd += ["--add-runtime", f"{RUNTIME}={_runtime_shim(refused)}", "--default-runtime", RUNTIME]
    with step(f"Starting dockerd (log: {d / 'logs' / 'dockerd.log'})"):
        proc = supervisor.start("dockerd", cmd, lab_dir=d, log_dir=d / "logs")
        deadline = time.monotonic() + START_TIMEOUT
        while not engine_running():
            if not proc.alive() or time.monotonic() > deadline:
                stop()
                raise LabBroken(f"dockerd did not come up; last lines of {proc.log}:\n{log_tail(proc.log)}")
            time.sleep(0.5)
        _accept_lab_interfaces()
    return True


def stop() -> None:
    """Stop the dockerd dralab started (its containers stop with it), restore the FORWARD policy,
    and remove dralab's DOCKER-USER rules and, if the host had none before, Docker's chains, rules
    and bridge."""
    d = engine_dir()
    components = supervisor.load(d)
    supervisor.terminate(list(components.values()), timeout=30.0)
    for name in components:
        supervisor.forget(d, name)
    for rule in USER_RULES:
        subprocess.run(["iptables", "-D", "DOCKER-USER", *rule], capture_output=True)
    policy = d / "forward-policy"
    if policy.exists():
        subprocess.run(["iptables", "-P", "FORWARD", policy.read_text().strip()], check=True)
        policy.unlink()
    mark = d / NETFILTER_MARK
    if mark.exists():
        _remove_docker_netfilter()
        mark.unlink()
