"""Small helpers the suites share: waits that say what they waited for, pod builders, exec."""
