"""`dralab perf` (RP-03, PF-01 to PF-05, PF-07): the nightly performance report.

bringup.py (PF-01) and pod_startup.py (PF-02, PF-03) measure on labs of their own; the DA scale
harness (suites/derived_attributes/scale.py) gives PF-04; a certification report gives PF-05;
allocator.py (PF-07) runs the Go benchmark of the upstream allocator in allocbench/, no lab.
figures.py names every figure, history.py keeps them across runs and flags regressions,
page.py writes perf.html with plots, command.py runs it all.
"""
