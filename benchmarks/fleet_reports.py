"""A generator of realistic `doctor --json` reports for `gpucheck fleet`: the machines of
tests/support/builders.py (property values from real nvidia-smi outputs), healthy and broken in the
ways fleets break, diagnosed by the real checks, then copied per host with its own hostname,
host id, boot time, GPU UUIDs and serials. A few truncated files stand in for a collector
that died mid-write.

    python benchmarks/fleet_reports.py DIR --count 10000
"""

from __future__ import annotations

import argparse
import io
import random
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support import builders
from support import framework_builders as fb
from support import more_builders as mb

from gpucheck.model.snapshot import HostIdentity, Snapshot
from gpucheck.report.core import Report
from gpucheck.report.formats import render_json

BAD_EVERY = 1000  # one truncated report per this many


def _h100(count: int) -> Snapshot:
    return builders.h100_node(count)


def _ecc(snap: Snapshot) -> Snapshot:
    snap.nvml.gpus[-1].ecc_uncorrected_volatile = 4
    return snap


def _remap(snap: Snapshot) -> Snapshot:
    snap.nvml.gpus[0].remap_pending = True
    return snap


# (weight, machine): the mix of a training fleet, mostly healthy.
KINDS: list[tuple[int, Callable[[], Snapshot]]] = [
    (24, lambda: _h100(4)),
    (8, lambda: fb.on(_h100(4), fb.torch_cu124())),
    (3, lambda: fb.on(_h100(8), fb.torch_cu124())),
    (2, lambda: _ecc(_h100(4))),
    (2, lambda: _remap(_h100(4))),
    (3, lambda: mb.nvml_fails(_h100(4), "LibRmVersionMismatch", "/usr/lib/libnvidia-ml.so.1")),
    (24, lambda: mb.driver_535_node(2)),
    (22, mb.t4_vm),
    (12, lambda: fb.on(builders.workstation(), fb.torch_cpu())),
]


def _template(snap: Snapshot) -> str:
    """The report's JSON with placeholders where each host differs."""
    snap.system.hostname = "@HOST@"
    snap.system.host = HostIdentity(
        host_id="mid-@HOSTID@", host_id_source="machine-id", boot_time="@BOOT@"
    )
    for g in snap.nvml.gpus:
        g.uuid = f"GPU-@UUID@-{g.index:04d}-4e1f-9a2b-3c4d5e6f7a8b"
        g.serial = f"@SERIAL@{g.index}"
    from support.evaluate import run_checks

    stream = io.StringIO()
    render_json(Report(snap, run_checks(snap)), stream)
    return stream.getvalue()


def generate(folder: Path, count: int, seed: int = 13) -> int:
    """Write `count` reports into `folder`; returns their total size in bytes."""
    rng = random.Random(seed)
    templates = [_template(make()) for _, make in KINDS]
    weights = [w for w, _ in KINDS]
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for n in range(count):
        text = rng.choices(templates, weights)[0]
        text = (
            text.replace("@HOST@", f"gpu-{n:05d}")
            .replace("@HOSTID@", f"{rng.getrandbits(128):032x}")
            .replace("@BOOT@", f"2026-11-{rng.randint(1, 20):02d}T0{rng.randint(0, 9)}:00:00+00:00")
            .replace("@UUID@", f"{rng.getrandbits(32):08x}")
            .replace("@SERIAL@", f"1654{n:08d}")
        )
        if n % BAD_EVERY == BAD_EVERY - 1:
            text = text[: len(text) // 2]
        data = text.encode()
        (folder / f"gpu-{n:05d}.json").write_bytes(data)
        total += len(data)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--count", type=int, default=10_000)
    args = parser.parse_args()
    total = generate(args.folder, args.count)
    print(f"wrote {args.count} reports, {total / args.count / 1024:.1f} KiB on average")


if __name__ == "__main__":
    main()
