"""Child processes, shared by every feature that runs one (the doctor's probes, bench, watch,
fit): run.py is the parent's side (a time bound, records, crash and hang as facts, the --deep
gate, kill_all on Ctrl-C, `script()` to find a package's child script) and protocol.py the
child's side of the same wire format, which every child script imports. A shared layer: it
imports the model alone, never a feature."""
