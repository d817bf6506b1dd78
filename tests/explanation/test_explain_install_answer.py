"""explain's torch advice is `gpucheck install torch`'s answer for the same facts: the
environment's Python (no wheel it lacks), the GPUs (code for them) and the driver."""

from __future__ import annotations

from support.framework_builders import blackwell_workstation, environment, on, torch_cu124

import gpucheck

NO_KERNEL = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
DRIVER_TOO_OLD = "RuntimeError: CUDA driver version is insufficient for CUDA runtime version"


def _torch_command(text: str, snapshot: gpucheck.Snapshot) -> str | None:
    finding = gpucheck.explain(text, snapshot=snapshot).findings[0]
    assert finding.fix is not None
    return next((s.command for s in finding.fix.steps if "torch==" in (s.command or "")), None)


def test_no_kernel_image_on_python_3_10_names_the_build_install_names_for_3_10() -> None:
    # torch 2.15 has no wheel for Python 3.10 (compat/torch.toml): 2.14, built with CUDA 13.2
    # (sm_120 code, and driver 590.44.01 runs it), is the newest that installs there.
    facts = on(blackwell_workstation(), torch_cu124(environment(version="3.10.14")))
    expected = "pip install 'torch==2.14.*' --index-url https://download.pytorch.org/whl/cu132"
    assert _torch_command(NO_KERNEL, facts) == expected
    install = gpucheck.install_plan(["torch"], gpus=["RTX 5090"], driver="590.44.01", python="3.10")
    assert install.commands == [expected]


def test_driver_insufficient_on_an_rtx_5090_names_a_build_with_code_for_it() -> None:
    # Driver 550.54.14 runs CUDA 12.x by minor-version compatibility; sm_120 code first came
    # with CUDA 12.8, whose last torch is 2.11: never a cu126 build, which has none for it.
    facts = on(blackwell_workstation(), torch_cu124())
    facts.nvml.driver_version = "550.54.14"
    expected = "pip install 'torch==2.11.*' --index-url https://download.pytorch.org/whl/cu128"
    assert _torch_command(DRIVER_TOO_OLD, facts) == expected
    install = gpucheck.install_plan(["torch"], gpus=["RTX 5090"], driver="550.54.14", python="3.11")
    assert install.commands == [expected]
