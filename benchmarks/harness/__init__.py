"""What the benchmarks alone use: the metrics path clocked inside a trigger loop
(metrics_clock.py) and the CPU of a process group (process_groups.py). The harness
they share with tests/ is in testenv/."""
