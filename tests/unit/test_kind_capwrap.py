"""The OCI runtime wrapper that lets privileged containers start where root's bounding set lacks
capabilities (kind on a VM without CAP_SYS_RESOURCE)."""

from __future__ import annotations

import json
from pathlib import Path

from clusters.kind.capwrap import bounding_set, files_to_rewrite, missing, rewrite

ALL_BUT_SYS_RESOURCE = "000001fffeffffff"


def test_the_bounding_set_names_what_the_host_cannot_grant() -> None:
    mask = bounding_set(f"CapPrm:\t000001ffffffffff\nCapBnd:\t{ALL_BUT_SYS_RESOURCE}\n")
    assert missing(mask, last_cap=40) == ["CAP_SYS_RESOURCE"]
    assert missing(int("1ffffffffff", 16), last_cap=40) == []
    assert missing(0, last_cap=2) == ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH"]


def test_create_and_run_rewrite_the_bundles_config_and_exec_its_process_file() -> None:
    shim = ["--root", "/run/docker/runtime-runc/moby", "--log", "/x/log.json", "--log-format", "json", "--systemd-cgroup"]
    assert files_to_rewrite([*shim, "create", "--bundle", "/b", "--pid-file", "/b/pid", "id"]) == [(Path("/b/config.json"), True)]
    assert files_to_rewrite(["run", "-b=/b", "id"]) == [(Path("/b/config.json"), True)]
    assert files_to_rewrite(["create", "id"]) == [(Path("config.json"), True)]  # the bundle defaults to the cwd
    assert files_to_rewrite([*shim, "exec", "--process", "/tmp/runc-process1", "--detach", "--pid-file", "/p", "id"]) == [
        (Path("/tmp/runc-process1"), False)
    ]
    assert files_to_rewrite(["exec", "-t", "id", "sh"]) == []  # no process file: nothing asks for capabilities
    assert files_to_rewrite([*shim, "start", "id"]) == [] and files_to_rewrite(["--version"]) == []


def _process(caps: list[str]) -> dict:
    return {"args": ["sh"], "capabilities": {k: list(caps) for k in ("bounding", "effective", "permitted")}}


def test_refused_capabilities_leave_every_set_and_the_rest_stays(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps({"ociVersion": "1.0.2", "process": _process(["CAP_CHOWN", "CAP_SYS_RESOURCE"]), "root": {"path": "rootfs"}})
    )
    rewrite(config, True, {"CAP_SYS_RESOURCE"})
    data = json.loads(config.read_text())
    assert data["process"]["capabilities"] == {k: ["CAP_CHOWN"] for k in ("bounding", "effective", "permitted")}
    assert data["root"] == {"path": "rootfs"} and data["process"]["args"] == ["sh"]
    process = tmp_path / "process.json"
    process.write_text(json.dumps(_process(["CAP_SYS_RESOURCE", "CAP_NET_ADMIN"])))
    rewrite(process, False, {"CAP_SYS_RESOURCE"})
    assert json.loads(process.read_text())["capabilities"]["effective"] == ["CAP_NET_ADMIN"]
    untouched = tmp_path / "plain.json"
    untouched.write_text('{"args": ["true"]}')
    rewrite(untouched, False, {"CAP_SYS_RESOURCE"})
    assert untouched.read_text() == '{"args": ["true"]}'  # nothing to remove: the file is not rewritten
