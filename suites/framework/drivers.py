"""The driver under test as the suites see it: its profile, name and device class, and SKIP
for what it does not claim."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from drivers_under_test.profile import Capability, DriverProfile


@dataclass(frozen=True)
class DriverUnderTest:
    profile: DriverProfile
    variant: str | None = None

    @property
    def name(self) -> str:
        return self.profile.drivers[0]

    @property
    def device_class(self) -> str:
        if not self.profile.device_classes:
            pytest.skip(f"driver profile {self.profile.name} names no device class to request its devices with")
        return self.profile.device_classes[0]

    def has(self, capability: Capability) -> bool:
        return self.profile.has(capability)

    def requires(self, *capabilities: Capability) -> None:
        missing = [c.value for c in capabilities if not self.profile.has(c)]
        if missing:
            pytest.skip(f"driver profile {self.profile.name} does not claim {', '.join(missing)}")
