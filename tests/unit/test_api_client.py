"""dralab's clients send request bodies as Go clients do (clusters/api_client.py): the bytes that
leave for the API server, shown for a claim with opaque parameters, and Go's number and string forms."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client

from clusters.api_client import as_python_client_sends, canonical, canonical_json
from suites.framework.claims import ClaimBuilder


class Recorder:
    """Stands in for urllib3's pool manager: keeps each body, answers 201 with an empty object."""

    def __init__(self) -> None:
        self.bodies: list[bytes | str] = []

    def request(self, method: str, url: str, body: Any = None, **_: Any) -> Any:
        self.bodies.append(body)
        return SimpleNamespace(status=201, reason="Created", data=b"{}", headers={})


@pytest.fixture
def sent() -> tuple[client.ApiClient, Recorder]:
    api = client.ApiClient(client.Configuration(host="http://cluster.invalid"))
    recorder = Recorder()
    api.rest_client.pool_manager = recorder
    return canonical(api), recorder


CLAIM = ClaimBuilder("c").request("gpu", "gpu.dralab.dev").opaque("gpu.dralab.dev", {"zeta": 1, "alpha": "<a&b>"})


def test_a_claim_goes_out_as_compact_json_with_sorted_keys(sent) -> None:
    api, recorder = sent
    client.ResourceV1Api(api).create_namespaced_resource_claim("ns", CLAIM.build())
    assert recorder.bodies == [
        b'{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"c"},"spec":{"devices":'
        b'{"config":[{"opaque":{"driver":"gpu.dralab.dev","parameters":{"alpha":"\\u003ca\\u0026b\\u003e","zeta":1}}}],'
        b'"requests":[{"exactly":{"count":1,"deviceClassName":"gpu.dralab.dev"},"name":"gpu"}]}}}'
    ]


def test_as_python_client_sends_keeps_its_encoding(sent) -> None:
    api, recorder = sent
    with as_python_client_sends():
        client.CustomObjectsApi(api).create_namespaced_custom_object("resource.k8s.io", "v1", "ns", "resourceclaims", CLAIM.build())
    assert '"parameters": {"zeta": 1, "alpha": "<a&b>"}' in recorder.bodies[0]


def test_a_server_side_apply_body_is_canonical_too(sent) -> None:
    api, recorder = sent
    client.CustomObjectsApi(api).patch_namespaced_custom_object_status(
        "resource.k8s.io",
        "v1",
        "ns",
        "resourceclaims",
        "c",
        {"status": {"devices": [{"data": {"b": 1, "a": 2}}]}},
        field_manager="m",
        force=True,
        _content_type="application/apply-patch+yaml",
    )
    assert recorder.bodies == [b'{"status":{"devices":[{"data":{"a":2,"b":1}}]}}']


@pytest.mark.parametrize(
    "value,go",
    [
        (1.0, "1"),
        (0.5, "0.5"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (-0.0, "-0"),
        (123456.789, "123456.789"),
        (True, "true"),
        (None, "null"),
        (2**63, str(2**63)),
        ('é\n\t"\\\u2028', '"é\\n\\t\\"\\\\\\u2028"'),
        ({"b": [1], "a": {}}, '{"a":{},"b":[1]}'),
    ],
)
def test_values_are_encoded_as_go_encodes_them(value: Any, go: str) -> None:
    assert canonical_json(value) == go.encode()
