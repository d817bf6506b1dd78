"""Files of a driver's installation for a simulated root (`Scenario.files`): DKMS's nvidia tree,
/etc/ld.so.conf.d entries and the CDI spec the container toolkit generates, laid out as the
tools write them."""

from __future__ import annotations

from collections.abc import Sequence

DKMS = "/var/lib/dkms/nvidia"


def dkms_tree(
    version: str,
    built_for: list[str],
    failed_for: str | None = None,
    errors: Sequence[str] = (),
) -> dict[str, str]:
    """nvidia/VERSION built for each kernel of `built_for` (module/nvidia.ko under
    KERNEL/x86_64), and a failed build's make.log for `failed_for` (DKMS 2's build/make.log,
    with the header DKMS writes)."""
    files = {
        f"{DKMS}/{version}/source/dkms.conf": f'PACKAGE_NAME="nvidia"\nPACKAGE_VERSION="{version}"\n'
    }
    for kernel in built_for:
        files[f"{DKMS}/{version}/{kernel}/x86_64/module/nvidia.ko.zst"] = "\x28\xb5\x2f\xfd"
    if failed_for is not None:
        files[f"{DKMS}/{version}/build/make.log"] = "\n".join(
            [
                f"DKMS make.log for nvidia-{version} for kernel {failed_for} (x86_64)",
                f"make[1]: Entering directory '/usr/lib/modules/{failed_for}/build'",
                " CONFTEST: INIT_WORK",
                *errors,
                "",
            ]
        )
    return files


def ld_so_conf(name: str, *folders: str, create: bool = True) -> dict[str, str]:
    """/etc/ld.so.conf.d/NAME listing `folders`; each created (with a marker file) unless not."""
    files = {f"/etc/ld.so.conf.d/{name}": "".join(f"{f}\n" for f in folders)}
    if create:
        files |= {f"{f}/.keep": "" for f in folders}
    return files


def cdi_spec(driver: str, path: str = "/etc/cdi/nvidia.yaml") -> dict[str, str]:
    """The spec `nvidia-ctk cdi generate` writes for driver `driver` (its mounts name each
    driver library by its versioned file)."""
    lib = "/usr/lib/x86_64-linux-gnu"
    mounts = "".join(
        f"  - hostPath: {lib}/{name}.so.{driver}\n"
        f"    containerPath: {lib}/{name}.so.{driver}\n"
        "    options: [ro, nosuid, nodev, bind]\n"
        for name in ("libcuda", "libnvidia-ml", "libnvidia-ptxjitcompiler")
    )
    return {
        path: (
            "cdiVersion: 0.5.0\n"
            "kind: nvidia.com/gpu\n"
            "devices:\n- name: all\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n"
            "containerEdits:\n"
            "  mounts:\n" + mounts
        )
    }
