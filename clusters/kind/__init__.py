"""The kind provider (LAB-06)."""
