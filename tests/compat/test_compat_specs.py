"""Spec figures per GPU model in compat/gpus.toml (`[[gpu.spec]]`): literal values, sources, and
the NVML product names that must resolve to a spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucheck.compat import CompatError, load
from gpucheck.compat.gpus import GpuIndex, GpuSpec

COMPAT = load()
GPUS = COMPAT.gpus


def _spec(name: str) -> GpuSpec:
    spec = GPUS.spec(name)
    assert spec is not None, name
    return spec


def test_h100_sxm_figures() -> None:
    spec = _spec("NVIDIA H100 80GB HBM3")
    assert spec.variant == "SXM5"
    assert spec.memory_bandwidth_gbs == 3350
    assert spec.fp32_tflops == 67
    assert spec.bf16_tflops == 989.5  # 1,979 with sparsity, halved
    assert spec.fp8_tflops == 1979
    assert spec.tflops("tf32") == 494.5
    assert spec.pcie == "5x16" and spec.pcie_generation == 5 and spec.pcie_width == 16


def test_h100_pcie_is_its_own_variant() -> None:
    spec = _spec("NVIDIA H100 PCIe")
    assert spec.variant == "PCIe"
    assert spec.memory_bandwidth_gbs == 2000
    assert spec.fp16_tflops == 756.5


def test_a100_variants_differ_in_bandwidth() -> None:
    assert _spec("NVIDIA A100-SXM4-80GB").memory_bandwidth_gbs == 2039
    assert _spec("NVIDIA A100-SXM4-40GB").memory_bandwidth_gbs == 1555
    assert _spec("NVIDIA A100-PCIE-40GB").memory_bandwidth_gbs == 1555
    assert _spec("NVIDIA A100 80GB PCIe").memory_bandwidth_gbs == 1935
    assert _spec("NVIDIA A100-SXM4-80GB").tf32_tflops == 156
    assert _spec("NVIDIA A100-SXM4-80GB").bf16_tflops == 312


def test_geforce_4090_and_datacenter_ada() -> None:
    spec = _spec("NVIDIA GeForce RTX 4090")
    assert spec.fp16_tflops == 165.2 and spec.fp16_accumulate == "fp32"
    assert spec.memory_bandwidth_gbs == 1008
    assert spec.pcie == "4x16"  # Puget Systems' part page
    l40s = _spec("NVIDIA L40S")
    assert (l40s.fp32_tflops, l40s.fp8_tflops, l40s.memory_bandwidth_gbs) == (91.6, 733, 864)


def test_unsourced_figures_stay_absent() -> None:
    assert GPUS.spec("NVIDIA H100 NVL") is None  # no NVL variant sourced
    assert GPUS.spec("Tesla V100-PCIE-16GB") is None
    h200 = _spec("NVIDIA H200")
    assert h200.fp32_tflops == 67 and h200.memory_bandwidth_gbs == 4800  # (the H100 SXM5's)
    assert GPUS.spec("NVIDIA GeForce GTX 1660 Ti") is None  # no row at all


@pytest.mark.parametrize(
    "nvml_name",
    [
        "NVIDIA H100 80GB HBM3",
        "NVIDIA H100 PCIe",
        "NVIDIA A100-SXM4-80GB",
        "NVIDIA A100-PCIE-40GB",
        "NVIDIA GeForce RTX 4090",
        "NVIDIA GeForce RTX 3090",
        "NVIDIA GeForce RTX 5090",
        "NVIDIA H200",
        "NVIDIA L40S",
        "NVIDIA B200",
        "Tesla T4",
        "Tesla V100-SXM2-16GB",
        "NVIDIA A10G",
    ],
)
def test_nvml_names_resolve_to_a_spec(nvml_name: str) -> None:
    model = GPUS.lookup(nvml_name)
    assert model is not None and model.specs, nvml_name
    assert model.spec_for(nvml_name) is _spec(nvml_name)


def test_every_spec_has_a_source_and_positive_figures() -> None:
    specs = [s for m in GPUS.models for s in m.specs]
    assert len(specs) >= 20
    for spec in specs:
        assert spec.source.strip().startswith("http"), spec
        for dtype in ("fp32", "tf32", "fp16", "bf16", "fp8"):
            value = spec.tflops(dtype)
            assert value is None or value > 0, spec
        assert spec.memory_bandwidth_gbs is None or spec.memory_bandwidth_gbs > 0


def test_multi_variant_rows_match_at_most_one_variant_per_name() -> None:
    for model in GPUS.models:
        if len(model.specs) > 1:
            assert all(s.match and s.variant for s in model.specs), model.name


def _index(spec: dict[str, object]) -> GpuIndex:
    row = {
        "name": "NVIDIA Test",
        "compute_capability": "9.0",
        "architecture": "Hopper",
        "segment": "datacenter",
        "source": "https://example.invalid/row",
        "spec": [spec],
    }
    return GpuIndex.from_data(Path("gpus.toml"), {"gpu": [row]})


def test_validation_rejects_bad_specs() -> None:
    with pytest.raises(CompatError, match="source"):
        _index({"fp32_tflops": 1.0})
    with pytest.raises(CompatError, match="positive"):
        _index({"fp32_tflops": -1, "source": "https://x"})
    with pytest.raises(CompatError, match="positive"):
        _index({"fp32_tflops": "67", "source": "https://x"})
    with pytest.raises(CompatError, match="GENxWIDTH"):
        _index({"pcie": "gen5", "source": "https://x"})
    with pytest.raises(CompatError, match="unknown key"):
        _index({"fp32_tflop": 1.0, "source": "https://x"})
    with pytest.raises(CompatError, match="at least one figure"):
        _index({"source": "https://x"})
    ok = _index({"fp32_tflops": 1, "pcie": "4x16", "source": "https://x"})
    assert ok.spec("NVIDIA Test") == GpuSpec(
        source="https://x", fp32_tflops=1.0, pcie_generation=4, pcie_width=16
    )
