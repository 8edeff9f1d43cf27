"""Certification and performance reports."""
