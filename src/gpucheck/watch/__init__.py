"""`gpucheck watch`: the sample and its log formats (log.py), the NVML session that takes
samples (session.py), the live view (live.py) and the summary of a log (summary.py)."""
