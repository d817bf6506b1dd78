"""What the real-library probe tests share: the session's real NVIDIA libraries (Debian's driver
packages, pip wheels) as fixtures, a user-namespace python, and small readers.
tests/conftest.py loads this module as a pytest plugin (pytest_plugins), so that the fixtures
reach every test_probes_reallibs*.py module."""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from support import reallibs

T = TypeVar("T")
TIMEOUT = 60.0  # seconds; each of these probes takes well under one
CUDA_ERROR_NO_DEVICE = 100  # cuda.h: what cuInit returns where no GPU can be opened
NVML_ERROR_DRIVER_NOT_LOADED = 9  # nvml.h
# cuDNN's own answer to cudnnGetCudartVersion(): the CUDA 12 build of cuDNN 9.28.0 is built
# against CUDA 12.9 (its major is also in the wheel's name, -cu12).
CUDNN_BUILT_FOR_CUDA = "12.9"


# --- fixtures ---------------------------------------------------------------------------------


def _obtain(fetch: Callable[[], T]) -> T:
    try:
        return fetch()
    except reallibs.Unavailable as exc:
        problem, unavailable = str(exc), True
    except reallibs.FetchError as exc:
        problem, unavailable = str(exc), False
    # Outside the except blocks, so that the report shows no chained traceback.
    if unavailable:
        pytest.skip(problem)
    if reallibs.offline():
        pytest.skip(f"{reallibs.OFFLINE_ENV}=1 and the fetch failed: {problem}")
    pytest.fail(
        f"could not fetch the real NVIDIA libraries: {problem}\n(set {reallibs.OFFLINE_ENV}=1 "
        "to skip these tests where the package mirrors cannot be reached)",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def debian() -> reallibs.DebianDriver:
    return _obtain(reallibs.debian_driver)


@pytest.fixture(scope="session")
def wheels() -> reallibs.PipSite:
    return _obtain(reallibs.pip_site)


@pytest.fixture(scope="session")
def cudnn8_wheel() -> reallibs.PipSite:
    return _obtain(reallibs.cudnn8_site)


def device_nodes() -> set[str]:
    return set(glob.glob("/dev/nvidia*"))


def _nvidia_on_this_machine() -> str | None:
    """Why this machine's own NVIDIA driver or GPU would change the answers; None if none."""
    if os.path.exists("/proc/driver/nvidia"):
        return "the nvidia kernel module is loaded"
    for vendor in glob.glob("/sys/bus/pci/devices/*/vendor"):
        try:
            if Path(vendor).read_text().strip().lower() == "0x10de":
                return f"an NVIDIA PCI device is at {Path(vendor).parent.name}"
        except OSError:
            continue
    return None


@pytest.fixture(scope="session")
def no_nvidia_here() -> None:
    reason = _nvidia_on_this_machine()
    if reason:
        pytest.skip(f"expects a machine without NVIDIA GPU or driver, but {reason}")


@pytest.fixture(scope="session")
def userns_python(tmp_path_factory: pytest.TempPathFactory, no_nvidia_here: None) -> str:
    """A `python` that runs in a new unprivileged user namespace, for run_script(python=...)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare not found: driver init is not run outside a user namespace")
    check = subprocess.run([unshare, "-U", "true"], capture_output=True, text=True, timeout=30)
    if check.returncode != 0:
        pytest.skip(f"unshare -U true fails here: {check.stderr.strip()}")
    wrapper = tmp_path_factory.mktemp("userns") / "python"
    wrapper.write_text(
        f'#!/bin/sh\nexec {shlex.quote(unshare)} -U {shlex.quote(sys.executable)} "$@"\n'
    )
    wrapper.chmod(0o755)
    uid = subprocess.run(
        [str(wrapper), "-c", "import os; print(os.geteuid())"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    assert int(uid) != 0, "the user-namespace wrapper still runs as root"
    return str(wrapper)


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment without loader or GPU variables, plus `extra`."""
    drop = {"LD_LIBRARY_PATH", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra)
    return env


def in_dir(path: str | None, directory: Path) -> bool:
    return path is not None and Path(path).resolve().parent == directory.resolve()


def cuda_number(version: str) -> int:
    """'12.2' -> 12020, the encoding of cuDriverGetVersion and cudaRuntimeGetVersion."""
    major, minor = (int(p) for p in version.split(".")[:2])
    return major * 1000 + minor * 10


def expected_driver_cuda(debian: reallibs.DebianDriver) -> int:
    assert debian.cuda_version, "libcuda1's Provides field lists no libcuda-X.Y-1"
    return cuda_number(debian.cuda_version)


def ldconfig_has(fragment: str) -> bool:
    ldconfig = shutil.which("ldconfig") or next(
        (p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.access(p, os.X_OK)), None
    )
    if ldconfig is None:
        return False
    out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=30).stdout
    return fragment in out


def major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def three_parts(version: str) -> str:
    return ".".join(version.split(".")[:3])
