"""Emulated hardware: profiles, a fake sysfs tree, veth-backed NICs and VFs, fault injection."""
