"""The install resolver against the machines installers get wrong. Every expectation is a
literal read from the cited sources behind compat/torch.toml, compat/cuda.toml and
compat/extensions.toml (cited per test), never a value the resolver computed."""

from __future__ import annotations

import pytest

from gpucheck.compat import load
from gpucheck.install.answer import InstallAnswer
from gpucheck.install.flow import answer_for
from gpucheck.install.machine import Described, InstalledDist, described
from gpucheck.install.request import parse_wanted


def answer(*packages: str, **machine: object) -> InstallAnswer:
    compat = load()
    return answer_for(compat, described(compat, Described(**machine)), parse_wanted(list(packages)))  # type: ignore[arg-type]


def test_pascal_after_2_14_gets_the_cu126_build_of_2_14_and_the_cliff_in_one_sentence() -> None:
    # torch 2.15.0's PyPI wheel (+cu132) reads 'sm_75 sm_80 sm_86 sm_90 sm_100 sm_120'; the
    # 2.14 cu126 build carries sm_60 (RELEASE.md 12.6.3 row: Pascal(6.0)), whose SASS runs on 6.1.
    got = answer("torch", gpus=("GTX 1080",), driver="580.95.05", python="3.12")
    (torch,) = got.packages
    assert (torch.requirement, torch.build) == ("torch==2.14.*", "cu126")
    assert torch.index_url == "https://download.pytorch.org/whl/cu126"
    assert torch.cliff == (
        "torch 2.15 ships CUDA 13.2 builds only, which have no code for compute capability 6.1: "
        "2.14 with CUDA 12.6 is the last that runs here"
    )
    assert torch.ruled_out == [
        "2.15: CUDA 13.2: has no code for compute capability 6.1 "
        "(built for sm_75 sm_80 sm_86 sm_90 sm_100 sm_120)"
    ]
    assert got.commands == [
        "pip install 'torch==2.14.*' --index-url https://download.pytorch.org/whl/cu126"
    ]
    assert got.ok


def test_volta_after_2_14_likewise() -> None:
    # RFC #190385: 2.15 drops Maxwell/Pascal/Volta with CUDA 12.6; 2.14's cu126 keeps sm_70.
    (torch,) = answer("torch", gpus=("V100",), driver="580.95.05", python="3.12").packages
    assert (torch.release, torch.build) == ("2.14", "cu126")
    assert torch.cliff is not None and "compute capability 7.0" in torch.cliff


def test_rtx_5090_on_r570_gets_cuda_12_8_the_newest_that_starts() -> None:
    # R570 runs CUDA 12.8 (its floor 570.26); CUDA 13.x needs >= 580 (minor-version table).
    # The last release with a cu128 build is 2.11 (RFC #178665 deprecates 12.8 for 2.12).
    (torch,) = answer("torch", gpus=("RTX 5090",), driver="570.124.06", python="3.12").packages
    assert (torch.requirement, torch.cuda) == ("torch==2.11.*", "12.8")
    assert torch.cliff == (
        "torch 2.15 ships CUDA 13.2 builds only, which need driver 580 or newer (driver "
        "570.124.06 runs CUDA 12.8 at most): 2.11 with CUDA 12.8 is the last that runs here"
    )
    assert torch.ruled_out[1] == (
        "2.14: CUDA 13.2: needs driver 580 or newer (driver 570.124.06 runs CUDA 12.8 at most); "
        "CUDA 13.0: needs driver 580 or newer (driver 570.124.06 runs CUDA 12.8 at most); "
        "CUDA 12.6: has no code for compute capability 12.0 "
        "(built for sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90)"
    )


def test_kepler_3_7_gets_the_last_cu118_build_that_carries_sm_37() -> None:
    # builder release/2.1-2.5 build_cuda.sh: case 11.8 adds "3.7;9.0"; 2.6 has no cu118 list read.
    (torch,) = answer("torch", gpus=("Tesla K80",), driver="470.57.02", python="3.12").packages
    assert (torch.release, torch.build) == ("2.5", "cu118")


def test_kepler_3_5_has_no_build_and_each_release_says_why() -> None:
    (torch,) = answer("torch", gpus=("Tesla K40",), driver="470.57.02", python="3.12").packages
    assert torch.requirement is None
    by_release = {line.split(":", 1)[0]: line for line in torch.ruled_out}
    assert len(by_release) == len(torch.ruled_out) == 30  # 2.15 down to 1.0: one line each
    assert by_release["1.0"] == "1.0: has no wheel for Python 3.12 (wheels for Python 2.7 to 3.7)"
    sass_12 = "(built for sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90)"
    assert by_release["2.5"] == (
        f"2.5: CUDA 12.4: has no code for compute capability 3.5 {sass_12}; "
        f"CUDA 12.1: has no code for compute capability 3.5 {sass_12}; "
        "CUDA 11.8: has no code for compute capability 3.5 "
        "(built for sm_37 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90)"
    )


def test_python_3_10_where_the_newest_release_needs_3_11() -> None:
    # PyPI torch 2.15.0: Requires-Python >=3.11; 2.14.x has cp310 wheels.
    (torch,) = answer("torch", gpus=("RTX 4090",), driver="580.95.05", python="3.10").packages
    assert torch.release == "2.14"
    assert torch.cliff == (
        "torch 2.15 has no wheel for Python 3.10 (wheels for Python 3.11 to 3.15): "
        "2.14 with CUDA 13.2 is the last that runs here"
    )


def test_a_cpu_only_machine_gets_the_cpu_index() -> None:
    got = answer("torch", python="3.12")
    assert got.commands == [
        "pip install 'torch==2.15.*' --index-url https://download.pytorch.org/whl/cpu"
    ]


def test_installed_xformers_pin_is_named_and_torchvision_moves_with_torch() -> None:
    # torchvision 0.26 pairs with torch 2.11 (compat/extensions.toml, the wheel's own pin).
    installed = (
        InstalledDist("xformers", "0.0.28.post3", ("torch==2.5.1",)),
        InstalledDist("torchvision", "0.20.1", ("torch==2.5.1",)),
    )
    got = answer(
        "torch", gpus=("RTX 5090",), driver="570.124.06", python="3.12", installed=installed
    )
    assert [(m.name, m.requirement) for m in got.moves] == [("torchvision", "torchvision==0.26.*")]
    assert [(c.name, c.pin) for c in got.conflicts] == [("xformers", "torch==2.5.1")]
    assert got.commands == [
        "pip install 'torch==2.11.*' 'torchvision==0.26.*' "
        "--index-url https://download.pytorch.org/whl/cu128"
    ]
    assert not got.ok


def test_torch_2_5_1_on_an_rtx_5090_has_no_build_and_says_why() -> None:
    # builder release/2.5: cu118/cu121/cu124 lists end at 9.0; Blackwell came with cu128 in 2.7.
    got = answer("torch==2.5.1", gpus=("RTX 5090",), driver="580.95.05", python="3.12")
    (torch,) = got.packages
    assert torch.requirement is None and got.commands == [] and not got.ok
    assert torch.cliff == (
        "torch 2.5 ships CUDA 12.4, 12.1 and 11.8 builds, which have no code for compute "
        "capability 12.0: no release in the compat data that torch==2.5.1 admits runs here"
    )


def test_an_exact_pin_that_fits_is_kept_exactly() -> None:
    (torch,) = answer("torch==2.5.1", gpus=("A100",), driver="535.104.05", python="3.11").packages
    assert (torch.requirement, torch.build, torch.index_url) == ("torch==2.5.1", "cu124", None)


def test_a_range_is_honoured() -> None:
    got = answer("torch>=2.4,<2.6", gpus=("A100",), driver="535.104.05", python="3.11")
    assert got.packages[0].requirement == "torch==2.5.*"


def test_windows_uses_the_published_variants_only_and_says_the_arch_lists_are_linux() -> None:
    (torch,) = answer(
        "torch", gpus=("RTX 4090",), driver="591.86", python="3.12", os="windows"
    ).packages
    assert (torch.release, torch.index_url) == ("2.14", "https://download.pytorch.org/whl/cu132")
    assert torch.ruled_out == ["2.15: has no CUDA build the compat data lists for Windows"]
    assert any("Windows builds may carry other" in n for n in torch.notes)


@pytest.mark.parametrize(
    ("package", "requirement"),
    [("torchvision", "torchvision==0.29.*"), ("torchaudio", "torchaudio==2.11.*")],
)
def test_companions_come_from_torchs_build(package: str, requirement: str) -> None:
    got = answer("torch", package, gpus=("GTX 1080",), driver="580.95.05", python="3.12")
    assert got.packages[1].requirement == requirement
    assert got.packages[1].index_url == "https://download.pytorch.org/whl/cu126"


def test_tensorflow_on_maxwell_gets_the_last_line_whose_wheels_carry_it() -> None:
    """TensorFlow's CUDA 12 wheels carry their own list, narrower than CUDA 12.5's range: read from
    the wheels (compat/tensorflow.toml [[gpu_code]]), 2.16 is the last with Maxwell SASS (sm_50), so
    a GTX 980 (5.2) gets 2.16, no uncertainty; a GTX 1080 (6.1) the newest."""
    (tf,) = answer("tensorflow", gpus=("GTX 980",), driver="580.95.05", python="3.12").packages
    assert tf.requirement == "tensorflow[and-cuda]==2.16.*"
    assert not [n for n in tf.notes if n.startswith("not certain")]
    (tf,) = answer("tensorflow", gpus=("GTX 1080",), driver="580.95.05", python="3.12").packages
    assert tf.requirement == "tensorflow[and-cuda]==2.21.*"
    assert not [n for n in tf.notes if n.startswith("not certain")]
