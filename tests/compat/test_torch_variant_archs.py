"""Every CUDA variant of every torch release line either has its GPU architectures in
compat/torch.toml (an [[arch]] row, cited) or the release row says, in arch_unknown, that it
has none and why: `gpucheck install` and the doctor never assume what a build carries."""

from __future__ import annotations

from gpucheck.compat import load


def test_every_variant_has_an_arch_list_or_a_stated_reason() -> None:
    torch = load().torch
    missing = []
    for rel in torch.releases:
        for cuda in rel.cuda_variants:
            if torch.arch(rel.version, cuda) is not None:
                continue
            said = rel.arch_unknown or ""
            listed = said.split(":", 1)[0].removeprefix("CUDA ").split(", ")
            if (
                cuda not in listed
                or len(said.split(":", 1)) < 2
                or not said.split(":", 1)[1].strip()
            ):
                missing.append(f"{rel.version} cu{cuda.replace('.', '')}")
    assert missing == []


def test_a_variant_with_an_arch_list_is_not_also_called_unknown() -> None:
    torch = load().torch
    both = [
        f"{rel.version} {cuda}"
        for rel in torch.releases
        if rel.arch_unknown
        for cuda in rel.arch_unknown.split(":", 1)[0].removeprefix("CUDA ").split(", ")
        if torch.arch(rel.version, cuda) is not None
    ]
    assert both == []


def test_the_variants_that_drop_older_gpus_keep_their_own_lists() -> None:
    # PR #146265: cu128 of 2.7 dropped sm_50/60/70; PR #157558 put sm_70 back for 2.8;
    # RELEASE.md 2.11 matrix: 12.8.1 = Turing(7.5) ... Blackwell; 13.0.x starts at Turing.
    torch = load().torch
    lists = {
        (line, cuda): torch.arch(line, cuda).sm  # type: ignore[union-attr]
        for line, cuda in [
            ("2.7", "12.6"),
            ("2.7", "12.8"),
            ("2.8", "12.8"),
            ("2.11", "12.8"),
            ("2.11", "13.0"),
        ]
    }
    assert lists == {
        ("2.7", "12.6"): ("5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0"),
        ("2.7", "12.8"): ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0"),
        ("2.8", "12.8"): ("7.0", "7.5", "8.0", "8.6", "9.0", "10.0", "12.0"),
        ("2.11", "12.8"): ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0"),
        ("2.11", "13.0"): ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0"),
    }
