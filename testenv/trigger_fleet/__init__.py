"""Harness that drives the product's trigger, shared by tests/ and benchmarks/: held
Spark drivers on the KWOK plane followed by real triggers (tracked_apps.py), one fault
at a time (fault_harness.py), and the snapshot stores they run (running_stores.py).
Unlike testenv/harness/, it imports the product; like all of testenv, nothing of
tests/ or benchmarks/."""
