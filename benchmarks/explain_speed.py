"""gpucheck explain over a large log: the time it takes to find the catalog's messages and
NVIDIA's Xids in a 1 MiB text (compat/matching.py: only the pattern alternatives whose leading
literal the text holds are scanned, all Xid lines in one scan), printed beside a scan of every
alternative over the whole text (what the matcher did before its prefilter) and a plain `re`
scan (every pattern against every line, as a script would write it), with the ratios.
explain should stay well under a second.

    python benchmarks/explain_speed.py            # 1 MiB
    python benchmarks/explain_speed.py --mib 16   # the largest input explain reads
"""

from __future__ import annotations

import argparse
import re
import time

from gpucheck.compat import load
from gpucheck.compat.matching import alternatives
from gpucheck.compat.xids import XID_LINE
from gpucheck.explanation import explain

# A training log as people paste it: mostly noise, a few known messages inside.
NOISE = (
    "2026-11-28 08:00:00,123 INFO trainer.py:412] step 1200 loss=2.3141 lr=3.0e-4 "
    "tokens/s=18234 gpu_mem=71.2GiB\n"
)
KNOWN = [
    "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n",
    "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error, "
    "NCCL version 2.20.5\n",
    "W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: "
    "Could not find TensorRT\n",
]


def make_log(size: int) -> str:
    lines, total, i = [], 0, 0
    while total < size:
        line = KNOWN[(i // 5000) % len(KNOWN)] if i % 5000 == 2500 else NOISE
        lines.append(line)
        total += len(line)
        i += 1
    return "".join(lines)


def plain_scan(text: str, patterns: list[re.Pattern[str]]) -> int:
    found = 0
    for line in text.splitlines():
        for pattern in patterns:
            if pattern.search(line):
                found += 1
    return found


def every_alternative(text: str, patterns: list[re.Pattern[str]]) -> int:
    return sum(1 for pattern in patterns for _ in pattern.finditer(text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=1.0)
    args = parser.parse_args()
    text = make_log(int(args.mib * 1024 * 1024))
    compat = load()
    sources = [m.pattern for m in compat.messages.messages] + [XID_LINE]
    patterns = [re.compile(p) for p in sources]
    parts = [re.compile(a, re.MULTILINE) for p in sources for a in alternatives(p)]
    explain("warm-up", compat)  # the catalog read and compiled once, as in the command
    start = time.perf_counter()
    result = explain(text, compat)
    took = time.perf_counter() - start
    start = time.perf_counter()
    plain = plain_scan(text, patterns)
    plain_took = time.perf_counter() - start
    start = time.perf_counter()
    every = every_alternative(text, parts)
    every_took = time.perf_counter() - start
    print(f"text: {len(text) / 2**20:.1f} MiB, {text.count(chr(10))} lines")
    print(f"gpucheck explain       : {took * 1000:8.1f} ms, {len(result.findings)} messages found")
    print(f"every alternative, whole: {every_took * 1000:8.1f} ms, {every} matches")
    print(f"plain re scan, per line: {plain_took * 1000:8.1f} ms, {plain} matching lines")
    print(
        f"explain is {plain_took / took:.1f}x faster than the plain scan, "
        f"{every_took / took:.1f}x faster than scanning every alternative"
    )


if __name__ == "__main__":
    main()
