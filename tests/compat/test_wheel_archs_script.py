"""scripts/wheel_archs.py, the tool compat/extensions.toml's wheel-read [[kernel_archs]] rows come
from: its pure parts (what it accepts, which wheel members it reads, what it prints) and its
usage errors; the download itself needs the registry and is not run here."""

from __future__ import annotations

import importlib.util
import json
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    path = REPO / "scripts" / "wheel_archs.py"
    spec = importlib.util.spec_from_file_location("wheel_archs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


wheel_archs = _script()


def test_an_exact_pin_is_the_only_requirement_it_takes() -> None:
    assert wheel_archs.parse_requirement("vllm==0.9.2") == ("vllm", "0.9.2")
    assert wheel_archs.parse_requirement("sgl-kernel==0.3.16.post6") == (
        "sgl-kernel",
        "0.3.16.post6",
    )
    for bad in ("vllm", "vllm>=0.9", "vllm==", "==0.9.2"):
        with pytest.raises(wheel_archs.UsageError, match="give package==version"):
            wheel_archs.parse_requirement(bad)


def test_it_reads_the_shared_libraries_of_a_wheel_alone() -> None:
    # Member names as vllm-0.9.2 and sgl_kernel-0.3.20 wheels hold them.
    members = [
        "vllm/_C.abi3.so",
        "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so",
        "vllm/__init__.py",
        "lib/mscclpp.so.0.6.0",
        "vllm-0.9.2.dist-info/RECORD",
        "vllm/so/",
        "vllm/notes.solution",
    ]
    assert wheel_archs.shared_libraries(members) == [
        "lib/mscclpp.so.0.6.0",
        "vllm/_C.abi3.so",
        "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so",
    ]


def test_the_download_asks_pip_for_one_linux_x86_64_wheel_and_nothing_else() -> None:
    command = wheel_archs.download_command("vllm", "0.9.2", "3.10", Path("/tmp/x"))
    assert command[1:5] == ["-m", "pip", "download", "--no-deps"]
    assert "--only-binary=:all:" in command and "--no-cache-dir" in command
    assert command[-1] == "vllm==0.9.2"
    platforms = [command[i + 1] for i, arg in enumerate(command) if arg == "--platform"]
    assert "manylinux1_x86_64" in platforms and "manylinux_2_28_x86_64" in platforms
    assert all(p.endswith("x86_64") for p in platforms)


def test_the_report_lists_each_gpu_library_with_its_entry_counts() -> None:
    libraries = {
        "vllm/_C.abi3.so": ({"5.2": 3, "8.0": 250, "9.0a": 12}, {"9.0": 2}),
        "vllm/cpu_only.so": ({}, {}),
        "vllm/broken.so": None,
    }
    text = wheel_archs.report_text("w.whl", "ab12", libraries)
    assert text == (
        "w.whl sha256=ab12\n"
        "  vllm/_C.abi3.so: sass 5.2(3),8.0(250),9.0a(12) ptx 9.0(2)\n"
        "  vllm/broken.so: unreadable"
    )
    assert json.loads(wheel_archs.report_json("w.whl", "ab12", libraries)) == {
        "wheel": "w.whl",
        "sha256": "ab12",
        "libraries": {
            "vllm/_C.abi3.so": {"sass": {"5.2": 3, "8.0": 250, "9.0a": 12}, "ptx": {"9.0": 2}},
            "vllm/broken.so": None,
        },
    }
    assert wheel_archs.report_text("w.whl", "ab12", {}).endswith("no library carries GPU code")


def test_usage_errors_exit_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert wheel_archs.main(["vllm>=0.9"]) == 2
    assert wheel_archs.main(["/nonexistent/vllm-0.9.2-cp38-abi3-manylinux1_x86_64.whl"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "wheel_archs: 'vllm>=0.9': give package==version (an exact release) or a .whl file",
        "wheel_archs: /nonexistent/vllm-0.9.2-cp38-abi3-manylinux1_x86_64.whl: no such file",
    ]


def test_a_wheel_is_read_one_library_at_a_time_and_nothing_is_left(tmp_path: Path) -> None:
    wheel = tmp_path / "pkg-1.0-cp38-abi3-manylinux1_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pkg/_C.abi3.so", b"not an ELF file")
        archive.writestr("pkg/__init__.py", b"")
    assert wheel_archs.read_wheel(wheel) == {"pkg/_C.abi3.so": None}
    assert wheel_archs.main([str(wheel), "--json"]) == 0
    assert wheel.exists()  # a wheel given by path is the caller's: never deleted
    assert sorted(p.name for p in tmp_path.iterdir()) == [wheel.name]


def test_only_reads_the_libraries_named(tmp_path: Path) -> None:
    wheel = tmp_path / "sgl_kernel-0.3.20-cp310-abi3-manylinux2014_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("sgl_kernel/sm90/common_ops.abi3.so", b"x")
        archive.writestr("lib/mscclpp.so.0.6.0", b"x")
    assert list(wheel_archs.read_wheel(wheel, ["common_ops"])) == [
        "sgl_kernel/sm90/common_ops.abi3.so"
    ]
