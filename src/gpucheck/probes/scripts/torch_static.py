"""torch's build, and what the extensions built against it say about their own build.

Loaded by framework_static.py (by path: that script keeps its own folder off sys.path) and run
inside the TARGET interpreter, so: standard library only, Python 3.8+, nothing imported from
the packages themselves. Facts come from files the packages ship:
- torch/version.py: its version, CUDA, HIP;
- torchvision/version.py, torchaudio/version.py: `__version__` and `cuda` (parsed with `ast`);
- xformers/cpp_lib.json: the torch and CUDA the wheel's C++ part was built against;
- the wheel's own name, where pip recorded it in direct_url.json: flash-attn's GitHub wheels
  say `+cu123torch2.4cxx11abiFALSE`, which their installed Version drops;
- a `+cuXYZ` local version tag.
"""

from __future__ import annotations

import json
import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any


def torch_build(
    static: ModuleType, dists: list[dict[str, Any]], errors: list[str]
) -> dict[str, Any] | None:
    """torch/version.py, parsed with `ast`, never executed."""
    owners = static.TABLE.torch
    installed = any(d["name"] in owners for d in dists)
    dirs = static.package_dirs("torch", dists, lambda name: name in owners)
    path = static.find_file(dirs, "version.py")
    if path is None:
        if installed:
            errors.append(f"torch: no torch/version.py in {', '.join(dirs)}")
        return None
    try:
        values = static.assignments(path)
    except Exception as exc:
        errors.append(f"torch: {path}: {static.describe(exc)}")
        return None
    return {
        "version": static.text_or_none(static.literal(values.get("__version__"))),
        "cuda": static.text_or_none(static.literal(values.get("cuda"))),
        "hip": static.text_or_none(static.literal(values.get("hip"))),
        "git_version": static.text_or_none(static.literal(values.get("git_version"))),
        "path": path,
    }


# Distribution -> the import package holding its build files.
VERSION_FILES = {"torchvision": "torchvision", "torchaudio": "torchaudio"}
LOCAL_CUDA = re.compile(r"\+cu(\d{2,3})(?![\d])")
WHEEL_TAG = re.compile(r"\+cu(\d{2,3})torch(\d+\.\d+)(?:cxx11abi(TRUE|FALSE))?", re.IGNORECASE)
MAX_JSON_BYTES = 1 << 16


def cuda_of_digits(digits: str) -> str:
    """ "124" -> "12.4", "118" -> "11.8", "92" -> "9.2"; "12" -> "12": flash-attn's wheels from
    2.7.x name the CUDA major alone (+cu12torch2.6), and no CUDA 1.x exists."""
    if len(digits) == 2 and digits[0] == "1":
        return digits
    return f"{digits[:-1]}.{digits[-1]}"


def direct_url(location: str | None, name: str, version: str) -> str | None:
    """The URL pip installed this distribution from (direct_url.json), if it recorded one."""
    if not location:
        return None
    stem = re.sub(r"[-_.]+", "_", name)
    candidates = [f"{stem}-{version}.dist-info", f"{stem}-{version.split('+', 1)[0]}.dist-info"]
    for folder in candidates:
        path = os.path.join(location, folder, "direct_url.json")
        try:
            with open(path, "rb") as handle:
                data = json.loads(handle.read(MAX_JSON_BYTES))
        except (OSError, ValueError):
            continue
        url = data.get("url") if isinstance(data, dict) else None
        if isinstance(url, str):
            return url
    return None


def from_wheel_name(record: dict[str, Any], text: str, where: str) -> None:
    tag = WHEEL_TAG.search(text)
    if tag is not None:
        record["cuda"] = cuda_of_digits(tag.group(1))
        record["torch"] = tag.group(2)
        if tag.group(3):
            record["cxx11_abi"] = tag.group(3).upper() == "TRUE"
        record["source"] = where
        return
    local = LOCAL_CUDA.search(text)
    if local is not None and record.get("cuda") is None:
        record["cuda"] = cuda_of_digits(local.group(1))
        record["source"] = record.get("source") or where


def from_version_file(static: ModuleType, record: dict[str, Any], dirs: list[str]) -> None:
    path = static.find_file(dirs, "version.py")
    if path is None:
        return
    values = static.assignments(path)
    cuda = static.text_or_none(static.literal(values.get("cuda")))
    version = static.text_or_none(static.literal(values.get("__version__")))
    if cuda:
        record["cuda"] = cuda
    if version:
        record["version"] = version
        from_wheel_name(record, version, path)  # '0.28.0+cu130': a cuda that is not a literal
    record["source"] = path


def from_xformers(static: ModuleType, record: dict[str, Any], dirs: list[str]) -> None:
    path = static.find_file(dirs, "cpp_lib.json")
    if path is None:
        return
    with open(path, "rb") as handle:
        data = json.loads(handle.read(MAX_JSON_BYTES))
    if not isinstance(data, dict):
        return
    torch = data.get("torch_version")
    if isinstance(torch, str):
        record["torch"] = torch
    cuda = data.get("cuda_version")
    if isinstance(cuda, int) and cuda > 0:  # 1204 = CUDA 12.4
        record["cuda"] = f"{cuda // 100}.{cuda % 100}"
    elif isinstance(cuda, str) and cuda:
        record["cuda"] = cuda
    record["source"] = path


def extension(
    static: ModuleType, dist: dict[str, Any], all_dists: list[dict[str, Any]]
) -> dict[str, Any]:
    name, version = dist["name"], dist["version"]
    record: dict[str, Any] = {"name": name, "version": version, "cuda": None, "torch": None}
    record["cxx11_abi"] = None
    record["source"] = None
    from_wheel_name(record, version, "version")
    url = direct_url(dist.get("location"), name, version)
    if url:
        from_wheel_name(record, url.rsplit("/", 1)[-1], url)
    package = VERSION_FILES.get(name)
    if package is not None:
        dirs = static.package_dirs(package, all_dists, lambda n: n == name)
        from_version_file(static, record, dirs)
    if name == "xformers":
        dirs = static.package_dirs("xformers", all_dists, lambda n: n == name)
        from_xformers(static, record, dirs)
    return record


def collect(
    static: ModuleType, dists: list[dict[str, Any]], errors: list[str]
) -> list[dict[str, Any]]:
    out = []
    for dist in dists:
        if dist["name"] not in static.TABLE.extensions:
            continue
        try:
            out.append(extension(static, dist, dists))
        except Exception as exc:
            errors.append(f"{dist['name']}: {static.describe(exc)}")
    return out
