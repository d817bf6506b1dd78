"""WSL2 with libcuda.so.1 but no unversioned libcuda.so in the loader cache, and cuDNN 8,
which opens libcuda.so by that name: a failure, not a warning.
facebookresearch/nougat#115: WSL2, torch 2.0 (nvidia-cudnn-cu11 8.5.0.96): "Could not load
library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: No such
file or directory / Aborted"; fixed by making libcuda.so reachable (nougat#105)."""

from __future__ import annotations

from support import builders
from support import framework_builders as fb
from support.evaluate import the

from gpucheck.model.finding import Status
from gpucheck.model.snapshot import Snapshot

# torch 2.0.1's Linux pins for its cuDNN and cuBLAS (its wheel METADATA's Requires-Dist).
TORCH_201_PINS = ("nvidia-cudnn-cu11==8.5.0.96", "nvidia-cublas-cu11==11.10.3.66")
CACHE = {"libcuda.so.1": ["/usr/lib/wsl/lib/libcuda.so.1"], "libcuda.so": []}


def _wsl_torch(pins: tuple[str, ...]) -> Snapshot:
    snap = builders.workstation()
    snap.system.wsl = True
    snap.cuda.driver.library_path = "/usr/lib/wsl/lib/libcuda.so.1"
    snap.cuda.libcuda_cache = dict(CACHE)
    env = fb.with_torch(fb.environment(), "2.0.1+cu117", "11.7", pins=pins)
    return fb.on(snap, env)


def test_cudnn_8_without_an_unversioned_libcuda_fails_with_the_wsl_path() -> None:
    f = the(_wsl_torch(TORCH_201_PINS), "cuda.driver-api")
    assert f.status is Status.FAIL
    assert "cuDNN 8 opens it by that name" in f.title
    assert f"cuDNN 8: nvidia-cudnn-cu11 8.5.0.96 in {fb.VENV}/bin/python" in f.evidence
    assert f.fix and f.fix.commands == ["export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH"]
    assert f.subjects.environments == [f"{fb.VENV}/bin/python"]


def test_cudnn_9_keeps_the_warning() -> None:
    f = the(_wsl_torch(fb.TORCH_251_CU124_PINS), "cuda.driver-api")
    assert f.status is Status.WARN
