"""devices/system of a node's tree as the kernel shows it (HW-07): NUMA nodes with their CPUs,
distances, memory and huge pages; CPUs with their topology and caches; memory blocks.

This is what ghw's topology, cpu and memory packages read (and cadvisor, and the kubelet's
topology manager through it, and kubernetes-sigs/dra-driver-cpu's own reader). Each NUMA node is
one socket; its CPUs are grouped into cores as
the profile says (threads_per_core), the first of each core's threads listed first, as x86
numbers them. Cache sizes are Sapphire Rapids'; distances those of a 2-socket Intel box.

    devices/system/node/node<N>/{cpulist,cpumap,distance,meminfo,hugepages/,cpu<K>,memory<B>}
    devices/system/cpu/{online,possible,present,smt/{control,active}}
    devices/system/cpu/cpu<K>/{topology/,cache/index<I>/{...,shared_cpu_map,shared_cpu_list},node<N>}
    devices/system/memory/{block_size_bytes,memory<B>/{state,node<N>}}
"""

from __future__ import annotations

import os
from pathlib import Path

from fake_hardware.profile import NodeProfile, NumaNode

LOCAL_DISTANCE, REMOTE_DISTANCE = 10, 21
HUGE_PAGE_SIZES_KB = (2048, 1048576)
PER_CORE_CACHES = ((1, "Data", 48), (1, "Instruction", 32), (2, "Unified", 2048))  # level, type, KiB
L3_KB_PER_CORE = 1920  # 105 MiB of L3 for 56 cores
SMALL_BLOCK, LARGE_BLOCK = 128 << 20, 2 << 30
LARGE_BLOCKS_FROM = 64 << 30  # x86 picks 2 GiB memory blocks on machines with 64 GiB or more


def cpu_list(ids: list[int]) -> str:
    """The kernel's CPU list ("0-3,8"): ascending, consecutive ids as ranges."""
    ranges: list[list[int]] = []
    for cpu in sorted(ids):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(f"{a}-{b}" if a != b else f"{a}" for a, b in ranges)


def cpu_mask(ids: list[int], width: int) -> str:
    """The kernel's CPU bitmap (cpumap, local_cpus): hex in 32-bit groups, most significant first,
    the first group only as wide as its bits need ("ffffffff,00000000" for 32-63 of 64)."""
    bits = sum(1 << cpu for cpu in ids)
    groups = [(bits >> shift) & 0xFFFFFFFF for shift in range(0, width, 32)][::-1]
    first_digits = -(-(width % 32) // 4) or 8
    return ",".join(f"{g:0{first_digits if i == 0 else 8}x}" for i, g in enumerate(groups))


def distances(profile: NodeProfile) -> dict[int, list[int]]:
    """NUMA id -> its distance to every node, in id order (the node's `distance` file)."""
    ids = sorted(n.id for n in profile.numa_nodes)
    return {a: [LOCAL_DISTANCE if a == b else REMOTE_DISTANCE for b in ids] for a in ids}


def block_size(profile: NodeProfile) -> int:
    return LARGE_BLOCK if sum(n.memory_bytes() for n in profile.numa_nodes) >= LARGE_BLOCKS_FROM else SMALL_BLOCK


def memory_blocks(profile: NodeProfile) -> dict[int, range]:
    """NUMA id -> its memory block numbers: the nodes' memory in id order, whole blocks."""
    blocks, first = {}, 0
    for numa in sorted(profile.numa_nodes, key=lambda n: n.id):
        count = numa.memory_bytes() // block_size(profile)
        blocks[numa.id], first = range(first, first + count), first + count
    return blocks


def cores(numa: NumaNode) -> list[list[int]]:
    """The node's cores, each as its CPUs (hardware threads)."""
    ids = numa.cpu_ids()
    per_thread = len(ids) // numa.threads_per_core
    return [ids[core::per_thread] for core in range(per_thread)]


def write_system(root: Path, profile: NodeProfile) -> None:
    system, tree = str(root / "devices" / "system"), _Writer()
    _write_memory(tree, system, profile)
    width = profile.cpu_count()
    for numa in profile.numa_nodes:
        _write_node(tree, system, profile, numa, width)
        _write_cpus(tree, system, numa, width)
    nodes = cpu_list([n.id for n in profile.numa_nodes])
    tree.dir(f"{system}/node", dict.fromkeys(("online", "possible", "has_cpu", "has_memory", "has_normal_memory"), nodes))
    tree.dir(
        f"{system}/cpu", dict.fromkeys(("online", "possible", "present"), cpu_list([c for n in profile.numa_nodes for c in n.cpu_ids()]))
    )
    # SMT as the kernel reports it: "notsupported" where no core has a second thread.
    smt = any(n.threads_per_core > 1 for n in profile.numa_nodes)
    tree.dir(f"{system}/cpu/smt", {"control": "on" if smt else "notsupported", "active": int(smt)})


class _Writer:
    """Directories of files and relative links, thousands of them per node. Creating an inode is
    what a lab's start waits for (0.3 to 0.9 ms each on a loaded ext4, against 20 us for a hard
    link), so entries of equal name and content share one inode: readers see the same bytes, and
    nothing writes these attributes. Plain os calls, no pathlib, for the same reason."""

    def __init__(self) -> None:
        self.first: dict[tuple[str, str, str], str] = {}  # (kind, name, content) -> the entry holding it

    def dir(self, directory: str, files: dict[str, object], links: dict[str, str] | None = None) -> None:
        os.makedirs(directory, exist_ok=True)
        for name, value in files.items():
            self._entry(f"{directory}/{name}", ("file", name, f"{value}\n"))
        for name, target in (links or {}).items():
            self._entry(f"{directory}/{name}", ("link", name, target))

    def _entry(self, path: str, key: tuple[str, str, str]) -> None:
        if os.path.lexists(path):  # a tree written again
            os.unlink(path)
        if key in self.first:
            os.link(self.first[key], path, follow_symlinks=False)
            return
        kind, _, content = key
        if kind == "link":
            os.symlink(content, path)
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, content.encode())
            finally:
                os.close(fd)
        self.first[key] = path


def _write_node(tree: _Writer, system: str, profile: NodeProfile, numa: NumaNode, width: int) -> None:
    node = f"{system}/node/node{numa.id}"
    links = {f"cpu{cpu}": f"../../cpu/cpu{cpu}" for cpu in numa.cpu_ids()}
    links.update({f"memory{block}": f"../../memory/memory{block}" for block in memory_blocks(profile)[numa.id]})
    tree.dir(
        node,
        {
            "cpulist": numa.cpus,
            "cpumap": cpu_mask(numa.cpu_ids(), width),
            "distance": " ".join(map(str, distances(profile)[numa.id])),
            "meminfo": _meminfo(numa),
        },
        links,
    )
    for size in HUGE_PAGE_SIZES_KB:
        tree.dir(f"{node}/hugepages/hugepages-{size}kB", dict.fromkeys(("nr_hugepages", "free_hugepages", "surplus_hugepages"), 0))


def _meminfo(numa: NumaNode) -> str:
    """The node's meminfo in the kernel's layout; a sliver of the memory is in use."""
    total = numa.memory_bytes() >> 10
    used = total // 64
    fields = {
        "MemTotal": total,
        "MemFree": total - used,
        "MemUsed": used,
        "FilePages": used // 2,
        "AnonPages": used // 4,
        "Slab": used // 8,
    }
    lines = [f"Node {numa.id} {key + ':':<16}{kb:>8} kB" for key, kb in fields.items()]
    lines += [f"Node {numa.id} {key + ':':<16} {0:>5}" for key in ("HugePages_Total", "HugePages_Free", "HugePages_Surp")]
    return "\n".join(lines)


def _write_cpus(tree: _Writer, system: str, numa: NumaNode, width: int) -> None:
    """Per CPU what ghw, cadvisor and lscpu read: its core and package, and its caches. Thousands of
    files on a big node, so only those: each costs a file creation when a lab starts."""
    package, all_cores = numa.cpu_ids(), cores(numa)
    l3 = (3, "Unified", L3_KB_PER_CORE * len(all_cores), numa.id, package)
    for core_id, threads in enumerate(all_cores):
        caches = [*((level, kind, kb, core_id, threads) for level, kind, kb in PER_CORE_CACHES), l3]
        for cpu in threads:
            here = f"{system}/cpu/cpu{cpu}"
            tree.dir(
                f"{here}/topology",
                {
                    "core_id": core_id,
                    "physical_package_id": numa.id,
                    "thread_siblings_list": cpu_list(threads),
                    "core_siblings_list": cpu_list(package),
                },
            )
            for index, (level, kind, kb, cache_id, sharing) in enumerate(caches):
                tree.dir(
                    f"{here}/cache/index{index}",
                    {
                        "level": level,
                        "type": kind,
                        "size": f"{kb}K",
                        "id": cache_id,
                        "shared_cpu_map": cpu_mask(sharing, width),
                        "shared_cpu_list": cpu_list(sharing),
                    },
                )
            tree.dir(here, {}, {f"node{numa.id}": f"../../node/node{numa.id}"})


def _write_memory(tree: _Writer, system: str, profile: NodeProfile) -> None:
    memory = f"{system}/memory"
    tree.dir(memory, {"block_size_bytes": f"{block_size(profile):x}"})
    for numa, blocks in memory_blocks(profile).items():
        for block in blocks:
            tree.dir(f"{memory}/memory{block}", {"state": "online"}, {f"node{numa}": f"../../node/node{numa}"})
