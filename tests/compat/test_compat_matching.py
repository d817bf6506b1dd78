"""The shared matcher (compat/matching.py): a pattern alternative is scanned only where the text
holds its leading literal, and that prefilter never loses a match the pattern itself finds."""

from __future__ import annotations

import pytest

from gpucheck.compat import load
from gpucheck.compat.matching import Lines, Matcher, anchor


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        (r"NVRM: Xid \([^)\n]{0,64}\): 79,", ("NVRM: Xid (", False)),
        (r"^[ \t]*PyTorch \S+ with CUDA", ("PyTorch ", False)),  # after optional blanks
        (r"^\s*Traceback", ("Traceback", False)),
        (r"(?i)CUDA runtime error \(3\)", ("cuda runtime error (3)", True)),
        (r"libcuda\.so(?:\.1)?: cannot", ("libcuda.so", False)),
        (r"abc?d", ("ab", False)),  # c may be absent
        (r"ab{2}", ("a", False)),
        (r"[Ee]rror", ("", False)),  # no literal first: always scanned
        (r"undefined symbol: _Z\w+", ("undefined symbol: _Z", False)),
    ],
)
def test_the_anchor_is_the_literal_every_match_starts_with(
    pattern: str, literal: tuple[str, bool]
) -> None:
    assert anchor(pattern) == literal


def test_the_prefilter_loses_no_example_of_the_catalog() -> None:
    compat = load()
    matcher = Matcher(compat.messages, compat.xids)
    for message in compat.messages.messages:
        for example in message.examples:
            found = {m.message.id for m in matcher.matches(Lines(example))}
            assert message.id in found, example
