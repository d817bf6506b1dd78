"""The doctor's probe children (nvml, native, framework_static, framework_deep,
extension_deep) and the helpers they import. Standard library only, Python 3.8+: they run
under the diagnosed environment's interpreter (child/protocol.py says how they load)."""

# Imported as modules (by the parent, its tests, the type checker), the scripts' shared
# `from . import protocol` is this one; run as scripts, they find it in gpucheck/child/.
from gpucheck.child import protocol as protocol
