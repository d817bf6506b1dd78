"""compat/driver_branches.toml: the legacy branches as NVIDIA's pages state them, and the
questions the driver checks ask of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucheck.compat import CompatError, load
from gpucheck.compat.driver_branches import DriverBranchData, branch_of


def test_maxwell_pascal_and_volta_are_last_driven_by_580() -> None:
    # NVIDIA's deprecation schedule: "The Release 580 series will be the last to support GPUs
    # based on the Maxwell, Pascal, and Volta architectures".
    data = load().driver_branches
    for arch in ("Maxwell", "Pascal", "Volta"):
        row = data.for_architecture(arch)
        assert row is not None and (row.last_branch, row.first_without) == (580, 590), arch
    assert data.for_architecture("Turing") is None
    assert data.for_architecture("Blackwell") is None
    assert data.for_architecture(None) is None


def test_kepler_and_fermi_rows_hold_the_published_branches() -> None:
    data = load().driver_branches
    kepler = data.for_architecture("Kepler")
    assert kepler is not None
    assert (kepler.name, kepler.first_without, kepler.latest_release) == (
        "470.xx",
        495,
        "470.239.06",
    )
    fermi = data.by_name("390.xx")
    assert fermi is not None and (fermi.first_without, fermi.latest_release) == (396, "390.157")


def test_the_nvrm_line_name_finds_its_row() -> None:
    data = load().driver_branches
    row = data.by_name("580")
    assert row is not None and row.name == "580.xx"
    assert data.by_name("340.xx") is not None
    assert data.by_name("555") is None  # not a legacy branch


def test_every_architecture_named_is_one_cuda_toml_knows() -> None:
    compat = load()
    known = {a.name for a in compat.architectures}
    for row in compat.driver_branches.legacy:
        assert set(row.architectures) <= known, row.name
    assert compat.driver_branches.open_module is not None
    assert compat.driver_branches.open_module.first_architecture in known
    assert compat.driver_branches.open_module.required_from in known


def test_flavour_packages_fill_in_the_branch() -> None:
    data = load().driver_branches
    ubuntu = data.flavour_packages("ubuntu")
    assert ubuntu is not None
    assert ubuntu.package("open", "580") == "nvidia-driver-580-open"
    assert ubuntu.package("proprietary", "580") == "nvidia-driver-580"
    arch = data.flavour_packages("arch")
    assert arch is not None and arch.package("open", "590") == "nvidia-open-dkms"
    assert data.flavour_packages("gentoo") is None


def test_branch_of_reads_the_major() -> None:
    assert branch_of("595.71.05") == 595
    assert branch_of("470") == 470
    assert branch_of("") is None
    assert branch_of(None) is None
    assert branch_of("unknown") is None


def test_a_row_without_a_source_or_with_a_bad_branch_is_refused(tmp_path: Path) -> None:
    row = {"name": "1.xx", "gpus": "x", "architectures": [], "last_branch": 1}
    row |= {"latest_release": "1.0"}
    with pytest.raises(CompatError, match="every row needs a source"):
        DriverBranchData.from_data(tmp_path / "driver_branches.toml", {"legacy": [row]})
    bad = row | {"source": "s", "first_without": "590"}
    with pytest.raises(CompatError, match="first_without must be an integer"):
        DriverBranchData.from_data(tmp_path / "driver_branches.toml", {"legacy": [bad]})
