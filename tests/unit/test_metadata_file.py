"""dralab's reader of device metadata files (MD-02, MD-19): the JSON stream, version choice and
the v1beta1 validation rules; files read through pyfakefs, fixtures shaped like upstream's."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from suites.framework.metadata_file import V1ALPHA1, V1BETA1, MetadataError, parse_stream, problems, read_file

TESTDATA = Path(__file__).parent / "testdata" / "device-metadata"
FIXTURES = {p.name: p.read_text() for p in TESTDATA.glob("*.json")}
HOST_PATH = "/var/lib/kubelet/plugins/gpu.example.com/dra-device-metadata/default_claim/request/metadata.json"


@pytest.fixture
def files(fs):
    for name, text in FIXTURES.items():
        fs.create_file(f"/fixtures/{name}", contents=text)
    return Path("/fixtures")


def test_two_version_stream_is_read_newest_first(files: Path) -> None:
    stream = read_file(files / "two-versions.json")
    assert stream.versions == [V1BETA1, V1ALPHA1]
    assert stream.first_known()["apiVersion"] == V1BETA1
    assert stream.of_version(V1ALPHA1)["requests"] == stream.of_version(V1BETA1)["requests"]


def test_unknown_leading_version_is_skipped_as_readers_do(files: Path) -> None:
    assert read_file(files / "future-first.json").first_known()["apiVersion"] == V1ALPHA1


def test_the_fixtures_pass_the_v1beta1_rules(files: Path) -> None:
    for name in FIXTURES:
        for obj in read_file(files / name).objects:
            if obj["apiVersion"] in (V1BETA1, V1ALPHA1):
                assert problems(obj) == [], name


def test_reader_works_at_the_host_path(fs) -> None:
    fs.create_file(HOST_PATH, contents=FIXTURES["v1beta1-only.json"])
    assert read_file(Path(HOST_PATH)).first_known()["metadata"]["uid"] == "claim-uid"


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty file"),
        ('{"kind": "DeviceMetadata"', "not a JSON stream"),
        ('{"kind": "DeviceMetadata"}\n{"kind": ', "after 1 complete object(s)"),
        ("[1, 2]", "is a list, not an object"),
    ],
)
def test_torn_or_wrong_files_are_errors(text: str, message: str) -> None:
    with pytest.raises(MetadataError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_stream(text)


def test_no_known_version_is_an_error() -> None:
    with pytest.raises(MetadataError, match="no object of a known version"):
        parse_stream('{"apiVersion": "metadata.resource.k8s.io/v9"}').first_known()


def _base() -> dict:
    return json.loads(FIXTURES["v1beta1-only.json"])


def _device(obj: dict) -> dict:
    return obj["requests"][0]["devices"][0]


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda o: o.update(kind="Metadata"), "kind: 'Metadata'"),
        (lambda o: o["metadata"].pop("uid"), "metadata.uid: required"),
        (lambda o: o.update(podClaimName="GPU_claim"), "podClaimName: 'GPU_claim' is not a DNS label"),
        (lambda o: o["requests"][0].update(name=""), "requests[0].name: required"),
        (lambda o: _device(o).update(driver="x" * 64 + ".com"), "driver: "),
        (lambda o: _device(o).update(pool="worker_0"), "part 'worker_0' is not a DNS subdomain"),
        (lambda o: _device(o).update(name="GPU 0"), "name: 'GPU 0' is not a DNS label"),
        (lambda o: _device(o)["attributes"].update(model={"string": "a", "int": 1}), "exactly one of"),
        (lambda o: _device(o)["attributes"].update(model={}), "got none"),
        (lambda o: _device(o)["attributes"].update({f"a{i}": {"int": i} for i in range(28)}), "33 attributes, at most 32"),
        (lambda o: _device(o)["networkData"].update(interfaceName="n" * 257), "interfaceName: longer than 256 bytes"),
        (lambda o: _device(o)["networkData"].update(ips=[f"10.0.0.{i}/24" for i in range(17)]), "17 entries, at most 16"),
        (lambda o: _device(o)["networkData"].update(ips=["10.0.0.5/24", "10.0.0.5/24"]), "duplicate entries"),
        (lambda o: _device(o)["networkData"].update(hardwareAddress="0" * 129), "hardwareAddress: longer than 128 bytes"),
    ],
)
def test_each_v1beta1_rule(mutate, message: str) -> None:
    obj = copy.deepcopy(_base())
    mutate(obj)
    found = problems(obj)
    assert any(message in p for p in found), found


def test_limits_are_inclusive() -> None:
    obj = _base()
    _device(obj)["networkData"].update(interfaceName="n" * 256, hardwareAddress="0" * 128, ips=[f"10.0.0.{i}/24" for i in range(16)])
    _device(obj)["attributes"] = {f"a{i}": {"int": i} for i in range(32)}
    assert problems(obj) == []
