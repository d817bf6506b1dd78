"""What the static framework-pass tests share: installed trees laid out the way pip installs real
wheels inside a real virtual environment, and the probe (probes/scripts/framework_static.py)
run with that environment's own Python, as gpucheck runs it. Every package __init__.py is a
tripwire: the static pass must import no framework."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gpucheck.probes
from gpucheck.model.decoding import from_dict
from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.frameworks import static_probe_options
from support.wheel_files import (
    TENSORFLOW_2_15_0_METADATA,
)
from support.wheel_files_torch import (
    TORCH_1_13_1_METADATA,
    TORCH_2_5_1_METADATA,
    TORCH_2_5_1_VERSION_PY,
)

SCRIPT = Path(gpucheck.probes.__file__).resolve().parent / "scripts/framework_static.py"
OPTIONS = json.dumps(static_probe_options())  # gpucheck's framework table, as the probe gets it
STEPS = ["@ interpreter", "@ distributions", "@ torch", "@ tensorflow", "@ extensions"]
TORCH_CPU_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")

TRIPWIRE_ENV = "GPUCHECK_TEST_TRIPWIRE"
TRIPWIRE = (
    "import os\n"
    f"with open(os.environ[{TRIPWIRE_ENV!r}], 'a') as tripwire:\n"
    "    tripwire.write(__name__ + '\\n')\n"
    "raise SystemExit('the static framework pass imported ' + __name__)\n"
)

# --- building installed trees ---------------------------------------------------------------


@dataclass
class Venv:
    root: Path
    python: Path
    site: Path  # its site-packages

    @property
    def site_real(self) -> str:
        return os.path.realpath(self.site)


def make_venv(where: Path, base: str = sys.executable) -> Venv:
    """A real virtual environment (no pip: nothing in it but what a test installs)."""
    subprocess.run(
        [base, "-m", "venv", "--without-pip", str(where)], check=True, capture_output=True
    )
    python = where / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return Venv(where, python, Path(site))


def header(metadata: str, key: str) -> str:
    return next(
        line.split(": ", 1)[1] for line in metadata.splitlines() if line.startswith(key + ": ")
    )


def requires_of(metadata: str) -> list[str]:
    """The Requires-Dist values, verbatim, in file order."""
    return [
        line.split(": ", 1)[1]
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist: ")
    ]


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


WHEEL_CP311 = "Wheel-Version: 1.0\nGenerator: bdist_wheel (0.34.2)\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n\n"
WHEEL_PURE = "Wheel-Version: 1.0\nGenerator: setuptools (75.1.0)\nRoot-Is-Purelib: true\nTag: py3-none-any\n\n"


def install(
    site: Path,
    metadata: str,
    files: Mapping[str, str | bytes] | None = None,
    *,
    top_level: str | None = None,
    wheel: str = WHEEL_CP311,
    folder: str | None = None,
) -> Path:
    """Install one wheel as pip does: its files, then NAME-VERSION.dist-info, RECORD last."""
    name, version = header(metadata, "Name"), header(metadata, "Version")
    info = folder or f"{re.sub(r'[-_.]+', '_', name)}-{version}.dist-info"
    contents: dict[str, str | bytes] = dict(files or {})
    contents[f"{info}/METADATA"] = metadata + f"\n{name} {version}: the long description.\n"
    contents[f"{info}/WHEEL"] = wheel
    contents[f"{info}/INSTALLER"] = "pip\n"
    if top_level is not None:
        contents[f"{info}/top_level.txt"] = top_level
    lines = []
    for rel, text in contents.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text if isinstance(text, bytes) else text.encode()  # a library's bytes as they are
        path.write_bytes(data)
        lines.append(record_line(rel, data))
    lines.append(f"{info}/RECORD,,")
    (site / info / "RECORD").write_text("\n".join(lines) + "\n")
    return site / info


def simple_metadata(name: str, version: str, *requires: str, summary: str = "A package.") -> str:
    """Metadata as a setuptools-built wheel writes it (for packages only named in these tests)."""
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {version}",
        f"Summary: {summary}",
        "Requires-Python: >=3",
        *(f"Requires-Dist: {r}" for r in requires),
    ]
    return "\n".join(lines) + "\n"


def torch_files(version_py: str) -> dict[str, str]:
    return {
        "torch/__init__.py": TRIPWIRE,
        "torch/version.py": version_py,
        "torch/cuda/__init__.py": TRIPWIRE,
        "functorch/__init__.py": TRIPWIRE,
        "torchgen/__init__.py": TRIPWIRE,
    }


def tensorflow_files(build_info: str) -> dict[str, str]:
    return {
        "tensorflow/__init__.py": TRIPWIRE,
        "tensorflow/python/__init__.py": TRIPWIRE,
        "tensorflow/python/platform/__init__.py": TRIPWIRE,
        "tensorflow/python/platform/build_info.py": build_info,
    }


def install_torch(site: Path, metadata: str, version_py: str, **kwargs: Any) -> Path:
    return install(
        site, metadata, torch_files(version_py), top_level="functorch\ntorch\ntorchgen\n", **kwargs
    )


def install_tensorflow(site: Path, metadata: str, build_info: str) -> Path:
    return install(site, metadata, tensorflow_files(build_info), top_level="tensorflow\n")


def install_nvidia(site: Path, name: str, version: str, *requires: str) -> Path:
    """An NVIDIA CUDA wheel: a folder of libraries in the `nvidia` namespace."""
    component = re.sub(r"-cu\d+$", "", name[len("nvidia-") :]).replace("-", "_")
    files = {
        "nvidia/__init__.py": "",
        f"nvidia/{component}/__init__.py": "",
        f"nvidia/{component}/lib/lib{component}.so": "not a real library\n",
    }
    meta = simple_metadata(name, version, *requires, summary="CUDA libraries")
    meta = meta.replace(
        "Requires-Python",
        "Home-page: https://developer.nvidia.com/cuda-zone\nAuthor: Nvidia CUDA Installer Team\nLicense: NVIDIA Proprietary Software\nRequires-Python",
    )
    return install(
        site,
        meta,
        files,
        top_level="nvidia\n",
        wheel=WHEEL_PURE.replace("py3-none-any", "py3-none-manylinux2014_x86_64"),
    )


def install_plain(site: Path, name: str, version: str, *requires: str) -> Path:
    """A package that does not matter here (numpy, filelock, ...)."""
    module = re.sub(r"[-.]", "_", name.lower())
    return install(
        site,
        simple_metadata(name, version, *requires),
        {f"{module}/__init__.py": ""},
        top_level=module + "\n",
        wheel=WHEEL_PURE,
    )


def pinned(metadata: str, prefix: str) -> list[tuple[str, str]]:
    """(name, version) of every `NAME (==VERSION)` requirement starting with prefix."""
    return re.findall(rf"^Requires-Dist: ({prefix}[a-z0-9-]*) \(==([^)]+)\)", metadata, re.M)


TORCH_2_5_1_CUDA_WHEELS = pinned(TORCH_2_5_1_METADATA, "nvidia-")
TORCH_1_13_1_CUDA_WHEELS = pinned(TORCH_1_13_1_METADATA, "nvidia-")
TENSORFLOW_2_15_0_CUDA_WHEELS = pinned(TENSORFLOW_2_15_0_METADATA, "nvidia-")


def install_torch_2_5_1_stack(site: Path) -> None:
    """`pip install torch==2.5.1` on Linux x86_64: torch, its CUDA wheels, triton, the rest."""
    install_torch(site, TORCH_2_5_1_METADATA, TORCH_2_5_1_VERSION_PY)
    for name, version in TORCH_2_5_1_CUDA_WHEELS:
        # cuDNN, cuSOLVER and cuSPARSE wheels require other CUDA wheels themselves.
        requires = {
            "nvidia-cudnn-cu12": ["nvidia-cublas-cu12"],
            "nvidia-cusolver-cu12": [
                "nvidia-cublas-cu12",
                "nvidia-nvjitlink-cu12",
                "nvidia-cusparse-cu12",
            ],
            "nvidia-cusparse-cu12": ["nvidia-nvjitlink-cu12"],
        }.get(name, [])
        install_nvidia(site, name, version, *requires)
    install(
        site,
        simple_metadata(
            "triton",
            "3.1.0",
            "filelock",
            summary="A language and compiler for custom Deep Learning operations",
        ),
        {"triton/__init__.py": TRIPWIRE},
        top_level="triton\n",
    )
    for name, version in [
        ("filelock", "3.16.1"),
        ("typing_extensions", "4.12.2"),
        ("sympy", "1.13.1"),
        ("networkx", "3.4.2"),
        ("Jinja2", "3.1.4"),
        ("fsspec", "2024.10.0"),
    ]:
        install_plain(site, name, version)


# --- running the probe ----------------------------------------------------------------------


def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env[TRIPWIRE_ENV] = str(tmp_path / "imported.txt")
    return env


def probe(python: Path | str, tmp_path: Path, **extra_env: str) -> dict[str, Any]:
    """Run the script as gpucheck does; check the protocol; return the facts."""
    env = clean_env(tmp_path)
    env.update(extra_env)
    proc = subprocess.run(
        [str(python), str(SCRIPT), OPTIONS],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == STEPS, proc.stderr  # step lines only
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout  # exactly one JSON line
    record = json.loads(lines[0])
    assert set(record) == {"kind", "facts"}
    assert record["kind"] == "environment"
    facts: dict[str, Any] = record["facts"]
    assert set(facts) == {
        "version",
        "prefix",
        "platform",
        "site_packages",
        "distributions",
        "torch",
        "tensorflow",
        "extensions",
        "errors",
    }
    imported = tmp_path / "imported.txt"
    assert not imported.exists(), f"imported: {imported.read_text()}"
    return facts


def decode(facts: dict[str, Any]) -> PythonEnvironment:
    """The facts read back as gpucheck's own dataclass, as the parent process will."""
    fields = {k: v for k, v in facts.items() if k != "errors"}
    return from_dict(PythonEnvironment, {"python": "x", "origin": "gpucheck", **fields})


def dist(
    name: str, version: str, location: str, requires: list[str] | None = None
) -> dict[str, Any]:
    return {"name": name, "version": version, "location": location, "requires": requires or []}


def by_name(dists: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Within one site folder the order is the file system's: compare sorted."""
    return sorted(dists, key=lambda d: (d["name"], d["version"]))


def check_interpreter(facts: dict[str, Any], venv: Venv, version: str | None = None) -> None:
    assert facts["version"] == (version or platform.python_version())
    assert os.path.realpath(facts["prefix"]) == os.path.realpath(venv.root)
    assert facts["platform"] == sys.platform
    assert facts["site_packages"] == [venv.site_real]
