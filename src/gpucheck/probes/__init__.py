"""Probes gather facts and never judge: `run.collect()` runs them side by side, each bounded
in time; the driver calls run in child processes (gpucheck.child), whose scripts (standard
library only) live in `scripts/`."""
