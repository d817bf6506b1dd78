"""`gpucheck preflight`'s child: exchange.py, run under the interpreter whose torch joins the
job. Standard library only apart from torch, Python 3.8+ (child/protocol.py says how it loads)."""

# Imported as a module (by the parent, its tests, the type checker), the script's shared
# `from . import collective, protocol` are these; run as a script, it finds them in
# gpucheck/child/.
from gpucheck.child import collective as collective
from gpucheck.child import protocol as protocol
