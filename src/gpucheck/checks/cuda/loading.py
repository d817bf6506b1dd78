"""CUDA checks: the driver API (libcuda, cuInit) and the runtime libraries a process loads."""

from __future__ import annotations

import os
import re
from collections import defaultdict
from typing import Literal

from packaging.version import Version

from gpucheck.checks.context import Context
from gpucheck.checks.cuda.causes import CUINIT_CAUSES, libcuda_mismatch
from gpucheck.checks.driver.fabric_manager import fabric_cause, install_fabric_manager
from gpucheck.checks.fixes import unregister_loader_folders, upgrade_driver
from gpucheck.checks.registry import check
from gpucheck.checks.system.machine import container_steps
from gpucheck.compat import cuda_from_int, driver_text, parse_version
from gpucheck.compat.frameworks import major_minor
from gpucheck.model.finding import Outcome, Subjects
from gpucheck.model.fix import OR, Change, Fix, Step, Tool
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join
from gpucheck.model.snapshot import LibraryCopy


@check("cuda.driver-api", "libcuda loads and cuInit succeeds")
def driver_api(ctx: Context) -> Outcome | None:
    drv = ctx.snapshot.cuda.driver
    probe = ctx.snapshot.probe("cuda_driver")
    if probe is not None and probe.status in ("timeout", "crashed"):
        return Outcome.fail(
            f"The CUDA driver API {probe.error}",
            fix=Fix.of(
                Step.run(
                    "the driver is hung or crashing: look for Xid errors",
                    "sudo dmesg | grep -i xid",
                    layer=Layer.DRIVER,
                ),
                Step.reboot("reboot if it persists"),
            ),
        )
    nvml_error = ctx.snapshot.nvml.init_error
    if (
        not ctx.nvml_ok
        and nvml_error is not None
        and nvml_error.name
        not in (
            "BindingMissing",
            "LibraryNotFound",
        )
    ):
        # The driver itself is broken (driver.nvml says how); cuInit fails as a consequence.
        return Outcome.skip(
            "CUDA driver API not judged: the driver is not working (see driver.nvml)",
            *([f"cuInit: {drv.init_error_name}"] if drv.init_error_name else []),
        )
    if drv.load_error:
        if not ctx.nvml_ok:
            return (
                None
                if ctx.has_gpu is False
                else Outcome.skip(
                    "libcuda not found (no working driver, see above)", drv.load_error
                )
            )
        sysf = ctx.snapshot.system
        branch = (ctx.driver_version or "XXX").split(".")[0]
        fix = (
            Fix.of(
                *container_steps(sysf.container),
                Step.set_env(
                    "NVIDIA_DRIVER_CAPABILITIES",
                    "compute,utility",
                    "with the GPU passed in, the capabilities must include compute",
                ),
            )
            if sysf.container
            else Fix.of(
                Step.run(
                    "install the driver's CUDA library, from the same driver release "
                    "(Ubuntu/Debian)",
                    join(["sudo", "apt", "install", f"libnvidia-compute-{branch}"]),
                    Tool.APT,
                    changes=[Change(f"libnvidia-compute-{branch}", None, ctx.driver_version)],
                    layer=Layer.DRIVER,
                )
            )
        )
        return Outcome.fail(
            "NVML works but libcuda.so.1 (the CUDA driver library) is missing",
            drv.load_error,
            fix=fix,
        )
    if drv.init_skipped_reason:
        return (
            None
            if ctx.has_gpu is False
            else Outcome.skip(
                "cuInit not tried: the kernel module is not loaded", drv.init_skipped_reason
            )
        )
    if drv.init_result is None:
        return Outcome.skip(
            "The CUDA driver API could not be probed", str(probe.error if probe else "")
        )
    version = ctx.driver_cuda or "unknown"
    if drv.init_result != 0:
        name = drv.init_error_name or f"CUresult {drv.init_result}"
        if not ctx.nvml_ok and ctx.has_gpu is False:
            return None
        title, fix = CUINIT_CAUSES.get(
            name,
            (
                f"cuInit failed: {name}",
                Fix.of(
                    Step.run(
                        "look for driver errors", "sudo dmesg | grep -i nvrm", layer=Layer.DRIVER
                    ),
                    Step.manual("reinstall the driver", Layer.DRIVER),
                ),
            ),
        )
        evidence = [f"cuInit(0) = {drv.init_result} ({name})"]
        if name == "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH":
            title, fix, versions = libcuda_mismatch(ctx)
            evidence += versions
        driver = ctx.snapshot.nvml.driver_version
        cause = fabric_cause(ctx) if name == "CUDA_ERROR_SYSTEM_NOT_READY" else None
        if cause is not None:  # an NVSwitch system: what was gathered names the exact cause
            title = f"CUDA cannot start on this NVSwitch system: {cause[0]}"
            evidence += cause[1]
            fix = cause[2]
        elif name == "CUDA_ERROR_SYSTEM_NOT_READY" and driver:
            # The fabric manager must be this exact driver release: name it, with the package.
            fix = Fix.of(
                install_fabric_manager(ctx, driver),
                *fix.steps,
            )
        if ctx.nvml_ok:
            evidence.append(f"while NVML works (driver {ctx.snapshot.nvml.driver_version})")
        if drv.library_path:
            evidence.append(f"libcuda: {drv.library_path}")
        return Outcome.fail(title, *evidence, fix=fix)
    count = drv.device_count or 0
    evidence = [f"libcuda: {drv.library_path or 'libcuda.so.1'}"]
    wsl = _wsl_libcuda(ctx) if ctx.snapshot.system.wsl else None
    if wsl is not None:
        return wsl
    evidence += [
        f"device {d.index}: {d.name} (compute {d.compute_capability})" for d in drv.devices
    ]
    nvml_cuda = ctx.snapshot.nvml.cuda_driver_version
    if nvml_cuda and drv.driver_version and nvml_cuda != drv.driver_version:
        evidence.append(
            f"libcuda reports CUDA {cuda_from_int(drv.driver_version)}, "
            f"NVML {cuda_from_int(nvml_cuda)}: "
            "a forward-compatibility libcuda is in use"
        )
    # With MIG, CUDA enumerates MIG devices, not GPUs: counts are not comparable.
    mig = ctx.visibility.mig_entries or any(g.mig_enabled for g in ctx.gpus)
    answering = [g for g in ctx.visibility.visible if g.handle_error is None]
    if ctx.nvml_ok and count < len(answering) and not mig:
        return Outcome.warn(
            f"CUDA sees {count} device(s), but the driver has {len(answering)} usable GPU(s)",
            *evidence,
            fix=Fix.of(
                Step.info("look at the GPU checks above (lost GPUs, MIG, compute mode)"),
                Step.run("see CUDA_VISIBLE_DEVICES", "echo $CUDA_VISIBLE_DEVICES"),
            ),
        )
    return Outcome.passed(f"CUDA driver API {version}: {count} device(s)", *evidence)


WSL_LIB = "/usr/lib/wsl/lib"


def _wsl_libcuda(ctx: Context) -> Outcome | None:
    """WSL2's libcuda is the Windows driver's, mounted at /usr/lib/wsl/lib. A Linux driver's
    copy found first cannot work; an unversioned libcuda.so missing from the loader cache
    (its files there are copies, not links, so ldconfig skips them) breaks what looks it up
    by that name: Triton ('libcuda.so cannot found'), torch.compile, some JAX builds."""
    drv, cache = ctx.snapshot.cuda.driver, ctx.snapshot.cuda.libcuda_cache
    ld = ctx.snapshot.system.env.get("LD_LIBRARY_PATH", "").split(":")
    export = Step.prepend_loader_path(
        [WSL_LIB],
        f"put {WSL_LIB} first on the loader path (in ~/.bashrc to keep it)",
    )
    linux = [
        p
        for p in [drv.library_path or "", *((cache or {}).get("libcuda.so.1", []))]
        if p and not p.startswith("/usr/lib/wsl/")  # lib/, or drivers/ behind it
    ]
    if linux:
        return Outcome.fail(
            "libcuda resolves to a Linux driver's copy inside WSL2, not the Windows driver's",
            *[f"libcuda: {p}" for p in linux],
            fix=Fix.of(
                Step.run(
                    "remove the Linux NVIDIA driver from WSL (WSL uses the Windows driver)",
                    "sudo apt-get remove --purge 'libnvidia-compute-*' 'nvidia-driver-*'",
                    Tool.APT,
                    changes=[
                        Change("libnvidia-compute-*", remove=True),
                        Change("nvidia-driver-*", remove=True),
                    ],
                    layer=Layer.DRIVER,
                ),
                Step.run("refresh the loader cache", "sudo ldconfig", layer=Layer.DRIVER),
                OR,
                export,
            ),
            subjects=Subjects(paths=linux),
        )
    if cache is None or cache.get("libcuda.so") or WSL_LIB in ld:
        return None
    cudnn8 = _cudnn8_users(ctx)
    if cudnn8:
        # cuDNN 8 dlopens libcuda.so by that name: its convolutions abort ("Could not load
        # library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file",
        # facebookresearch/nougat#115 on WSL2): the job cannot run, not a mere warning.
        return Outcome.fail(
            "WSL2: the unversioned libcuda.so is not in the loader cache, and cuDNN 8 opens it "
            "by that name: its convolutions abort ('Could not load library "
            "libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file')",
            *[f"cuDNN 8: {where}" for where, _ in cudnn8],
            "ldconfig cache: no libcuda.so",
            fix=Fix.of(export),
            subjects=Subjects(paths=[WSL_LIB], environments=sorted({e for _, e in cudnn8 if e})),
        )
    return Outcome.warn(
        "WSL2: the unversioned libcuda.so is not in the loader cache: programs that load it "
        "by that name (Triton, torch.compile) fail with 'libcuda.so cannot found'",
        "ldconfig cache: libcuda.so.1 => " + (", ".join(cache.get("libcuda.so.1", [])) or "none"),
        "ldconfig cache: no libcuda.so",
        fix=Fix.of(export),
        subjects=Subjects(paths=[WSL_LIB]),
    )


def _cudnn8_users(ctx: Context) -> list[tuple[str, str | None]]:
    """(where, environment) of each cuDNN 8 the loader or an environment holds: pip's
    nvidia-cudnn-cu11/cu12 8.x, or a cuDNN 8 copy on disk (system, conda, torch/lib)."""
    found: list[tuple[str, str | None]] = [
        (f"{d.name} {d.version} in {env.python}", env.python)
        for env in ctx.snapshot.environments
        for d in env.distributions
        if d.name.lower().replace("_", "-").startswith("nvidia-cudnn-cu")
        and d.version.startswith("8.")
    ]
    found += [
        (f"{c.path} ({c.version})", None)
        for c in ctx.snapshot.cudnn.libraries
        if (c.version or "").startswith("8.") and c.origin != "pip"
    ]
    return found


def needs_newer_driver(ctx: Context, cuda: str) -> tuple[str, str] | None:
    """(severity, explanation) when the driver's CUDA is older than `cuda`, else None."""
    have = major_minor(ctx.driver_cuda)
    want = major_minor(cuda)
    if have is None or want is None or want <= have:
        return None
    if want.major > have.major:
        return "fail", (
            f"CUDA {want} needs a driver for CUDA {want.major}.x; this driver supports "
            f"CUDA {have}: programs built with it fail with CUDA_ERROR_INSUFFICIENT_DRIVER"
        )
    floor = ctx.compat.minor_compat_floor(want.major, ctx.os)
    driver = parse_version(ctx.driver_version or "")
    if floor is not None and driver is not None and driver >= floor:
        return "warn", (
            f"CUDA {want} is newer than the driver's CUDA {have}: it runs through minor version "
            f"compatibility (driver {ctx.driver_version} >= {driver_text(floor)}), but PTX JIT "
            "compilation and newer features fail"
        )
    return "fail", f"CUDA {want} is newer than the driver's CUDA {have}"


def _without(path: list[str], dirs: set[str]) -> list[str]:
    """LD_LIBRARY_PATH's folders without these (and without empty entries)."""
    return [d for d in path if d and d.rstrip("/") not in dirs]


def copies_line(c: LibraryCopy) -> str:
    where = c.package or c.origin.replace("_", " ")
    version = c.version or "unknown version"
    err = f" - cannot be loaded: {c.load_error}" if c.load_error else ""
    return f"{version} at {c.path} ({where}){err}"


def _soname_major(c: LibraryCopy) -> str:
    parsed = parse_version(c.version or "")
    return str(parsed.major) if parsed else "?"


def loader_conflicts(copies: list[LibraryCopy]) -> list[list[LibraryCopy]]:
    """Copies on the loader path sharing a soname (same major) but differing in version: which
    one a program gets depends on LD_LIBRARY_PATH order. Different majors coexist by design."""
    by_major: dict[str, list[LibraryCopy]] = defaultdict(list)
    for c in copies:
        if c.on_loader_path:
            by_major[_soname_major(c)].append(c)
    conflicts = []
    for group in by_major.values():
        versions = {major_minor(c.version) for c in group}
        if len(versions) > 1:
            conflicts.append(group)
    return conflicts


@check(
    "cuda.runtime-libraries",
    "CUDA runtime copies on the loader path agree and fit the driver",
)
def runtime_libraries(ctx: Context) -> Outcome | None:
    copies = ctx.snapshot.cuda.runtimes
    if not copies:
        return Outcome.info(
            "No CUDA runtime (libcudart) installed outside the frameworks",
            "pip and conda frameworks bring their own; a system copy matters only for code "
            "built against it",
        )
    evidence = [copies_line(c) for c in copies]
    conflicts = loader_conflicts(copies)
    if conflicts:
        first = conflicts[0]
        keep = max(first, key=lambda c: parse_version(c.version or "0") or Version("0"))
        other_dirs = {os.path.dirname(c.path) for c in first if c is not keep}
        ld_path = ctx.snapshot.system.env.get("LD_LIBRARY_PATH", "").split(":")
        return Outcome.warn(
            "Several CUDA runtime versions compete on the loader path: which one a program "
            "gets depends on LD_LIBRARY_PATH order",
            *evidence,
            fix=Fix.of(
                Step.set_env(
                    "LD_LIBRARY_PATH",
                    ":".join(_without(ld_path, other_dirs)) or os.path.dirname(keep.path),
                    f"keep one: take the other folders off LD_LIBRARY_PATH (keep "
                    f"{os.path.dirname(keep.path)})",
                ),
                OR,
                Step.manual("remove stale /etc/ld.so.conf.d entries"),
                Step.run("refresh the loader cache", "sudo ldconfig"),
            ),
        )
    on_path = [c for c in copies if c.on_loader_path and c.version]
    problems = [(c, v) for c in on_path if (v := needs_newer_driver(ctx, c.version or ""))]
    if problems:
        # A failure the frameworks would meet first; the toolkit's own only warns.
        c, (severity, why) = min(
            problems, key=lambda p: p[1][0] != "fail" or _toolkit_own(ctx, p[0])
        )
        own = severity == "fail" and _toolkit_own(ctx, c)
        maker = Outcome.fail if severity == "fail" and not own else Outcome.warn
        return maker(
            f"CUDA runtime {c.version} on the loader path is newer than the driver supports"
            + (": code built with its toolkit does not run here" if own else ""),
            why,
            *(
                ["only what its toolkit builds loads it: pip and conda frameworks bring their own"]
                if own
                else []
            ),
            *evidence,
            fix=Fix.of(
                upgrade_driver(ctx, c.version or ""),
                OR,
                Step.manual(
                    f"put a runtime no newer than CUDA {ctx.driver_cuda} first on the loader path"
                ),
            ),
        )
    behind = _behind_toolkit(ctx, on_path)
    if behind is not None:
        return behind
    versions = ", ".join(sorted({c.version or "?" for c in copies}))
    if ctx.driver_cuda is None:
        # Nothing to judge their fit against: worth knowing, not a pass.
        return Outcome.info(f"CUDA runtime {versions} installed (no driver to run it)", *evidence)
    return Outcome.passed(f"CUDA runtime {versions} found", *evidence)


# A toolkit's library folder: /usr/local/cuda-13.0/lib64, .../targets/x86_64-linux/lib. (As
# text: re compiles it on first use, not at every start-up.)
_TOOLKIT_LIB = r"/cuda(-\d+(\.\d+)*)?/(lib64|lib|targets)/"


def _toolkit_own(ctx: Context, c: LibraryCopy) -> bool:
    """A toolkit's own runtime, in its folder or the ldconfig entry its installer wrote: only
    what that toolkit builds loads it (frameworks' RUNPATH finds their own first), so a too-new
    one warns as cuda.toolkit does. LD_LIBRARY_PATH beats RUNPATH: there it is a failure."""
    ld_path = {d.rstrip("/") for d in ctx.snapshot.system.env.get("LD_LIBRARY_PATH", "").split(":")}
    if c.origin == "ld_library_path" or os.path.dirname(c.path) in ld_path:
        return False
    return c.origin == "cuda_toolkit" or re.search(_TOOLKIT_LIB, c.realpath) is not None


def _behind_toolkit(ctx: Context, on_path: list[LibraryCopy]) -> Outcome | None:
    """A runtime on the loader path (the cache, /etc/ld.so.conf.d) of the nvcc's major but
    older: what that nvcc builds against the shared runtime (-cudart shared, CMake's
    CUDA::cudart, extensions) gets it at run time and misses the newer symbols its headers
    used ("undefined symbol: cudaGetDriverEntryPointByVersion, version libcudart.so.12", new
    in 12.5: sgl-project/sglang#3372)."""
    nvcc = ctx.snapshot.cuda.nvcc
    built = major_minor(nvcc.version) if nvcc and nvcc.version else None
    if nvcc is None or built is None:
        return None
    own = (nvcc.toolkit or "").rstrip("/") + "/"
    older = [
        c
        for c in on_path
        if c.origin != "pip"
        and not (own != "/" and c.realpath.startswith(own))
        and (have := major_minor(c.version)) is not None
        and have.major == built.major
        and have < built
    ]
    if not older:
        return None
    lib = f"{nvcc.toolkit}/lib64" if nvcc.toolkit else None
    folders = sorted({os.path.dirname(c.path) for c in older})
    steps: list[Step | Literal["or"]] = []
    if lib:
        steps += [
            Step.prepend_loader_path(
                [lib],
                "put the toolkit's own runtime first where its builds run",
            ),
            OR,
        ]
    steps += unregister_loader_folders(ctx, folders)
    return Outcome.warn(
        f"The loader path's CUDA runtime {older[0].version} is older than the toolkit "
        f"(nvcc {nvcc.version}) builds use: what it builds against the shared runtime misses "
        "newer symbols at run time ('undefined symbol ... libcudart.so."
        f"{built.major}')",
        *[copies_line(c) for c in older],
        f"nvcc {nvcc.version} at {nvcc.path}",
        fix=Fix.of(*steps),
        subjects=Subjects(paths=folders),
    )
