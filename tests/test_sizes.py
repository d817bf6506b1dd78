"""One reading of a size for every option (--min-memory, --gpu-memory, --rotate): bare letters
and IEC units binary, as nvidia-smi counts; SI units decimal, as datasheets count."""

from __future__ import annotations

import pytest

from gpucheck.inputs import UserError, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4K", 4096),
        ("100M", 104_857_600),
        ("1G", 1_073_741_824),
        ("1GiB", 1_073_741_824),
        ("1GB", 1_000_000_000),
        ("80GB", 80_000_000_000),
        ("16384MiB", 17_179_869_184),
        ("2t", 2_199_023_255_552),
        ("4096", 4096),
    ],
)
def test_sizes(text: str, expected: int) -> None:
    assert parse_size(text, "--rotate") == expected


def test_an_80gb_datasheet_card_meets_80gb_but_not_80g() -> None:
    # An H100 80GB reports 81559 MiB through NVML (shared/nvsmi captures).
    h100 = 81559 * 1024 * 1024
    assert parse_size("80GB") <= h100 < parse_size("80G")


@pytest.mark.parametrize("text", ["nan", "inf", "-1G", "0", "1.5.5G", "10 parsecs", ""])
def test_bad_sizes_name_the_option(text: str) -> None:
    with pytest.raises(UserError, match=r"^--min-memory: "):
        parse_size(text, "--min-memory")
