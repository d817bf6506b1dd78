"""compat/nvml_bindings.toml: the binding releases that switched their unversioned process-list
calls to versioned NVML functions, as the releases' own pynvml.py shows them."""

from __future__ import annotations

from packaging.version import Version

from gpucheck.compat import load


def test_the_rows_name_the_release_the_function_and_its_branch() -> None:
    calls = {str(c.since): c for c in load().nvml_bindings.calls if c.binding == "nvidia-ml-py"}
    assert set(calls) == {"11.450.129", "11.510.69"}
    assert calls["11.450.129"].functions[0] == "nvmlDeviceGetComputeRunningProcesses_v2"
    assert calls["11.450.129"].driver_branch == 450
    assert calls["11.510.69"].functions[0] == "nvmlDeviceGetComputeRunningProcesses_v3"
    assert calls["11.510.69"].driver_branch == 510


def test_missing_is_the_oldest_call_the_driver_predates() -> None:
    data = load().nvml_bindings
    lacking = data.missing("nvidia-ml-py", Version("13.615.71"), 430)
    assert lacking is not None and str(lacking.since) == "11.450.129"
    assert data.missing("nvidia-ml-py", Version("13.615.71"), 535) is None
    assert data.missing("nvidia-ml-py", Version("11.450.51"), 418) is None


def test_the_old_pynvml_package_rows_and_the_first_release_a_driver_cannot_serve() -> None:
    data = load().nvml_bindings
    pynvml = {str(c.since): c for c in data.calls if c.binding == "pynvml"}
    assert {k: (v.functions[0], v.driver_branch) for k, v in pynvml.items()} == {
        "11.0.0": ("nvmlDeviceGetComputeRunningProcesses_v2", 450),
        "11.5.0": ("nvmlDeviceGetComputeRunningProcesses_v3", 510),
    }
    assert data.missing("pynvml", Version("11.4.1"), 440) is pynvml["11.0.0"]
    assert data.missing("pynvml", Version("8.0.4"), 440) is None
    first = data.first_unserved("nvidia-ml-py", 440)
    assert first is not None and str(first.since) == "11.450.129"
    later = data.first_unserved("nvidia-ml-py", 470)
    assert later is not None and str(later.since) == "11.510.69"
    assert data.first_unserved("nvidia-ml-py", 535) is None
