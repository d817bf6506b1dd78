"""Start-up cost of gpucheck's commands against the floor of any typer command, side by side
in one run: a minimal one-command typer app that reads a file and writes it out, with the
same tricks as gpucheck's entry point (GC thresholds raised, os._exit past the teardown), and
plain `python -c "import typer"`. Prints medians of interleaved rounds, the ratios to the typer
app, the load average, and the import profile of `doctor --from FILE --json` (`-X importtime`:
the modules that cost most, with what they pulled in, and the modules it imports beyond the
typer app's, with what they cost on their own).

The budgets (BUDGETS), ratios of median CPU times (user and system: a busy machine stretches
the wall time with other processes' turns) to the typer app's, measured in the same rounds:

    gpucheck --help                  <= 2.0x the typer app
    doctor --from FILE --json        <= 3.0x the typer app   (FILE: an 8-GPU node, bare)

They are generous on purpose (docs/speed.md gives the measurements: about 1.1x and 1.7x): a
ratio of CPU times swings with the load of a shared CI machine, so it only catches a gross
regression. What keeps a costly import off the start-up, steadily, is the import gate
(tests/e2e/test_startup_imports.py: the modules these commands must not import).

With --check only the budgeted rows are measured (at least 9 interleaved rounds, so that a
busy machine's noise falls outside the median) and the exit status says whether they hold:
0 within every budget, 1 over one (each named on stderr), 2 for bad arguments. The slow test
tier runs it and prints its table (tests/e2e/test_startup_budget.py).

    python benchmarks/startup.py [--runs 15] [--top 15] [--check]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


# An installed package has its bytecode compiled; a checkout run with PYTHONDONTWRITEBYTECODE
# would compile every module on every run and measure the compiler. The warm-up runs write it.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], runs: int) -> list[tuple[float, float]]:
    """(wall seconds, CPU seconds) of each of `runs` runs of `cmd`. The CPU time (user and
    system, of the child and what it waited for) is what the budgets judge: on a busy machine
    the wall time also counts the other processes' turns on the cores."""
    times = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=ENV, capture_output=True, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        times.append((wall, cpu))
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-500:]!r}")
    return times


def program() -> list[str]:
    """The `gpucheck` program installed beside this interpreter, as users run it (the console
    script; `python -m` would add runpy's imports), or nothing where there is none."""
    script = Path(sys.executable).with_name("gpucheck")
    return [str(script)] if script.is_file() else []


# The floor: what any one-command typer program costs, with gpucheck's entry-point tricks.
TYPER_APP = """
import gc, os, sys
gc.set_threshold(50_000, 20, 10)
import typer

def show(path: str) -> None:
    with open(path, "rb") as stream:
        sys.stdout.write(stream.read().decode()[:1000])

app = typer.Typer(pretty_exceptions_enable=False, rich_markup_mode=None)
app.command()(show)
app(standalone_mode=False)
sys.stdout.flush()
os._exit(0)
"""


def import_times(cmd: list[str]) -> dict[str, tuple[float, float]]:
    """`-X importtime` of `cmd` (a python script or -m and its arguments): each module's own
    and cumulative microseconds, medians of 5 runs (one run is noisy); only the modules every
    run imported."""
    runs: list[dict[str, tuple[int, int]]] = []
    for _ in range(5):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", *cmd], env=ENV, capture_output=True, check=False
        )
        found: dict[str, tuple[int, int]] = {}
        for line in proc.stderr.decode(errors="replace").splitlines():
            if not line.startswith("import time:") or "| imported package" in line:
                continue
            own, total, name = line[len("import time:") :].split("|")
            found[name.strip()] = (int(own), int(total))
        runs.append(found)
    names = [n for n in runs[0] if all(n in r for r in runs)]
    return {
        n: (statistics.median(r[n][0] for r in runs), statistics.median(r[n][1] for r in runs))
        for n in names
    }


def import_profile(times: dict[str, tuple[float, float]], floor: set[str], top: int) -> list[str]:
    """The `top` modules by cumulative time, each with its own time; then what the modules
    the typer app does not import (`floor`: the ones it does) cost in all, and the costliest."""
    ordered = sorted(times, key=lambda n: -times[n][1])[:top]
    lines = [
        f"  {times[n][1] / 1000:7.1f} ms  (own {times[n][0] / 1000:5.1f})  {n}" for n in ordered
    ]
    beyond = sorted((n for n in times if n not in floor), key=lambda n: -times[n][0])
    total = sum(times[n][0] for n in beyond) / 1000
    lines.append(
        f"beyond the typer app's imports: {len(beyond)} modules, {total:.1f} ms of their own "
        "time (-X importtime adds its own overhead to each); the costliest:"
    )
    lines += [f"  {times[n][0] / 1000:7.1f} ms  {n}" for n in beyond[:top]]
    return lines


def snapshot_files() -> tuple[str, str]:
    """Two realistic snapshots: the test builders' healthy 8-GPU H100 node with no Python
    environment (a bare node: no framework check has anything to judge), and the same node
    with one environment holding torch 2.5.1+cu124 and the NVIDIA wheels it pins (the
    framework checks that judge torch, or any environment, import and run)."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from support import builders, framework_builders

    from gpucheck.model.snapshot import dumps

    paths = []
    for snap in (
        builders.h100_node(8),
        framework_builders.on(builders.h100_node(8), framework_builders.torch_cu124()),
    ):
        fd, path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as fh:
            fh.write(dumps(snap))
        paths.append(path)
    return paths[0], paths[1]


# Row label -> the most its median may be, as a ratio to the typer app's median.
BUDGETS = {"gpucheck --help": 2.0, "doctor --from --json": 3.0}
# Fewer interleaved rounds than this and one burst of load on a shared machine moves the median.
MIN_CHECK_ROUNDS = 9


def over_budget(medians: dict[str, float], floor: str) -> list[str]:
    """One line per budgeted row whose median exceeds its budget times the floor's median."""
    return [
        f"{label}: {medians[label] / medians[floor]:.3f}x the typer app's CPU time, over its "
        f"budget of {budget}x"
        for label, budget in BUDGETS.items()
        if medians[label] > budget * medians[floor]
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="interleaved rounds")
    parser.add_argument("--top", type=int, default=15, help="import profile entries to show")
    parser.add_argument(
        "--check",
        action="store_true",
        help="measure only the budgeted rows; exit 1 when one exceeds its budget",
    )
    args = parser.parse_args()
    if args.runs < (MIN_CHECK_ROUNDS if args.check else 1):
        parser.error(f"--runs must be at least {MIN_CHECK_ROUNDS if args.check else 1}")
    snap, torch_snap = snapshot_files()
    py = sys.executable
    gpucheck = program() or [py, "-m", "gpucheck"]
    print(f"gpucheck is {' '.join(gpucheck)}; load average {os.getloadavg()[0]:.2f} at the start")
    # msgspec imports typing_extensions where it is installed (~1.5 ms); gpucheck's own
    # dependencies do not bring it, the mcp extra and the test tools do: say which this is.
    here = "installed" if importlib.util.find_spec("typing_extensions") else "not installed"
    print(f"typing_extensions is {here} beside it (msgspec imports it where it is: ~1.5 ms)")
    fd, app = tempfile.mkstemp(suffix=".py")
    with os.fdopen(fd, "w") as fh:
        fh.write(TYPER_APP)
    rows = [
        ("typer app (floor)", [py, app, snap]),
        ("import typer", [py, "-c", "import typer"]),
        ("gpucheck --help", [*gpucheck, "--help"]),
        ("gpucheck compat torch 2.5.1", [*gpucheck, "compat", "torch", "2.5.1"]),
        ("doctor --from --json", [*gpucheck, "doctor", "--from", snap, "--json"]),
        ("doctor --from (text)", [*gpucheck, "doctor", "--from", snap]),
        ("doctor --from --json (torch env)", [*gpucheck, "doctor", "--from", torch_snap, "--json"]),
        (
            "doctor --from --json --only gpus",
            [*gpucheck, "doctor", "--from", snap, "--json", "--only", "gpus"],
        ),
    ]
    if args.check:
        rows = [row for row in rows if row[0] in BUDGETS or row[0] == "typer app (floor)"]
    for _, cmd in rows:  # warm the page cache for all alike
        timed(cmd, 2)
    medians: dict[str, float] = {}  # CPU
    print(
        f"{'command':34} {'CPU median ms':>13} {'min':>6}  {'wall median ms':>14} {'min':>6}"
        f"   ({args.runs} rounds, interleaved)"
    )
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in rows}
    for _ in range(args.runs):  # interleaved, so that load on the machine hits all alike
        for label, cmd in rows:
            samples[label] += timed(cmd, 1)
    for label, _ in rows:
        wall = [w for w, _ in samples[label]]
        cpu = [c for _, c in samples[label]]
        medians[label] = statistics.median(cpu)
        print(
            f"{label:34} {medians[label] * 1e3:13.1f} {min(cpu) * 1e3:6.1f}  "
            f"{statistics.median(wall) * 1e3:14.1f} {min(wall) * 1e3:6.1f}"
        )
    floor = medians["typer app (floor)"]
    print(f"(load average {os.getloadavg()[0]:.2f} at the end of the rounds)\n")
    for label, _ in rows[1:]:
        budget = f"budget <= {BUDGETS[label]}x" if label in BUDGETS else "no budget"
        print(f"{label:34} {medians[label] / floor:5.3f}x the typer app's CPU time   ({budget})")
    over = over_budget(medians, "typer app (floor)")
    for line in over:
        print(f"over budget: {line}", file=sys.stderr)
    if args.check:
        for path in (snap, torch_snap, app):
            os.unlink(path)
        return 1 if over else 0
    print("\nimport profile of doctor --from FILE --json (cumulative ms, median of 5 runs):")
    # (The console script where there is one: `-m` would add runpy's imports to the profile.)
    script = gpucheck[-1:] if program() else ["-m", "gpucheck"]
    times = import_times([*script, "doctor", "--from", snap, "--json"])
    floor_modules = set(import_times([app, snap]))
    for line in import_profile(times, floor_modules, args.top):
        print(line)
    for path in (snap, torch_snap, app):
        os.unlink(path)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
