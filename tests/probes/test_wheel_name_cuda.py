"""The CUDA an extension's wheel name carries (probes/scripts/torch_static.py): flash-attn's
wheels name the CUDA major alone from 2.7.x (setup.py at v2.7.4.post1: cuda_version =
f"{torch_cuda_version.major}"), earlier ones major and minor."""

from __future__ import annotations

from typing import Any

from gpucheck.probes.scripts import torch_static

RELEASES = "https://github.com/Dao-AILab/flash-attention/releases/download"


def read(url: str) -> dict[str, Any]:
    record: dict[str, Any] = {}
    torch_static.from_wheel_name(record, url, "direct_url.json")
    return record


def test_a_wheel_named_for_the_cuda_major_alone_keeps_the_major() -> None:
    wheel = "flash_attn-2.7.4.post1+cu12torch2.6cxx11abiFALSE-cp311-cp311-linux_x86_64.whl"
    record = read(f"{RELEASES}/v2.7.4.post1/{wheel}")
    assert record == {
        "cuda": "12",
        "torch": "2.6",
        "cxx11_abi": False,
        "source": "direct_url.json",
    }


def test_a_wheel_named_for_major_and_minor_keeps_both() -> None:
    wheel = "flash_attn-2.6.3+cu123torch2.4cxx11abiFALSE-cp311-cp311-linux_x86_64.whl"
    assert read(f"{RELEASES}/v2.6.3/{wheel}")["cuda"] == "12.3"
    wheel = "flash_attn-2.3.6+cu118torch2.1cxx11abiFALSE-cp310-cp310-linux_x86_64.whl"
    assert read(f"{RELEASES}/v2.3.6/{wheel}")["cuda"] == "11.8"
