"""Kubernetes' own DRA e2e suite (k8s.io/kubernetes test/e2e/dra), run on a cluster by `dralab
qualify` to tell whether the cluster under a certification does DRA as upstream tests it: the
specs it has (specs.py), which need what (plan.py), and running them with ginkgo (run.py)."""
