"""The default pass on real wheels' own files for the layers above the frameworks: torchvision's
version.py and METADATA taken out of the real wheels (a local copy of PyPI's), installed beside
the real torch 2.13.0+cpu wheel's, probed by the real script, judged by the real check."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from support import builders
from support import framework_builders as fb
from support.evaluate import the
from support.static_probe import TORCH_CPU_WHEEL, TRIPWIRE, decode, make_venv, probe

from gpucheck.model.finding import Status

WHEELS = Path("/opt/pypi-more/files")


def torchvision_wheel(version: str) -> Path:
    return WHEELS / f"torchvision-{version}-cp311-cp311-manylinux_2_28_x86_64.whl"


def install_from_wheels(site: Path, torchvision: str) -> None:
    with zipfile.ZipFile(TORCH_CPU_WHEEL) as wheel:
        members = [
            n
            for n in wheel.namelist()
            if n == "torch/version.py" or n.startswith("torch-2.13.0+cpu.dist-info/")
        ]
        wheel.extractall(site, members)
    (site / "torch" / "__init__.py").write_text(TRIPWIRE)
    with zipfile.ZipFile(torchvision_wheel(torchvision)) as wheel:
        members = [
            n
            for n in wheel.namelist()
            if n == "torchvision/version.py"
            or n.startswith(f"torchvision-{torchvision}.dist-info/")
        ]
        wheel.extractall(site, members)
    (site / "torchvision" / "__init__.py").write_text(TRIPWIRE)


needs_wheels = pytest.mark.skipif(
    not (TORCH_CPU_WHEEL.is_file() and torchvision_wheel("0.29.1").is_file()),
    reason="the real torch / torchvision wheels are not on this machine",
)


@needs_wheels
@pytest.mark.parametrize(
    ("torchvision", "status", "pin"),
    [("0.28.0", Status.PASS, "torch==2.13.0"), ("0.29.1", Status.FAIL, "torch>=2.14.0")],
)
def test_real_torchvision_wheels_beside_the_real_torch_2_13(
    tmp_path: Path, torchvision: str, status: Status, pin: str
) -> None:
    venv = make_venv(tmp_path / "venv")
    install_from_wheels(venv.site, torchvision)

    facts = probe(venv.python, tmp_path)

    assert facts["errors"] == []
    tv = next(d for d in facts["distributions"] if d["name"] == "torchvision")
    assert pin in [r.replace(" ", "").replace("(", "").replace(")", "") for r in tv["requires"]]
    # version.py says '0.29.1+cu130' (its `cuda` is computed at import, not a literal).
    assert facts["extensions"] == [
        {
            "name": "torchvision",
            "version": f"{torchvision}+cu130",
            "cuda": "13.0",
            "torch": None,
            "cxx11_abi": None,
            "source": str(venv.site_real) + "/torchvision/version.py",
        }
    ]
    env = decode(facts)
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.extensions")
    assert f.status is status, f
    if status is Status.FAIL:
        assert f.fix is not None
        assert "pip install torch==2.13.0 'torchvision==0.28.*'" in f.fix.text
        assert "--index-url https://download.pytorch.org/whl/cpu" in f.fix.text
