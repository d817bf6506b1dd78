"""The compat data reaches back (TensorFlow 1.0, PyTorch 1.0, CUDA 7.0) and stays current.

Literal values, each as its cited source prints it, asked through the real CLI
(`gpucheck compat SUBJECT VERSION --json`) or gpucheck.compat.answers; and the data's age
against the documented limit of scripts/compat_freshness.py, checked offline.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import sys
from types import ModuleType
from typing import Any

import pytest
from conftest import REPO, run_gpucheck
from packaging.version import Version

from gpucheck.compat import TOPICS, load
from gpucheck.compat import answers as ask

COMPAT = load()


def compat_json(*args: str) -> dict[str, Any]:
    result = run_gpucheck("compat", *args, "--json")
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def freshness() -> ModuleType:
    path = REPO / "scripts" / "compat_freshness.py"
    spec = importlib.util.spec_from_file_location("compat_freshness", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


# -- CUDA 7.0 - 8.0: Table 3 of the CUDA 13.2 Update 2 release notes -------------------------


@pytest.mark.parametrize(
    ("cuda", "release", "linux", "windows"),
    [
        ("7.0", "CUDA 7.0 (7.0.28)", "346.46", "347.62"),
        ("7.5", "CUDA 7.5 (7.5.16)", "352.31", "353.66"),
        ("8.0", "CUDA 8.0 (8.0.44)", "367.48", "369.30"),
        ("8.0.1", "CUDA 8.0 (8.0.61 GA2)", "375.26", "376.51"),
    ],
)
def test_oldest_cuda_releases_have_their_minimum_drivers(
    cuda: str, release: str, linux: str, windows: str
) -> None:
    data = compat_json("cuda", cuda)
    assert data["release"] == release
    assert data["min_driver_linux"] == linux
    assert data["min_driver_windows"] == windows
    assert data["minor_compat_min_driver_linux"] is None  # minor-version compatibility: 11.x on
    assert "13.2.2/cuda-toolkit-release-notes" in data["sources"][0]


def test_a_cuda_7_driver_runs_cuda_7_and_no_framework_in_the_data() -> None:
    data = compat_json("driver", "346.46")
    assert data["max_cuda"] == "7.0"
    assert data["newest_tensorflow"] is None  # TF 1.0 was built with CUDA 8
    assert data["newest_torch"] is None  # torch 1.0's oldest build is CUDA 8.0


def test_a_cuda_8_ga2_driver_gets_tensorflow_gpu_1_4() -> None:
    data = compat_json("driver", "375.26")
    assert data["max_cuda"] == "8.0"
    assert data["newest_tensorflow"] == {
        "version": "1.4",
        "cuda": "8",
        "cudnn": "6",
        "install": "pip install 'tensorflow-gpu==1.4.*'",
    }
    assert data["newest_torch"]["version"] == "1.0"
    assert data["newest_torch"]["cuda"] == "8.0"


def test_a_cuda_9_2_driver_gets_torch_1_7_for_cu92() -> None:
    data = compat_json("driver", "396.26")
    assert data["max_cuda"] == "9.2"
    assert data["newest_torch"]["version"] == "1.7"
    assert data["newest_torch"]["cuda"] == "9.2"
    assert data["newest_tensorflow"]["version"] == "1.12"


# -- TensorFlow 1.0 - 1.11: tensorflow.org tested build configurations -----------------------


@pytest.mark.parametrize(
    ("version", "cuda", "cudnn"),
    [
        ("1.0.0", "8", "5.1"),
        ("1.1.0", "8", "5.1"),
        ("1.2.0", "8", "5.1"),
        ("1.3.0", "8", "6"),
        ("1.4.0", "8", "6"),
        ("1.5.0", "9", "7"),
        ("1.8.0", "9", "7"),
        ("1.11.0", "9", "7"),
    ],
)
def test_tensorflow_1x_tested_cuda_and_cudnn(version: str, cuda: str, cudnn: str) -> None:
    data = compat_json("tensorflow", version)
    assert (data["cuda"], data["cudnn"]) == (cuda, cudnn)
    assert (data["python_min"], data["python_max"]) == ("2.7", "3.6")
    assert data["windows_native_gpu"] is True
    assert data["and_cuda_requires"] is None
    line = version.rsplit(".", 1)[0]
    assert data["install"] == f"pip install 'tensorflow-gpu=={line}.*'"
    assert "site/en/install/source.md" in data["sources"][0]


def test_tensorflow_1_0_native_windows_row() -> None:
    rows = {str(r.version): r for r in COMPAT.tensorflow.windows_gpu}
    assert [str(v) for v in sorted(Version(k) for k in rows)][:3] == ["1.0", "1.1", "1.2"]
    win = rows["1.0"]
    assert (win.cuda, win.cudnn) == ("8", "5.1")
    assert (str(win.python_min), str(win.python_max)) == ("3.5", "3.5")
    assert "source_windows.md" in win.source
    assert (str(rows["1.2"].python_min), str(rows["1.2"].python_max)) == ("3.5", "3.6")


def test_tensorflow_2_installs_the_tensorflow_package() -> None:
    assert ask.tensorflow(COMPAT, "2.10").data["install"] == "pip install 'tensorflow==2.10.*'"
    assert (
        ask.tensorflow(COMPAT, "2.21").data["install"]
        == "pip install 'tensorflow[and-cuda]==2.21.*'"
    )


# -- PyTorch 1.0 - 1.7: previous-versions page and the PyPI wheels ----------------------------


@pytest.mark.parametrize(
    ("version", "variants", "default", "python"),
    [
        ("1.0.0", ["8.0", "9.0", "10.0"], "9.0", ("2.7", "3.7")),
        ("1.0.1", ["8.0", "9.0", "10.0"], "9.0", ("2.7", "3.7")),
        ("1.1.0", ["9.0", "10.0"], "9.0", ("2.7", "3.7")),
        ("1.2.0", ["9.2", "10.0"], "10.0", ("2.7", "3.7")),
        ("1.4.0", ["9.2", "10.1"], "10.1", ("2.7", "3.8")),
        ("1.5.1", ["9.2", "10.1", "10.2"], "10.2", ("3.5", "3.8")),
        ("1.6.0", ["9.2", "10.1", "10.2"], "10.2", ("3.6", "3.8")),
        ("1.7.1", ["9.2", "10.1", "10.2", "11.0"], "10.2", ("3.6", "3.9")),
    ],
)
def test_torch_1x_cuda_variants(
    version: str, variants: list[str], default: str, python: tuple[str, str]
) -> None:
    data = compat_json("torch", version)
    assert data["known"] is True
    assert data["cuda_variants"] == variants
    assert data["default_pypi_cuda"] == default
    assert (data["python_min"], data["python_max"]) == python
    assert data["rocm_variants"] == []
    assert any("previous-versions.md" in s for s in data["sources"])


def test_torch_1_3_knows_its_pypi_cuda_but_not_its_variants() -> None:
    data = compat_json("torch", "1.3.1")
    assert data["default_pypi_cuda"] == "10.1"
    assert data["cuda_variants"] is None  # no source names them: unknown, not guessed
    assert (data["python_min"], data["python_max"]) == ("2.7", "3.7")


def test_torch_1_0_tagged_wheel_names_its_cuda() -> None:
    data = compat_json("torch", "1.0.0+cu80")
    assert data["cuda"] == "8.0"
    assert data["cuda_variants"] == ["8.0", "9.0", "10.0"]


def test_oldest_rows_are_the_oldest() -> None:
    assert str(COMPAT.toolkits[0].version) == "7.0.0"
    assert str(COMPAT.torch.releases[0].version) == "1.0"
    assert str(COMPAT.tensorflow.releases[0].version) == "1.0"


# -- staying current -----------------------------------------------------------------------


@pytest.mark.parametrize("name", TOPICS)
def test_compat_data_is_not_older_than_the_documented_age(name: str) -> None:
    module = freshness()
    ages = module.data_ages(COMPAT, dt.date.today())
    date, age = ages[name]
    assert age is not None, f"{name}: data_as_of {date!r} is not a date"
    assert age <= module.MAX_DATA_AGE_DAYS, (
        f"compat/{name} is {age} days old (data_as_of {date}); the limit is "
        f"{module.MAX_DATA_AGE_DAYS} days. Run `python scripts/compat_freshness.py`, add the "
        "missing releases with their sources, and update data_as_of."
    )


def test_freshness_reports_what_the_data_lacks() -> None:
    module = freshness()
    newest = {
        "torch": "2.99.0",
        "tensorflow": "2.21.0",
        "jaxlib": "0.12.0.1",
        "nvidia-cudnn-cu12": "9.1.0.70",
        "nvidia-cudnn-cu13": "9.99.0.1",
        "nvidia-cuda-runtime-cu12": "12.9.79",
        "nvidia-cuda-runtime": "13.99.1",
    }
    assert module.lacking(COMPAT, newest) == [
        "torch 2.99.0: no row for the 2.99 line in torch.toml",
        "cuDNN 9.99.0.1 (nvidia-cudnn-cu13): no row covers it in cudnn.toml",
        "CUDA 13.99 (nvidia-cuda-runtime 13.99.1): no toolkit row in cuda.toml",
    ]
    assert module.lacking(COMPAT, {"torch": "2.15.0"}) == [
        "torch 2.15.0: the 2.15 row has no cuda_variants in torch.toml"
    ]
    assert module.lacking(COMPAT, {"tensorflow": "2.22.0", "jaxlib": "0.13.0"}) == [
        "tensorflow 2.22.0: no row for the 2.22 line in tensorflow.toml",
        "jaxlib 0.13.0: no row covers it in jax.toml",
    ]


def test_freshness_picks_final_releases_and_exits_by_what_it_found(
    capsys: pytest.CaptureFixture[str],
) -> None:
    module = freshness()
    assert module.newest_final(["2.21.0", "2.22.0rc0", "2.23.0.dev20261026", "bad"]) == "2.21.0"
    known = {"torch": ["2.14.1"], "tensorflow": ["2.21.0", "2.22.0rc0"], "jaxlib": ["0.12.0"]}

    def fetch(package: str, index_url: str) -> list[str]:
        return known.get(package, [])

    assert module.main(["--json"], fetch=fetch) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["lacking"] == []
    assert report["newest"] == {"torch": "2.14.1", "tensorflow": "2.21.0", "jaxlib": "0.12.0"}

    def offline(package: str, index_url: str) -> list[str]:
        raise OSError("no network")

    assert module.main([], fetch=offline) == 2
    assert "could not be read" in capsys.readouterr().out
    known["torch"] = ["3.0.0"]
    assert module.main([], fetch=fetch) == 1
    assert "torch 3.0.0: no row for the 3.0 line" in capsys.readouterr().out


def test_freshness_lists_torch_and_extension_releases_newer_than_the_data(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The data's newest torch line is 2.15; torchvision 0.29 is paired with torch 2.14
    # (compat/extensions.toml); 0.31.0 has no row.
    module = freshness()
    assert module.newer_than_data(COMPAT, "torch", ["2.15.0", "2.16.0", "2.16.1", "2.17.0rc1"]) == [
        "2.16.0",
        "2.16.1",
    ]
    assert module.newer_than_data(COMPAT, "torchvision", ["0.29.0", "0.31.0"]) == ["0.31.0"]
    known = {"torch": ["2.15.0", "2.16.0"], "torchvision": ["0.31.0"]}
    assert module.main(["--json"], fetch=lambda p, _: known.get(p, [])) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["newer"] == {"torch": ["2.16.0"], "torchvision": ["0.31.0"]}
    assert "torchvision 0.31.0: no pairing row names it in extensions.toml" in report["lacking"]
