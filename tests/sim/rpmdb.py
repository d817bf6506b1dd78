"""A real RPM database in a simulated machine's fake root: the package is built with the
host's rpmbuild (an empty noarch stand-in of that name and version) and recorded with
`rpm --root ROOT --dbpath /var/lib/rpm -i --justdb`, as on RHEL, where /var/lib/rpm is the
database. Needs Debian's `rpm` package (rpm and rpmbuild; tests/install-components.sh)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

SPEC = """Name: {name}
Version: {version}
Release: {release}
Summary: gpucheck test stand-in
License: none
BuildArch: noarch
%description
An empty stand-in for {name} {version}-{release}.
%files
"""


def tools() -> tuple[str, str]:
    """The host's rpm and rpmbuild; fails saying how to get them."""
    rpm, rpmbuild = shutil.which("rpm"), shutil.which("rpmbuild")
    if rpm is None or rpmbuild is None:
        raise RuntimeError(
            "rpm and rpmbuild are needed to lay out an RPM database: install Debian's rpm "
            "package (sh tests/install-components.sh)"
        )
    return rpm, rpmbuild


def install(root: Path, name: str, version: str, dbpath: str = "/var/lib/rpm") -> None:
    """Record `name` at `version` ("570.86.15-1": version-release) as installed in the RPM
    database under `root`."""
    rpm, rpmbuild = tools()
    upstream, _, release = version.partition("-")
    with tempfile.TemporaryDirectory() as top:
        spec = Path(top) / f"{name}.spec"
        spec.write_text(SPEC.format(name=name, version=upstream, release=release or "1"))
        subprocess.run(
            [rpmbuild, "--quiet", "--define", f"_topdir {top}", "-bb", str(spec)],
            check=True,
            capture_output=True,
        )
        package = next(Path(top, "RPMS").rglob("*.rpm"))
        where = ["--root", str(root), "--dbpath", dbpath]
        if not (root / dbpath.lstrip("/")).is_dir():
            subprocess.run([rpm, *where, "--initdb"], check=True, capture_output=True)
        subprocess.run(
            [rpm, *where, "-i", "--justdb", "--nodeps", "--noscripts", str(package)],
            check=True,
            capture_output=True,
        )
