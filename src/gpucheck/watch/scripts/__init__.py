"""`gpucheck watch`'s sampling child (watch.py) and watch_shared.py, which the child and the
parent both import (the CSV rows, the step page). Standard library only, Python 3.8+
(child/protocol.py says how they load)."""

# Imported as modules (by the parent, its tests, the type checker), the scripts' shared
# `from . import protocol` is this one; run as scripts, they find it in gpucheck/child/.
from gpucheck.child import protocol as protocol
