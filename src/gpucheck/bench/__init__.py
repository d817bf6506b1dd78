"""`gpucheck bench`: what this GPU really delivers next to what its datasheet says.

measurements.py holds the figures the child (scripts/bench.py) reports and the NVML
facts sampled while it ran; spec.py compares them with compat/gpus.toml and the PCIe link;
verdicts.py turns them into findings (pure); report.py renders them. The I/O (children, NVML
sampling) is in probe.py.
"""
