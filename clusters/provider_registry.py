"""The providers --cluster offers, by name. A new provider is a folder of clusters/ with a
`Provider` (clusters/providers.py) in it, and one `register` line here."""

from __future__ import annotations

from basics.errors import BadInput
from clusters.kind.provider import KIND
from clusters.kubeconfig.provider import KUBECONFIG
from clusters.local.provider import LOCAL
from clusters.providers import Capability, Provider

# In --cluster's order.
PROVIDERS: dict[str, Provider] = {}
DEFAULT = "local"


def register(new: Provider) -> None:
    if new.name in PROVIDERS:
        raise ValueError(f"a provider named {new.name!r} is registered already")
    PROVIDERS[new.name] = new


def provider(name: str) -> Provider:
    if name not in PROVIDERS:
        raise BadInput(f"no provider named {name!r}; the providers are {', '.join(PROVIDERS)}")
    return PROVIDERS[name]


def starting_labs() -> list[str]:
    """The providers that start their labs (`dralab up --cluster`)."""
    return [name for name, p in PROVIDERS.items() if Capability.LAB_STARTS in p.capabilities]


register(LOCAL)
register(KIND)
register(KUBECONFIG)
