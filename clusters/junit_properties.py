"""The JUnit properties the pytest plugin records per test and the certification report reads."""

# The requirement IDs a test checks, what it observed (whatever its verdict), for a failure its
# evidence and the component logs, and whether the lab broke under it (an ERROR, not a FAIL of
# the driver).
REQUIREMENT, OBSERVED, EVIDENCE, LAB_BROKEN = "requirement", "observed", "evidence", "lab_broken"
