"""Inside a container: the image's NVIDIA_REQUIRE_CUDA against the host driver. NVIDIA's CUDA
images declare the CUDA they need ("cuda>=12.4 brand=tesla,driver>=470,driver<471 ..."), and
the NVIDIA Container Toolkit refuses to start an image whose requirement the driver does not
meet; NVIDIA's docs (Specialized Configurations with Docker: NVIDIA_REQUIRE_*) say constraints
separated by spaces are ORed and those separated by commas ANDed, and NVIDIA_DISABLE_REQUIRE
turns the check off. A container running with an unmet requirement was started past that
check (NVIDIA_DISABLE_REQUIRE, or a runtime that does not enforce it): its CUDA programs fail
with "CUDA driver version is insufficient for CUDA runtime version"."""

from __future__ import annotations

import re

from gpucheck.checks.context import Context
from gpucheck.checks.registry import check
from gpucheck.compat import driver_text, parse_version
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.layers import Layer

_PART = re.compile(r"^(cuda|driver|brand|arch)(>=|<=|==|=|<|>)(\S+)$")


def _holds(part: str, ctx: Context) -> bool | None:
    """One constraint (`cuda>=12.4`, `brand=tesla`, `driver<471`); None: it cannot be judged."""
    match = _PART.match(part.strip())
    if match is None:
        return None
    key, op, value = match.groups()
    if key == "brand":
        brands = {(g.brand or "").lower().replace(" ", "") for g in ctx.gpus}
        return value.lower() in brands if op in ("=", "==") and brands - {""} else None
    if key == "arch":
        return None  # a compute capability constraint: rare, not judged here
    have = parse_version((ctx.driver_cuda if key == "cuda" else ctx.driver_version) or "")
    want = parse_version(value)
    if have is None or want is None:
        return None
    if key == "cuda":
        have = parse_version(".".join(str(n) for n in have.release[:2])) or have
    return {
        ">=": have >= want,
        "<=": have <= want,
        ">": have > want,
        "<": have < want,
        "=": have == want,
        "==": have == want,
    }[op]


def requirement_met(text: str, ctx: Context) -> bool | None:
    """Any space-separated alternative whose comma-separated constraints all hold; None: no
    alternative holds and one could not be judged."""
    unknown = False
    for alternative in text.split():
        results = [_holds(part, ctx) for part in alternative.split(",") if part]
        if results and all(r is True for r in results):
            return True
        if any(r is None for r in results) and not any(r is False for r in results):
            unknown = True
    return None if unknown else False


@check("system.image-cuda-requirement", "the image's NVIDIA_REQUIRE_CUDA is met by the host driver")
def image_requirement(ctx: Context) -> Outcome | None:
    sysf = ctx.snapshot.system
    text = sysf.env.get("NVIDIA_REQUIRE_CUDA", "").strip()
    if not sysf.container or not text or not ctx.nvml_ok:
        return None
    evidence = [
        f"NVIDIA_REQUIRE_CUDA={text}",
        f"driver {ctx.driver_version}, CUDA {ctx.driver_cuda}",
    ]
    disabled = sysf.env.get("NVIDIA_DISABLE_REQUIRE", "").strip().lower() in ("1", "true", "yes")
    if disabled:
        evidence.append("NVIDIA_DISABLE_REQUIRE is set: the toolkit did not check it")
    met = requirement_met(text, ctx)
    if met is None:
        return Outcome.skip("NVIDIA_REQUIRE_CUDA could not be judged here", *evidence)
    if met:
        return Outcome.passed(
            f"The image's CUDA requirement is met by driver {ctx.driver_version}", *evidence
        )
    need = re.search(r"cuda>=([0-9.]+)", text)
    wanted = need.group(1) if need else "its CUDA"
    floor = ctx.compat.min_driver(wanted) if need else None
    driver = (
        f"driver {driver_text(floor)} or newer (CUDA {wanted}'s minimum)"
        if floor
        else (f"a driver that supports CUDA {wanted}")
    )
    return Outcome.fail(
        f"This image needs CUDA {wanted} (NVIDIA_REQUIRE_CUDA), but the host driver "
        f"{ctx.driver_version} supports CUDA {ctx.driver_cuda}: its CUDA programs fail ('CUDA "
        "driver version is insufficient for CUDA runtime version')",
        *evidence,
        fix=Fix.of(
            Step.manual(f"on the host, install {driver}", Layer.DRIVER),
            OR,
            Step.manual(
                f"run an image of the CUDA the driver supports ({ctx.driver_cuda} or older)",
                Layer.JOB,
            ),
        ),
    )
