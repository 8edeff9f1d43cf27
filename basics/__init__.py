"""The ground floor: errors and their exit codes, terminal progress, YAML profile loading, JUnit
properties and verdicts, file locks and child processes; every room may use them, and they import
no room."""
