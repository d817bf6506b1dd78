"""`gpucheck bench`'s children: bench.py (one GPU or the CPU, with bench_common.py and
bench_cupy.py) and allreduce.py. Standard library only, Python 3.8+: they run under the
probed environment's interpreter (child/protocol.py says how they load)."""

# Imported as modules (by the parent, its tests, the type checker), the scripts' shared
# `from . import protocol` is this one; run as scripts, they find it in gpucheck/child/.
from gpucheck.child import protocol as protocol
