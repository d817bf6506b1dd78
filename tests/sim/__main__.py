"""Start a simulated GPU machine from the shell, without writing Python (docs/testing.md,
"Testing without a GPU"):

    python -m tests.sim h100-node --out /tmp/node       # from the repository root
    . /tmp/node/env.sh && gpucheck doctor               # or: eval "$(python -m tests.sim ...)"

Lays out the machine in DIR (the fake libraries built in DIR/build, the scenario file, the
fake root), writes DIR/env.sh and prints the same lines: the environment that makes the real
`gpucheck` see that machine. `--list` names the scenarios. A bug report can then say
"reproduce with `python -m tests.sim SCENARIO`".
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:  # (scenario.py imports its neighbours as the tests do)
    sys.path.insert(0, str(TESTS))

try:
    import pynvml as nv
except ImportError:  # run by a Python without the test extra: one line, not a traceback
    sys.exit(
        "python -m tests.sim needs the test extra (nvidia-ml-py, ...): run it with the venv's "
        "python (.venv/bin/python -m tests.sim ...), after pip install -e '.[test]'"
    )
from support import reallibs  # noqa: E402

from sim import scenario as sim  # noqa: E402
from sim.fabric import hgx_fabric  # noqa: E402
from sim.network import HDR, POLLING, dgx_network, port  # noqa: E402

# name -> (what it is, the scenario), each as the simulator tests build it.
SCENARIOS: dict[str, tuple[str, Callable[[int], sim.Scenario]]] = {
    "h100-node": ("a healthy HGX H100 node, driver 590.48.01 (CUDA 13.1)", sim.h100_node),
    "driver-mismatch": (
        "driver updated without a reboot: kernel module 590.48.01, libraries 595.58.03",
        lambda n: sim.h100_node(
            n,
            library_version="595.58.03",
            faults=[
                sim.error("nvmlInit", nv.NVML_ERROR_LIB_RM_VERSION_MISMATCH),
                sim.error("cuInit", sim.CUDA_ERROR_SYSTEM_DRIVER_MISMATCH),
            ],
        ),
    ),
    "gpu-lost": (
        "the last GPU has fallen off the bus (GpuIsLost, hidden from CUDA)",
        lambda n: sim.Scenario(
            gpus=[
                *(sim.h100(i) for i in range(n - 1)),
                sim.replace(sim.h100(n - 1), cuda_hidden=True),
            ],
            faults=[sim.error("nvmlDeviceGetHandleByIndex", nv.NVML_ERROR_GPU_IS_LOST, n - 1)],
        ),
    ),
    "ecc-errors": (
        "GPU 0 has uncorrectable ECC errors since boot",
        lambda n: sim.Scenario(
            gpus=[
                sim.replace(sim.h100(0), ecc_uncorrected=(2, 2)),
                *(sim.h100(i) for i in range(1, n)),
            ]
        ),
    ),
    "nvml-hang": (
        "nvmlInit hangs for 60 s (a hung driver)",
        lambda n: sim.h100_node(n, faults=[sim.sleep("nvmlInit", 60)]),
    ),
    "nvml-crash": (
        "an NVML call (nvmlDeviceGetTemperature on GPU 0) crashes the process",
        lambda n: sim.h100_node(n, faults=[sim.crash("nvmlDeviceGetTemperature", 0)]),
    ),
    "dgx-network": (
        "an HGX H100 node with a ConnectX-7 400G port per GPU, a DGX-like PCIe tree",
        lambda n: sim.h100_node(n, fabric=hgx_fabric(n), network=dgx_network(min(n, 8))),
    ),
    "network-faults": (
        "that node with a port Polling, one at 200G, no nvidia_peermem, /dev/shm 64 MiB",
        lambda n: sim.h100_node(
            n,
            fabric=hgx_fabric(n),
            open_kernel_module=False,
            network=port(
                port(
                    dgx_network(min(n, 8), peermem=False, shm_bytes=64 << 20),
                    0,
                    state=POLLING[0],
                    phys_state=POLLING[1],
                ),
                min(n, 8) - 1,
                rate=HDR,
            ),
        ),
    ),
    "no-module": (
        "GPUs on the PCI bus, no nvidia kernel module loaded",
        lambda n: sim.h100_node(
            n,
            module_loaded=False,
            uvm_loaded=False,
            faults=[sim.error("nvmlInit", nv.NVML_ERROR_DRIVER_NOT_LOADED)],
        ),
    ),
}


def environment_lines(env: dict[str, str]) -> str:
    return "".join(f"export {key}={shlex.quote(value)}\n" for key, value in env.items())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.sim",
        description="Lay out a simulated GPU machine and print the environment to source.",
    )
    parser.add_argument("scenario", nargs="?", help="one of --list")
    parser.add_argument("--out", metavar="DIR", help="an empty or new folder for the machine")
    parser.add_argument("--gpus", type=int, default=8, metavar="N", help="GPUs (default 8)")
    parser.add_argument("--list", action="store_true", help="name every scenario and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name, (about, _) in SCENARIOS.items():
            sys.stdout.write(f"{name:16} {about}\n")
        return 0
    if args.scenario not in SCENARIOS or args.out is None:
        known = ", ".join(SCENARIOS)
        parser.error(f"give a SCENARIO ({known}) and --out DIR")
    if not 1 <= args.gpus <= 64:
        parser.error("--gpus: from 1 to 64")
    out = Path(args.out).resolve()
    if out.exists() and any(out.iterdir()):
        parser.error(f"--out {out}: not empty (a machine is laid out in a new folder)")
    compiler = sim.find_compiler()
    if compiler is None:
        parser.error("no C compiler (cc or gcc) to build the fake NVIDIA libraries")
    try:
        include = sim.nvml_include_dir()
    except reallibs.FetchError as exc:
        parser.error(f"cannot fetch NVIDIA's nvml.h ({sim.NVML_DEV_DIST}): {exc}")
    try:
        libraries = sim.Libraries.build(include, out / "build", compiler)
    except sim.BuildError as exc:
        parser.error(str(exc).splitlines()[0])
    machine = sim.Machine.create(SCENARIOS[args.scenario][1](args.gpus), libraries, out)
    lines = environment_lines(machine.env)
    (out / "env.sh").write_text(f"# python -m tests.sim {args.scenario} (source this)\n{lines}")
    sys.stdout.write(lines)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
