"""`gpucheck install cupy` against the machines CuPy's wheel names get wrong. Every expectation
is a literal read from the sources behind compat/cupy.toml (CuPy's install.rst at each release
tag: its Requirements list and its PyPI package table) and compat/cuda.toml (minor-version
compatibility floors, NVRTC's compute-capability range per CUDA), cited per test."""

from __future__ import annotations

from pathlib import Path

from support import framework_builders as fb

from gpucheck.compat import load
from gpucheck.install.answer import InstallAnswer
from gpucheck.install.flow import InstallRequest, answer_for, run_install
from gpucheck.install.machine import Described, InstalledDist, described
from gpucheck.install.request import parse_wanted
from gpucheck.model.snapshot import dumps


def answer(*packages: str, installer: str = "pip", **machine: object) -> InstallAnswer:
    compat = load()
    here = described(compat, Described(**machine))  # type: ignore[arg-type]
    return answer_for(compat, here, parse_wanted(list(packages)), installer)


def test_a_driver_that_runs_only_cuda_11_gets_cupy_cuda11x_of_13_6_the_last_line_with_it() -> None:
    # R470 runs CUDA 11.x (minor-version floor 450.80.02); CUDA 12 needs >= 525, 13 >= 580
    # (CUDA release notes, minor-version table). v13.6.0's install.rst: cupy-cuda11x for
    # "v11.2 ~ 11.8"; CuPy v14 drops CUDA 11 (cupy#9319): its table has cupy-cuda12x, -cuda13x.
    got = answer("cupy", gpus=("A100",), driver="470.82.01", python="3.11")
    (cupy,) = got.packages
    assert (cupy.requirement, cupy.build, cupy.cuda) == (
        "cupy-cuda11x==13.6.*",
        "cupy-cuda11x",
        "11.8",
    )
    assert cupy.ruled_out[0] == (
        "14.2: cupy-cuda13x: CUDA 13.0 needs driver 580 or newer (driver 470.82.01 runs CUDA "
        "11.4 at most); cupy-cuda12x: CUDA 12.0 needs driver 525 or newer (driver 470.82.01 "
        "runs CUDA 11.4 at most)"
    )
    assert cupy.cliff is not None and cupy.cliff.endswith(": 13.6 is the last that runs here")
    # v13 wheels have no [ctk] extra (it first appears in v14.0.0's install.rst)
    assert any("needs a CUDA Toolkit 11.2 to 11.8 on the system" in n for n in cupy.notes)
    assert got.commands == ["pip install 'cupy-cuda11x==13.6.*'"]
    assert got.ok


def test_rtx_5090_gets_a_line_with_cuda_12_8_and_is_refused_by_older_ones() -> None:
    # CUDA 12.8 is the first to build for compute capability 12.0 (PTX ISA release history);
    # CuPy lists CUDA 12.8 from v13.4.0 on (v13.3.0: up to 12.6). R570 runs 12.x, not 13.x.
    got = answer("cupy", gpus=("RTX 5090",), driver="570.124.06", python="3.12")
    (cupy,) = got.packages
    assert (cupy.requirement, cupy.cuda) == ("cupy-cuda12x[ctk]==14.2.*", "12.9")
    assert "these GPUs need CUDA 12.8 or newer: CUDA 12.0 cannot build for them" in cupy.notes
    assert got.commands == ["pip install 'cupy-cuda12x[ctk]==14.2.*'"]

    old = answer("cupy<13.4", gpus=("RTX 5090",), driver="570.124.06", python="3.12")
    (cupy,) = old.packages
    assert cupy.requirement is None and not old.ok and old.commands == []
    assert cupy.ruled_out[0] == (
        "13.3: cupy-cuda12x: CUDA 12.6 cannot build for compute capability 12.0 (CUDA 12.6 "
        "builds for 5.0 to 9.0); cupy-cuda11x: CUDA 11.8 cannot build for compute capability "
        "12.0 (CUDA 11.8 builds for 3.5 to 9.0)"
    )

    first = answer("cupy==13.4.0", gpus=("RTX 5090",), driver="570.124.06", python="3.12")
    (cupy,) = first.packages
    assert (cupy.requirement, cupy.cuda) == ("cupy-cuda12x==13.4.0", "12.8")


def test_kepler_on_its_last_driver_gets_cupy_cuda11x() -> None:
    # Tesla K80 is compute capability 3.7: CUDA 11 builds for 3.5 and newer, CUDA 12 for 5.0
    # (cuda.toml toolkit_arch); Kepler's last branch is R470 (driver_branches.toml).
    got = answer("cupy", gpus=("K80",), driver="470.256.02", python="3.10")
    (cupy,) = got.packages
    assert (cupy.requirement, cupy.cuda) == ("cupy-cuda11x==13.6.*", "11.8")


def test_maxwell_on_r580_skips_cupy_cuda13x_for_the_architecture() -> None:
    # CUDA 13.0 removed offline compilation for Maxwell, Pascal and Volta (minimum 7.5).
    got = answer("cupy", gpus=("GTX 980",), driver="580.95.05", python="3.12")
    (cupy,) = got.packages
    assert (cupy.requirement, cupy.cuda) == ("cupy-cuda12x[ctk]==14.2.*", "12.9")
    assert cupy.ruled_out == [] and cupy.cliff is None


def test_a_machine_without_a_gpu_is_refused_with_why() -> None:
    # install.rst Requirements: "NVIDIA CUDA GPU with the Compute Capability 3.0 or larger".
    got = answer("cupy", python="3.12")
    (cupy,) = got.packages
    assert cupy.requirement is None and not got.ok and got.commands == []
    assert cupy.ruled_out == [
        "CuPy has no CPU build: it runs on an NVIDIA GPU (compute capability 3.0 or newer, "
        "CuPy's requirements) and this machine has none"
    ]


def test_python_range_per_line() -> None:
    # Python lists: v14.x 3.10-3.14; v13.4-13.6 3.9-3.13; v12.3 3.8-3.12 (install.rst).
    (cupy,) = answer("cupy", gpus=("H100",), driver="580.95.05", python="3.8").packages
    assert cupy.requirement == "cupy-cuda12x==12.3.*"
    assert cupy.ruled_out[0] == "14.2: has no wheel for Python 3.8 (Python 3.10 to 3.14)"
    (cupy,) = answer("cupy", gpus=("H100",), driver="580.95.05", python="3.9").packages
    assert cupy.requirement == "cupy-cuda13x==13.6.*"
    (cupy,) = answer("cupy", gpus=("H100",), driver="580.95.05", python="3.14").packages
    assert cupy.requirement == "cupy-cuda13x[ctk]==14.2.*"


def test_a_pin_and_a_named_wheel_are_honoured() -> None:
    # v13.3.0 lists CUDA v12.0 ... v12.6; R550 runs CUDA 12.4, 12.5/12.6 by minor compatibility.
    (cupy,) = answer("cupy==13.3", gpus=("RTX 4090",), driver="550.54.14", python="3.12").packages
    assert (cupy.requirement, cupy.cuda) == ("cupy-cuda12x==13.3", "12.6")
    got = answer("cupy-cuda11x", gpus=("RTX 4090",), driver="550.54.14", python="3.12")
    (cupy,) = got.packages
    assert (cupy.name, cupy.requirement) == ("cupy-cuda11x", "cupy-cuda11x==13.6.*")


def test_an_installed_cupy_wheel_of_another_cuda_is_named_as_a_conflict() -> None:
    # install.rst: "Any of these packages and cupy package (source installation) conflict
    # with each other. Please make sure that only one CuPy package ... is installed."
    got = answer(
        "cupy",
        gpus=("RTX 4090",),
        driver="550.54.14",
        python="3.12",
        installed=(InstalledDist("cupy-cuda11x", "13.6.0"), InstalledDist("numpy", "2.1.0")),
    )
    assert [(c.name, c.installed) for c in got.conflicts] == [("cupy-cuda11x", "13.6.0")]
    assert "pip uninstall cupy-cuda11x first" in got.conflicts[0].why
    assert not got.ok and got.commands == ["pip install 'cupy-cuda12x[ctk]==14.2.*'"]
    same = answer(
        "cupy",
        gpus=("RTX 4090",),
        driver="550.54.14",
        python="3.12",
        installed=(InstalledDist("cupy-cuda12x", "13.6.0"),),
    )
    assert same.conflicts == [] and same.ok


def test_conda_and_uv_commands() -> None:
    # install.rst v14: "conda install -c conda-forge cupy cuda-version=12.9" forces a CUDA.
    machine = {"gpus": ("RTX 4090",), "driver": "550.54.14", "python": "3.12"}
    conda = answer("cupy", installer="conda", **machine)
    assert conda.commands == ["conda install -c conda-forge cupy=14.2 cuda-version=12.9"]
    uv = answer("cupy", installer="uv-add", **machine)
    assert uv.commands == ["uv add 'cupy-cuda12x[ctk]==14.2.*'"] and uv.pyproject is None


def test_a_cuda_without_an_architecture_range_is_passed_over_and_said_so() -> None:
    # CuPy 12 still published cupy-cuda102 (v12.3.0's install.rst); compat/cuda.toml's
    # toolkit_arch rows start at CUDA 11.0, so a GTX 680 (3.0) is not assumed to be covered.
    got = answer("cupy==12.3.*", gpus=("GTX 680",), driver="470.82.01", python="3.8")
    (cupy,) = got.packages
    assert cupy.requirement is None and not got.ok
    assert cupy.ruled_out[0].endswith(
        "; cupy-cuda102: the compat data has no compute-capability range for CUDA 10.2 "
        "(compat/cuda.toml's start at 11.0): not assumed"
    )


def test_a_probed_pascal_venv_holding_cupy_cuda11x_is_told_to_swap_it(tmp_path: Path) -> None:
    # GTX 1080 (6.1) on 580.95.05: CUDA 13 builds from 7.5 on, so cupy-cuda12x (CUDA 12.x from
    # 5.0); the installed cupy-cuda11x would clash with it (install.rst: one CuPy package only).
    env = fb.add(fb.environment(), "cupy-cuda11x", "13.3.0", ["numpy<2.3,>=1.22"])
    path = tmp_path / "snap.json"
    path.write_text(dumps(fb.on(fb.pascal_workstation(), env)))
    got = run_install(InstallRequest(packages=("cupy",), from_file=str(path)))
    (cupy,) = got.packages
    assert (cupy.requirement, cupy.cuda, got.python) == (
        "cupy-cuda12x[ctk]==14.2.*",
        "12.9",
        "3.11",
    )
    assert [(c.name, c.installed) for c in got.conflicts] == [("cupy-cuda11x", "13.3.0")]
    assert not got.ok
