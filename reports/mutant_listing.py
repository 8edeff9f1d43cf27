"""The mutants of the reference drivers (`dralab mutants`): what go-mutesting makes of the code
that produces what the suites observe, each with an id that stays while its change and the lines
around it do.

go-mutesting (github.com/zimmski/go-mutesting) is the mutation tool: built from the Go module
proxy at a pinned version, like the lab's components. As released it requires golang.org/x/tools
of 2019, whose go/packages type-checks Go 1.26's standard library with no sizes and panics
(go/types.(*StdSizes).Sizeof on a nil receiver, "The following panic happened checking types
near: .../unicode/utf8/utf8.go"); pinned to golang.org/x/tools v0.52.0 it builds and lists the
mutants. It is run with --no-exec: it only writes each mutant's whole file, and dralab builds and
certifies them itself (reports/mutant_build.py, reports/mutants.py).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import random
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from basics.errors import LabBroken
from clusters.provision.components import REPO
from clusters.provision.gobuild import GoRecipe

DRIVERS_MODULE = REPO / "drivers_under_test"
GO_MUTESTING = GoRecipe(
    name="go-mutesting",
    version="v0.0.0-20210610104036-6d9217011a00",
    requires={"github.com/zimmski/go-mutesting": "v0.0.0-20210610104036-6d9217011a00"},
    replaces={"golang.org/x/tools": "v0.52.0"},  # the one it requires panics on Go 1.26 (module docstring)
    binaries={"go-mutesting": "github.com/zimmski/go-mutesting/cmd/go-mutesting"},
)

# The files mutated, relative to the drivers module, and why: each produces something a suite
# observes. Left out: the variants' code (options.go, contract.go, metadatafiles.go, reach.go,
# timing.go, othernode.go), which the reference drivers never run, so its every mutant is
# equivalent by construction; flags and start-up (main.go, start.go, run.go); NVML discovery
# (gpu-dra-driver/nvml.go: the gpu-nvml profile, certified on its own lab).
MUTATED = {
    "dradriver/cdi.go": "each claim's CDI spec, written at prepare and removed at unprepare (KP)",
    "dradriver/status.go": "the claims' status.devices entries, conditions and data (ST)",
    "dradriver/publish.go": "ResourceSlice publication: pools, slices, devices withdrawn and back (KP, health)",
    "dradriver/checkpoint.go": "what was prepared, kept across restarts (KP: prepare and unprepare after a restart)",
    "dradriver/attributes.go": "the published attribute names (the slices, MD's attributes)",
    "internal/cdi/cdi.go": "the CDI spec format and its atomic write (KP, MD, DP)",
    "cmd/gpu-dra-driver/driver.go": "GPU prepare/unprepare, CDI edits, metadata attributes, health, status (KP, MD, ST)",
    "cmd/vf-dra-driver/driver.go": "VF prepare/unprepare, attach to the pod, networkData status (KP, ST)",
    "cmd/vf-dra-driver/networkdata.go": "which networkData fields the VF driver reports (ST)",
    "cmd/fake-gpu-plugin/plugin.go": "the device plugin's ListAndWatch, Allocate, GetPreferredAllocation, health (DP)",
    "cmd/fake-gpu-plugin/cdi.go": "the device plugin's CDI spec (DP)",
    "deviceplugin/deviceplugin.go": "device plugin serving and registration with the kubelet (DP)",
}
# Lines of context in a mutant's diff; they take part in its id.
CONTEXT = 2


@dataclass(frozen=True)
class Mutant:
    """One change to one file of a module: its whole mutated text and the diff to the original."""

    id: str  # file@hash of the diff without line numbers: stable while the lines around stay
    file: str  # relative to the module
    line: int  # of the first changed line, in the original
    diff: str
    source: str  # the whole mutated file

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def go_env() -> dict[str, str]:
    """The module alone, as the drivers are built (clusters.provision.gobuild: GOWORK=off)."""
    return dict(os.environ, GOWORK="off", GOFLAGS="-buildvcs=false")


def listed(tool: Path, module: Path, files: list[str]) -> list[Mutant]:
    """go-mutesting's mutants of `files` (relative to `module`), in its order: file by file."""
    with tempfile.TemporaryDirectory(prefix="dralab-mutants-") as tmp:
        # It saves the mutants under a directory it makes in TMPDIR, named as the files are given.
        out = subprocess.run(
            [str(tool), "--no-exec", "--do-not-remove-tmp-folder", *files],
            cwd=module,
            env={**go_env(), "TMPDIR": tmp},
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise LabBroken(f"go-mutesting failed (exit {out.returncode}) on {module}: {(out.stderr or out.stdout).strip()[-2000:]}")
        saved = next(Path(tmp).glob("go-mutesting-*"))
        found: list[Mutant] = []
        for file in files:
            original = (module / file).read_text()
            numbered = sorted(saved.glob(f"{file}.[0-9]*"), key=lambda p: int(p.suffix[1:]))
            found += _mutants(file, original, [p.read_text() for p in numbered])
    return found


def _mutants(file: str, original: str, sources: list[str]) -> list[Mutant]:
    out: list[Mutant] = []
    seen: dict[str, int] = {}
    for source in sources:
        diff = "".join(difflib.unified_diff(original.splitlines(True), source.splitlines(True), f"a/{file}", f"b/{file}", n=CONTEXT))
        if not diff:  # go-mutesting's printer changed nothing that a diff shows
            continue
        body = "".join(line for line in diff.splitlines(True)[2:] if not line.startswith("@@"))
        digest = hashlib.sha256(body.encode()).hexdigest()[:10]
        seen[digest] = seen.get(digest, 0) + 1  # the same change amid the same lines twice in the file
        suffix = "" if seen[digest] == 1 else f"-{seen[digest]}"
        out.append(Mutant(f"{file}@{digest}{suffix}", file, _first_changed_line(original, source), diff, source))
    return out


def _first_changed_line(original: str, source: str) -> int:
    ops = difflib.SequenceMatcher(None, original.splitlines(), source.splitlines(), autojunk=False).get_opcodes()
    return next(i1 + 1 for tag, i1, _i2, _j1, _j2 in ops if tag != "equal")


def sampled(mutants: list[Mutant], budget: int | None, seed: int) -> list[Mutant]:
    """`budget` of the mutants drawn with `seed` (all without a budget), in the listing's order."""
    if budget is None or budget >= len(mutants):
        return mutants
    picked = set(random.Random(seed).sample(range(len(mutants)), budget))
    return [m for i, m in enumerate(mutants) if i in picked]
