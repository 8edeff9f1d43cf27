"""LAB: checks that the cluster under test is a working DRA lab."""
