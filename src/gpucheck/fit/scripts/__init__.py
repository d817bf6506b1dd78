"""`gpucheck fit --measure`'s child: fit_trace.py traces a PyTorch module under the model's
environment's interpreter. Standard library only, Python 3.8+ (child/protocol.py says how it
loads)."""

# Imported as a module (by the parent, its tests, the type checker), the script's
# `from . import protocol` is this one; run as a script, it finds it in gpucheck/child/.
from gpucheck.child import protocol as protocol
