"""The answer `gpucheck install` gives: per package the build chosen (or none, with the
condition that rules out each candidate release), what installed packages must move with it
or would break, and the commands. Its JSON form is `gpucheck schema install`."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Struct, field

INSTALL_SCHEMA_VERSION = "1.0"


class PackageAnswer(Struct, kw_only=True):
    name: str
    requirement: str | None = None  # what the installer is given: "torch==2.14.*"
    release: str | None = None  # the release line chosen: "2.14"
    build: str | None = None  # "cu126", "cpu", "cuda12" (jax), "and-cuda" (tensorflow)
    cuda: str | None = None  # the CUDA it is built with
    index_url: str | None = None  # None: PyPI
    ruled_out: list[str] = field(default_factory=list)  # "2.15: CUDA 13.2 has no code for ..."
    cliff: str | None = None
    notes: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)


class Move(Struct):
    """An installed package that pins the one installed, moved in the same command."""

    name: str
    installed: str
    requirement: str  # "torchvision==0.29.*"
    why: str
    index_url: str | None = None  # torch's index (the build resolved or kept); None: PyPI


class Conflict(Struct):
    """An installed package the install would break, and no compat row says what to move it to."""

    name: str
    installed: str
    pin: str  # its own requirement on the package: "torch==2.5.1"
    why: str


class InstallAnswer(Struct, kw_only=True):
    schema_version: str = INSTALL_SCHEMA_VERSION
    machine: str  # "this machine" / "described: RTX 5090, driver 570.124.06, ..."
    gpus: list[str] = field(default_factory=list)  # "GeForce RTX 5090 (12.0)"
    driver: str | None = None
    python: str | None = None
    os: str = "linux"
    environment: str | None = None  # the interpreter the commands are for
    installer: str = "pip"  # pip | uv-pip | uv-add | conda | mamba
    installer_why: str = ""  # how it was chosen
    packages: list[PackageAnswer] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)  # each one shell line, values quoted
    pyproject: str | None = None  # uv add: the index and sources to add to pyproject.toml
    data_as_of: str = ""
    ok: bool = True  # every package has a build here and nothing installed breaks

    def to_dict(self) -> dict[str, Any]:
        made: dict[str, Any] = msgspec.to_builtins(self)
        return made
