"""The `local` cluster provider: Kubernetes components as host processes, nodes in namespaces."""
