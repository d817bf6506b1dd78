"""The report's check order is the layers' declarations (each layer package's DECLARED, in
Layer's order), not import order; a check registers only as its declaration says."""

from __future__ import annotations

import pytest

from gpucheck import checks
from gpucheck.checks.declarations import declare
from gpucheck.checks.registry import ORDER, check
from gpucheck.model.finding import Outcome
from gpucheck.model.layers import Layer


def test_every_check_is_in_the_order_once_and_the_order_names_only_checks() -> None:
    registered = [c.id for c in checks.all_checks()]
    assert len(ORDER) == len(set(ORDER))
    assert sorted(registered) == sorted(ORDER)
    assert registered == list(ORDER)


def test_the_order_keeps_each_section_together_in_section_order() -> None:
    sections = [c.section for c in checks.all_checks()]
    runs = [s for i, s in enumerate(sections) if i == 0 or sections[i - 1] != s]
    assert runs == [s for s in Layer if s in sections]  # one run per section, in order
    assert runs[:3] == [Layer.SYSTEM, Layer.DRIVER, Layer.GPUS]


def test_a_check_missing_from_the_declarations_cannot_register() -> None:
    def new_check(ctx: checks.Context) -> Outcome | None:
        return None

    with pytest.raises(ValueError, match=r"gpu\.new-thing is not declared in its layer"):
        check("gpu.new-thing", "a check nobody placed")(new_check)
    assert "gpu.new-thing" not in [c.id for c in checks.all_checks()]


def test_a_check_registers_only_from_the_module_its_declaration_names() -> None:
    # Lazy loading imports the declared module for an id: a check written elsewhere would
    # never be loaded by a doctor --only naming it.
    def ecc(ctx: checks.Context) -> Outcome | None:
        return None

    with pytest.raises(ValueError, match=r"declared in gpucheck\.checks\.gpus\.health"):
        check("gpus.ecc-errors", "ECC, registered from a test")(ecc)


def test_the_order_and_layers_come_from_the_layer_packages_declarations() -> None:
    registered = checks.all_checks()
    gpus = [c for c in registered if c.section is Layer.GPUS]
    assert [c.id for c in gpus] == [
        "gpus.lost",
        "gpus.ecc-errors",
        "gpus.memory-remapping",
        "gpus.throttling",
        "gpus.pcie-link",
        "gpus.xid-events",
        "gpus.nvlink",
        "gpus.p2p",
        "gpus.compute-mode",
        "gpus.mig",
        "gpus.memory-in-use",
    ]
    modules = {c.id: c.func.__module__ for c in registered}
    assert modules["gpus.p2p"] == "gpucheck.checks.gpus.interconnect"
    assert modules["driver.fabric-manager"] == "gpucheck.checks.driver.fabric_manager"
    assert modules["frameworks.torch.cpu-build"] == "gpucheck.checks.frameworks.torch"
    assert {c.section for c in registered if c.id.startswith("requirements.")} == {
        Layer.REQUIREMENTS
    }


def test_a_declaration_names_its_layer_once_and_its_modules_once_a_run() -> None:
    declared = declare(
        "gpucheck.checks.cuda",
        checks=(("loading", "driver-api"), ("toolkit", "toolkit", "nvcc"), ("loading", "x")),
        reads=("cuda",),
    )
    assert declared.layer is Layer.CUDA
    assert declared.checks == (
        ("cuda.driver-api", "loading"),
        ("cuda.toolkit", "toolkit"),
        ("cuda.nvcc", "toolkit"),
        ("cuda.x", "loading"),
    )
    assert declared.module("toolkit") == "gpucheck.checks.cuda.toolkit"
    assert (declared.prerequisites, declared.module_needs) == ((), {})
    with pytest.raises(ValueError, match="'widgets' is not a valid Layer"):
        declare("gpucheck.checks.widgets", checks=(), reads=())
