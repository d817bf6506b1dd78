"""A CUDA library's full version read from its files, without loading or running anything.

What each family carries (checked on NVIDIA's own pip wheels, nvidia-cudnn-cu12 8.9.2.26,
9.1.0.70 and 9.28.0.42, nvidia-cudnn-cu11 8.5.0.96, nvidia-cublas-cu12 12.1.3.1,
nvidia-cusparse-cu12 12.1.0.106):

- every one: `.gnu.version_d` defines the soname only (`libcudnn.so.9`, `libcublas.so.12`),
  the major the file name already says; no `.comment` section, no version note;
- cuDNN 8 and 9: a `.rodata` string `cudnn_version_<major>_<minor>_<patch>_<build>_c<changelist>`
  (`cudnn_version_9_1_0_70_c34102860_e0`), not in `libcudnn.so.N` itself (a small dispatcher
  that loads its sub-libraries) but in the sub-library that holds the version call:
  `libcudnn_graph.so.9` for cuDNN 9, `libcudnn_ops_infer.so.8` for cuDNN 8, beside it
  (cuDNN 7 and older have no pip wheel to check: a copy of theirs is read the same way, and
  where no marker is found its version stays unknown);
- cuBLAS, cuBLASLt, cuSPARSE: no such string; their version is an immediate in the code of
  their version call, which a file read cannot take without disassembling. Those copies stay
  "version unknown" unless their file name, header or wheel says it.

Only the section headers and `.rodata` are read (a few hundred KB of a 90 MB library).
"""

from __future__ import annotations

import os
import re
import struct

from gpucheck.probes.elf import elf_section

_RODATA = b".rodata"
_MAX_RODATA = 64 << 20  # bounds a corrupt header; cuDNN's is under 1 MB
CUDNN_MARKER = re.compile(rb"cudnn_version_([0-9]+)_([0-9]+)_([0-9]+)_([0-9]+)")
# libcudnn.so.N -> the sub-libraries that carry the marker, by major (any other major: both).
CUDNN_CARRIERS = {"9": ("libcudnn_graph",), "8": ("libcudnn_ops_infer", "libcudnn_ops")}


def cudnn_marker_version(path: str) -> str | None:
    """ "9.1.0.70" from the cuDNN marker in `path`'s .rodata; None where it has none."""
    try:
        with open(path, "rb") as fh:
            found = elf_section(fh, _RODATA)
            if found is None or not 0 < found[1] <= _MAX_RODATA:
                return None
            fh.seek(found[0])
            match = CUDNN_MARKER.search(fh.read(found[1]))
    except (OSError, struct.error, ValueError):
        return None
    return ".".join(part.decode() for part in match.groups()) if match else None


def _carriers(lib_path: str) -> list[str]:
    """The library itself, then the cuDNN sub-libraries beside it of the same major."""
    real = os.path.realpath(lib_path)
    folder, base = os.path.split(real)
    found = re.search(r"\.so\.([0-9]+)", base)
    major = found.group(1) if found else None
    stems = CUDNN_CARRIERS.get(major, ()) if major else ()
    stems = stems or tuple(s for group in CUDNN_CARRIERS.values() for s in group)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    wanted = [
        n
        for stem in stems
        for n in names
        if n.startswith(f"{stem}.so.{major}" if major else f"{stem}.so")
    ]
    return [real] + [os.path.join(folder, n) for n in wanted]


def library_version(family: str, lib_path: str) -> str | None:
    """The full version a library's own files state (cuDNN only; see the module's notes)."""
    if family != "cudnn":
        return None
    for candidate in _carriers(lib_path):
        version = cudnn_marker_version(candidate)
        if version is not None:
            return version
    return None
