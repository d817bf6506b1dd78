"""How the driver is installed, as files say it: the kernel log's module-loading lines (a
signature key refused), DKMS's builds per kernel and its failed builds' logs, the loader's
configuration (/etc/ld.so.conf.d) and the CDI specs the container toolkit generated.

Facts only (no conclusion): the driver checks read them to say which cause keeps the module
from loading, and the loader and container checks which stale file misleads a program.
`None` is unknown, as everywhere in the snapshot.
"""

# No `from __future__ import annotations`: msgspec would compile and evaluate every string
# annotation when it first decodes these records, on every `doctor --from`.
from msgspec import Struct, field


class DkmsBuild(Struct):
    """One nvidia module version DKMS holds, for one kernel."""

    version: str  # the driver version: 580.119.02
    kernel: str  # 6.8.0-45-generic
    arch: str | None = None  # x86_64
    built: bool = False  # a module file sits under its module/ folder (built or installed)


class DkmsFailure(Struct):
    """A make.log DKMS left behind: the last build of that version, which failed."""

    version: str
    log: str  # its path
    kernel: str | None = None  # from its header: "DKMS make.log for nvidia-390.157 for kernel K"
    errors: list[str] = field(default_factory=list)  # its first error lines, bounded


class LoaderEntry(Struct):
    """One file of /etc/ld.so.conf.d and the folders it adds to the loader's search path."""

    file: str
    directories: list[str] = field(default_factory=list)
    # The CUDA version its folders name (/usr/local/cuda-11.8/lib64 -> "11.8"); None: none.
    cuda: str | None = None
    # Whether each folder exists, in the order of `directories`.
    exists: list[bool] = field(default_factory=list)


class CdiSpec(Struct):
    """A CDI spec file (/etc/cdi, /var/run/cdi) and the driver versions its paths name."""

    path: str
    kind: str | None = None  # "nvidia.com/gpu"
    # Versions in the file names of the driver libraries it mounts (libcuda.so.550.54.15).
    driver_versions: list[str] = field(default_factory=list)
    error: str | None = None  # why it could not be read


class InstallStateFacts(Struct):
    # The kernel log's lines about loading a module that are not NVRM's own: a signature key
    # refused ("Loading of module with unavailable key is rejected"), lockdown; None: the
    # kernel log could not be read (module_log_error says why).
    module_log: list[str] | None = None
    module_log_error: str | None = None
    # Module-signing certificates on disk that DKMS or shim-signed sign with.
    signing_keys: list[str] = field(default_factory=list)
    dkms_builds: list[DkmsBuild] | None = None  # None: no DKMS tree for nvidia
    dkms_failures: list[DkmsFailure] = field(default_factory=list)
    loader_entries: list[LoaderEntry] | None = None  # None: /etc/ld.so.conf.d unreadable
    cdi_specs: list[CdiSpec] = field(default_factory=list)
