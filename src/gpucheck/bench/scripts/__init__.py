"""`gpucheck bench`'s children: bench.py (one GPU or the CPU, with bench_common.py and
bench_cupy.py) and allreduce.py. Standard library only, Python 3.8+: they run under the
probed environment's interpreter (child/protocol.py says how they load)."""

# Imported as modules (by the parent, its tests, the type checker), the scripts' shared
# `from . import protocol` (and allreduce.py's `collective`) are these; run as scripts, they
# find them in gpucheck/child/.
from gpucheck.child import collective as collective
from gpucheck.child import protocol as protocol
