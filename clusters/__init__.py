"""The lab: provisioning of pinned components, cluster providers, PKI and supervision."""
