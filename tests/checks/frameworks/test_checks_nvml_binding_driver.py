"""frameworks.nvml-bindings against an older driver: nvidia-ml-py's unversioned process-list
calls use the newest function version of the branch the binding was made from, so a binding
newer than the driver calls a symbol the driver's libnvidia-ml lacks (compat/nvml_bindings.toml:
_v2 from 11.450.129, first in R450; _v3 from 11.510.69, first in R510)."""

from __future__ import annotations

from support import builders
from support import framework_builders as fb
from support.evaluate import the

from gpucheck.model.finding import Status
from gpucheck.model.snapshot import Snapshot


def _on_driver(driver: str, binding: str) -> Snapshot:
    env = fb.environment()
    fb.add(env, "nvidia-ml-py", binding)
    snap = fb.on(builders.h100_node(1), env)
    snap.nvml.driver_version = snap.system.nvidia_module_version = driver
    return snap


def test_a_binding_calling_v2_on_an_r430_driver_warns_with_the_last_binding_before_it() -> None:
    # gpuopenanalytics/pynvml#43: "libnvidia-ml.so.1: undefined symbol:
    # nvmlDeviceGetComputeRunningProcesses_v2" on the 430 driver.
    f = the(_on_driver("430.64", "11.495.46"), "frameworks.nvml-bindings")
    assert f.status is Status.WARN
    assert "calls nvmlDeviceGetComputeRunningProcesses_v2, which driver 430.64 lacks" in f.title
    assert f.fix is not None
    assert f.fix.commands == ["pip install 'nvidia-ml-py<11.450.129'"]
    assert "upgrade the driver to R450 or newer" in f.fix.text


def test_a_current_binding_on_an_r470_driver_warns_about_the_v3_functions() -> None:
    f = the(_on_driver("470.256.02", "13.615.71"), "frameworks.nvml-bindings")
    assert f.status is Status.WARN
    assert "nvmlDeviceGetComputeRunningProcesses_v3" in f.title
    assert f.fix is not None and f.fix.commands == ["pip install 'nvidia-ml-py<11.510.69'"]


def test_a_binding_without_versioned_calls_on_r430_is_not_too_new() -> None:
    # 11.450.51's nvmlDeviceGetComputeRunningProcesses still calls the unversioned symbol.
    f = the(_on_driver("430.64", "11.450.51"), "frameworks.nvml-bindings")
    assert "lacks" not in f.title


def test_a_v3_binding_on_an_r510_driver_passes() -> None:
    f = the(_on_driver("510.47.03", "11.510.69"), "frameworks.nvml-bindings")
    assert f.status is Status.PASS


def _copy_on_driver(driver: str, pynvml: str) -> Snapshot:
    env = fb.environment()
    fb.add(env, "pynvml", pynvml)  # before 12.0.0: its own pynvml/nvml.py, no nvidia-ml-py
    snap = fb.on(builders.h100_node(1), env)
    snap.nvml.driver_version = snap.system.nvidia_module_version = driver
    return snap


def test_an_old_pynvml_copy_calling_v2_on_driver_440_is_judged_and_replaced_below_it() -> None:
    # NVIDIA/k8s-device-plugin#331: site-packages/pynvml/nvml.py returns
    # nvmlDeviceGetComputeRunningProcesses_v2(handle) on driver 440.59, "undefined symbol".
    # The newest nvidia-ml-py would call _v3 and fail there too: the replacement is pinned.
    f = the(_copy_on_driver("440.59", "11.4.1"), "frameworks.nvml-bindings")
    assert f.status is Status.WARN
    assert f.title.startswith(
        "pynvml 11.4.1 calls nvmlDeviceGetComputeRunningProcesses_v2, which driver 440.59 lacks"
    )
    assert f.fix is not None
    assert f.fix.commands == ["pip uninstall -y pynvml && pip install 'nvidia-ml-py<11.450.129'"]
    assert "upgrade the driver to R450 or newer" in f.fix.text


def test_pynvml_11_5_calls_v3_which_an_r470_driver_lacks() -> None:
    f = the(_copy_on_driver("470.256.02", "11.5.0"), "frameworks.nvml-bindings")
    assert "pynvml 11.5.0 calls nvmlDeviceGetComputeRunningProcesses_v3" in f.title
    assert f.fix is not None
    assert f.fix.commands == ["pip uninstall -y pynvml && pip install 'nvidia-ml-py<11.510.69'"]


def test_an_old_copy_on_a_current_driver_is_replaced_by_the_newest_binding() -> None:
    f = the(_copy_on_driver("535.183.01", "11.4.1"), "frameworks.nvml-bindings")
    assert f.title == "pynvml: an old copy of NVML's binding, no longer updated"
    assert f.fix is not None
    assert f.fix.commands == ["pip uninstall -y pynvml && pip install nvidia-ml-py"]


def test_pynvml_8_calls_the_unversioned_function_and_is_only_old() -> None:
    f = the(_copy_on_driver("440.59", "8.0.4"), "frameworks.nvml-bindings")
    assert "lacks" not in f.title
    assert f.fix is not None
    assert f.fix.commands == ["pip uninstall -y pynvml && pip install 'nvidia-ml-py<11.450.129'"]
