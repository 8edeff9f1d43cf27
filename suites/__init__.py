"""Conformance suites, one package per KEP; every test carries a requirement ID."""
