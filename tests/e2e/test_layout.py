"""The tests mirror the packages: a test of src/gpucheck/<package>/ lives in tests/<package>/
(tests/checks/<layer>/ for a check layer), a suite that crosses packages in tests/e2e/, and a
test of a top-level module (api.py, inputs.py, outputs.py) in tests/ itself. Test folders carry
no __init__.py, so pytest imports each test module by its basename: basenames stay unique."""

from __future__ import annotations

from collections import Counter

from conftest import REPO

TESTS = REPO / "tests"
PACKAGE = REPO / "src" / "gpucheck"
# Folders of tests that are not one package's: suites across packages, and the shared helpers.
CROSS_CUTTING = {"e2e"}
HELPER_PACKAGES = {"support", "sim"}  # imported by name: the one helper package, the simulator


def module_paths() -> list[str]:
    return sorted(str(p.relative_to(TESTS)) for p in TESTS.rglob("test_*.py"))


def test_every_test_folder_mirrors_a_package_or_is_cross_cutting() -> None:
    strays = []
    for name in module_paths():
        folder = (TESTS / name).parent.relative_to(TESTS)
        if folder.parts and folder.parts[0] in CROSS_CUTTING | HELPER_PACKAGES:
            continue
        if folder.parts and not (PACKAGE / folder).is_dir():
            strays.append(name)
    assert strays == [], f"no src/gpucheck package matches these tests' folders: {strays}"


def test_test_basenames_are_unique_and_test_folders_are_no_packages() -> None:
    basenames = Counter(name.rsplit("/", 1)[-1] for name in module_paths())
    assert [b for b, n in basenames.items() if n > 1] == []
    inits = sorted(
        str(p.relative_to(TESTS))
        for p in TESTS.rglob("__init__.py")
        if p.parent.relative_to(TESTS).parts[0] not in HELPER_PACKAGES
    )
    assert inits == []
