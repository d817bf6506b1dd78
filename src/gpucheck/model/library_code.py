"""The GPU code of the libraries an installed kernel package cannot run without (vLLM's _C, the
bitsandbytes CUDA libraries), read from the install's own fat binaries at probe time. Part of
each Python environment's facts (`PythonEnvironment.compiled`)."""

# No `from __future__ import annotations`: msgspec evaluates string annotations on first decode.
from msgspec import Struct

from gpucheck.model.compiled_code import CompiledCode


class LibraryCode(Struct):
    """One library of an installed distribution, as its fat binary lists it."""

    package: str  # the distribution, normalised: "vllm", "flash-attn"
    version: str  # the distribution's version
    path: str  # as its RECORD names it, relative to the site folder: "vllm/_C.abi3.so"
    file: str  # the file read
    # None: unreadable (not a 64-bit ELF, or headers that do not add up): unknown, never judged.
    code: CompiledCode | None = None
