"""Probes gather facts and never judge. `collect()` runs them all concurrently, each under a
time bound, and always returns a complete Snapshot: a probe that fails leaves its facts
unknown and says why in `snapshot.probes`."""

from __future__ import annotations

import glob
import os
import site
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar

from msgspec import Struct, field

from gpucheck.child import run as child
from gpucheck.child.run import Gate
from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.frameworks import BY_KEY, installed_frameworks
from gpucheck.model.network import NetworkFacts
from gpucheck.model.snapshot import (
    CudaDriverFacts,
    CudaFacts,
    CudnnFacts,
    NvmlFacts,
    ProbeRun,
    ProcessFacts,
    Snapshot,
    SystemFacts,
)

T = TypeVar("T")
DEFAULT_TIMEOUT = 15.0
FIRST_WAVE = 3  # children started at once: NVML, the driver API, one interpreter's frameworks
FIRST_WAVE_WAIT = 0.1  # seconds; they start well within it (a probe that starts none costs this)


class ProbeOptions(Struct):
    timeout: float = DEFAULT_TIMEOUT  # seconds, per probe; probes run side by side
    # GPUCHECK_ROOT: read /proc, /sys, /dev and /etc under another folder (the test suite's
    # simulated machines); driver libraries are still the ones the loader finds.
    root: Path = field(default_factory=lambda: Path(os.environ.get("GPUCHECK_ROOT") or "/"))
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    site_dirs: list[Path] | None = None  # None: this interpreter's and the active env's
    # --python: probe these interpreters' frameworks only (absolute, each once: see
    # probes.frameworks.expand_pythons); empty: gpucheck's own and the active environment's.
    pythons: list[str] = field(default_factory=list)
    deep: bool = False  # import each framework in a child, run a tiny op per GPU
    host_id: str | None = None  # --host-id: the fleet's own name for this host
    # Set once the first probe children are running (or after FIRST_WAVE_WAIT): a caller with
    # work of its own (the doctor importing its checks) waits for it, since until then that
    # work takes the interpreter lock from the threads that start the children.
    started: threading.Event | None = None


def default_site_dirs(env: Mapping[str, str]) -> list[Path]:
    """Site folders of this interpreter and of the active virtualenv / conda env, if other."""
    dirs: list[str] = []
    try:
        dirs += site.getsitepackages()
        dirs.append(site.getusersitepackages())
    except AttributeError:  # some embedded interpreters lack these
        pass
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = env.get(var)
        if prefix:
            dirs += glob.glob(os.path.join(prefix, "lib", "python3*", "site-packages"))
            dirs += glob.glob(os.path.join(prefix, "Lib", "site-packages"))
    seen: list[Path] = []
    for d in dirs:
        p = Path(d)
        if p.is_dir() and p not in seen:
            seen.append(p)
    return seen


def _guarded(name: str, fn: Callable[[], T], fallback: T) -> tuple[T, list[ProbeRun]]:
    """Run a probe in-process; a bug in it becomes a recorded failure, not a crash."""
    start = time.monotonic()
    try:
        return fn(), [ProbeRun(name, "ok", round((time.monotonic() - start) * 1000, 1))]
    except Exception as exc:
        duration = round((time.monotonic() - start) * 1000, 1)
        return fallback, [ProbeRun(name, "error", duration, f"{type(exc).__name__}: {exc}")]


def _result(future: Future[T], name: str, fallback: T) -> tuple[T, list[ProbeRun]]:
    try:
        return future.result(), []
    except Exception as exc:
        return fallback, [ProbeRun(name, "error", 0.0, f"{type(exc).__name__}: {exc}")]


def driver_init_allowed(system: SystemFacts) -> bool:
    """False where the nvidia kernel module is known not to be loaded (not WSL): then nvmlInit
    and cuInit can only fail, and as root they would create device nodes or load modules."""
    return not (system.os == "Linux" and not system.wsl and system.nvidia_module_loaded is False)


def _library_site_dirs(
    opts: ProbeOptions, frameworks: Future[tuple[list[PythonEnvironment], ProbeRun]]
) -> list[Path]:
    if opts.site_dirs is not None:
        return opts.site_dirs
    if not opts.pythons:
        # gpucheck's own interpreter and the active virtualenv / conda env: their folders are
        # known without waiting for the frameworks probe's child (the scan starts at once).
        return default_site_dirs(opts.env)
    dirs: list[Path] = []
    try:
        environments, _ = frameworks.result()
    except Exception:
        environments = []
    for env in environments:
        for d in env.site_packages:
            path = Path(d)
            if path not in dirs and path.is_dir():
                dirs.append(path)
    return dirs


def _has_xla(frameworks: Future[tuple[list[PythonEnvironment], ProbeRun]]) -> bool:
    """Whether a probed environment holds a framework that compiles with XLA (TensorFlow,
    JAX); True where that cannot be told."""
    try:
        environments, _ = frameworks.result()
    except Exception:
        return True
    return any(BY_KEY[key].xla for env in environments for key in installed_frameworks(env))


def cuda_init_allowed(system: SystemFacts) -> str | None:
    """Why cuInit (ours, or a framework's in --deep) must not run, or None. Beyond
    driver_init_allowed: without /dev/nvidia-uvm, cuInit would load nvidia-uvm and create it."""
    if not driver_init_allowed(system):
        return "the nvidia kernel module is not loaded"
    if system.os == "Linux" and not system.wsl:
        uvm = next((n for n in system.device_nodes if n.path == "/dev/nvidia-uvm"), None)
        if uvm is not None and not uvm.exists:
            return "/dev/nvidia-uvm does not exist yet: CUDA would load nvidia-uvm and create it"
    return None


def collect(options: ProbeOptions | None = None) -> Snapshot:
    from gpucheck.probes.frameworks import probe_deep, probe_frameworks

    opts = options or ProbeOptions()
    snap = Snapshot(created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    # --deep imports the frameworks beside the other probes (the slowest part of a deep run)
    # and holds their CUDA calls at a gate until NVML has read the GPUs: the deep children's
    # CUDA contexts must not be mistaken for another job's memory.
    gate = Gate() if opts.deep else None
    first = child.spawned()
    try:
        with ThreadPoolExecutor(max_workers=5) as pool:
            # The frameworks probe touches no driver: it starts first (the slowest child, and
            # --python's site folders for the library scan come from it).
            frameworks_f = pool.submit(probe_frameworks, opts.env, opts.timeout, opts.pythons)
            # (The other probes' modules import while that child starts.)
            from gpucheck.probes.libraries import SearchScope
            from gpucheck.probes.native import probe_cuda_and_cudnn, probe_cuda_driver
            from gpucheck.probes.network import probe_network
            from gpucheck.probes.nvml import probe_nvml
            from gpucheck.probes.processes import probe_processes
            from gpucheck.probes.system import probe_system

            # The system probe reads files only (milliseconds) and decides whether driver init
            # is safe.
            snap.system, runs = _guarded(
                "system",
                lambda: probe_system(opts.root, opts.env, host_id=opts.host_id),
                SystemFacts(),
            )
            if snap.system.os == "Linux" and not snap.system.wsl:
                from gpucheck.probes.install_state import probe_install_state

                snap.install_state, state_runs = _guarded(
                    "install_state", lambda: probe_install_state(opts.root), None
                )
                runs += state_runs
            # Network facts: files only (milliseconds), by the GPUs' PCI addresses.
            snap.network, net_runs = _guarded(
                "network",
                lambda: probe_network(
                    opts.root,
                    opts.env,
                    [g.address for g in snap.system.pci_gpus],
                    linux=snap.system.os == "Linux" and not snap.system.wsl,
                ),
                NetworkFacts(),
            )
            runs += net_runs
            init = driver_init_allowed(snap.system)
            no_cuda_init = cuda_init_allowed(snap.system)

            def processes() -> tuple[ProcessFacts, list[ProbeRun]]:
                # After NVML, while the other probes run: its PIDs are looked up too (a
                # zombie, a process of another namespace). No command lines: a snapshot
                # travels, and a command line may hold a secret.
                pids = [p.pid for g in snap.nvml.gpus for p in g.processes or []]
                return _guarded(
                    "processes",
                    lambda: probe_processes(opts.root, pids, commands=False),
                    ProcessFacts(),
                )

            def libraries() -> tuple[CudaFacts, CudnnFacts, list[ProbeRun]]:
                # pip's nvidia-* libraries live in the probed environments: --python's folders
                # come from the frameworks probe (tens of milliseconds), the others at once;
                # what needs no site folder (nvcc, the loader cache) does not wait for them.
                return probe_cuda_and_cudnn(
                    SearchScope(env=opts.env),
                    opts.timeout,
                    lambda: _has_xla(frameworks_f),
                    site_dirs=lambda: _library_site_dirs(opts, frameworks_f),
                )

            def deep() -> ProbeRun:
                environments, _ = frameworks_f.result()
                return probe_deep(environments, opts.env, opts.timeout, gate)

            nvml_f = pool.submit(probe_nvml, opts.timeout, opts.env, init)
            driver_f = pool.submit(
                probe_cuda_driver, opts.timeout, opts.env, no_cuda_init is None, no_cuda_init
            )
            libs_f = pool.submit(libraries)
            deep_f = pool.submit(deep) if gate is not None else None
            if opts.started is not None:
                child.wait_spawned(first + FIRST_WAVE, FIRST_WAVE_WAIT)
                opts.started.set()
            (snap.nvml, nvml_run), err1 = _result(
                nvml_f, "nvml", (NvmlFacts(), ProbeRun("nvml", "error", 0.0))
            )
            if gate is None:  # (with --deep, once its children are gone: see below)
                snap.processes, proc_runs = processes()
            (driver, driver_run), err2 = _result(
                driver_f, "cuda_driver", (CudaDriverFacts(), ProbeRun("cuda_driver", "error", 0.0))
            )
            if no_cuda_init is not None and driver.load_error is not None:
                no_cuda_init = None  # no libcuda: a framework's CUDA calls cannot reach a driver
            if gate is not None:
                # Importing a framework and asking for its GPUs runs cuInit: read-only
                # forbids it where cuInit would load modules or create device nodes.
                gate.open("go" if no_cuda_init is None else f"stop {no_cuda_init}")
            (snap.cuda, snap.cudnn, lib_runs), err3 = _result(
                libs_f, "libraries", (CudaFacts(), CudnnFacts(), [])
            )
            (snap.environments, fw_run), err4 = _result(
                frameworks_f, "frameworks", ([], ProbeRun("frameworks", "error", 0.0))
            )
            deep_runs: list[ProbeRun] = []
            if deep_f is not None:
                deep_run, deep_err = _result(
                    deep_f, "frameworks_deep", ProbeRun("frameworks_deep", "error", 0.0)
                )
                deep_runs = deep_err or [deep_run]
    finally:
        if gate is not None:
            gate.open("stop gpucheck stopped")  # never leave a child waiting (no-op if open)
        if opts.started is not None:
            opts.started.set()  # (a probe that failed before its children: do not hold anyone)
    snap.cuda.driver = driver
    if gate is not None:
        # The deep children held GPU device files: look once they have ended.
        snap.processes, proc_runs = processes()
    snap.probes = [
        *runs,
        nvml_run,
        *proc_runs,
        driver_run,
        *lib_runs,
        fw_run,
        *err1,
        *err2,
        *err3,
        *err4,
    ]
    # A failed future already produced its own error run; drop the placeholder beside it.
    names = {r.name for r in err1 + err2 + err3 + err4}
    snap.probes = [r for r in snap.probes if not (r.name in names and r.error is None)]
    if gate is not None:
        if gate.went:
            snap.deep = True
        else:
            for environment in snap.environments:
                environment.runtimes.clear()  # stopped children: nothing was judged
            deep_runs = [
                ProbeRun(
                    "frameworks_deep", "skipped", 0.0, f"frameworks not imported: {no_cuda_init}"
                )
            ]
        snap.probes += deep_runs
    return snap


def collect_holders(options: ProbeOptions | None = None) -> Snapshot:
    """The facts `gpucheck procs` needs, and only those: the system (container, module), NVML
    (GPUs, memory, processes) and /proc's GPU holders."""
    from gpucheck.probes.nvml import probe_nvml
    from gpucheck.probes.processes import probe_processes
    from gpucheck.probes.system import probe_system

    opts = options or ProbeOptions()
    snap = Snapshot(created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    snap.system, runs = _guarded("system", lambda: probe_system(opts.root, opts.env), SystemFacts())
    snap.nvml, nvml_run = probe_nvml(opts.timeout, opts.env, driver_init_allowed(snap.system))
    nvml_pids = [p.pid for g in snap.nvml.gpus for p in g.processes or []]
    snap.processes, proc_runs = _guarded(
        "processes", lambda: probe_processes(opts.root, nvml_pids), ProcessFacts()
    )
    snap.probes = [*runs, nvml_run, *proc_runs]
    return snap
