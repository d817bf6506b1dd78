"""Probes gather facts and never judge: `run.collect()` runs them side by side, each bounded
in time; `child.py` runs the driver calls in child processes, whose scripts (standard
library only) live in `scripts/`."""
