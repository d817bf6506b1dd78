"""NVIDIA's Xid catalog (compat/xids.toml): every Xid code NVIDIA lists, its description and
its two resolution buckets, and what gpucheck tells a person for each bucket. The doctor's
kernel-log checks and `gpucheck explain` read every `NVRM: Xid (PCI:...): N, ...` line through
it: one pattern finds the line, the row of N says what it means and what to do."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from msgspec import Struct

from gpucheck.compat.messages import LAYERS, SEVERITIES, Message
from gpucheck.compat.rows import CompatError, Row, Rows
from gpucheck.model.fix import StepKind

# "NVRM: Xid (PCI:0000:5a:00): 79, GPU has fallen off the bus." and, on old drivers,
# "NVRM: Xid (0000:03:00): 14, Channel 00000001" (the catalog page's own examples). Bounded
# to the line, so a text repeating its prefix is never scanned to its end from each one.
XID_LINE = r"NVRM: Xid \(([^)\n]{0,64})\): (\d{1,4}),"
# The address a line prints: domain:bus:device ("0000:5a:00"), a function maybe after it.
_ADDRESS = re.compile(r"(?:PCI:)?([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.[0-7])?")
GPU_PLACEHOLDER = "<GPU>"  # in a bucket's command: the GPU's -i argument, filled or never run
_NOT_GIVEN = ("", "N/A; Unused", "N/A Informational only regarding another Xid")
UNUSED = "Unused"


def nvidia_smi_bus_id(address: str) -> str | None:
    """An Xid line's address as nvidia-smi's -i takes a PCI bus id ("0000:5a:00" ->
    "00000000:5a:00.0"), or None where it is not one: the one GPU it names, never all."""
    found = _ADDRESS.fullmatch(address.strip())
    if found is None:
        return None
    domain, bus, device = found.groups()
    return f"{domain.rjust(8, '0')}:{bus}:{device}.0"


def line_addresses(lines: Iterable[str]) -> list[str]:
    """The addresses the Xid lines among `lines` print, each once, in order."""
    found = (re.search(XID_LINE, line) for line in lines)
    return list(dict.fromkeys(m.group(1).removeprefix("PCI:") for m in found if m))


def fill_gpu(command: str, targets: list[str]) -> str | None:
    """`command` with its -i placeholder filled by these GPUs (indices or bus ids), or None
    where it has one and no GPU is known: then it is no command to run."""
    if GPU_PLACEHOLDER not in command:
        return command
    return command.replace(GPU_PLACEHOLDER, ",".join(targets)) if targets else None


class XidBucket(Struct, frozen=True):
    """What gpucheck says for one of NVIDIA's resolution buckets (an immediate action)."""

    name: str
    severity: str
    layer: str
    step: str
    action: str
    command: str | None
    source: str


class Xid(Struct, frozen=True):
    """One row of NVIDIA's catalog, with gpucheck's optional reading of it."""

    code: int
    mnemonic: str
    description: str
    applies_to: tuple[str, ...]
    immediate: str  # NVIDIA's bucket, as printed; "" where the catalog gives none
    investigatory: str
    note: str | None  # the catalog's trigger text, in our words
    title: str | None
    cause: str | None
    layer: str | None
    severity: str | None
    also: str | None  # the same event's other line, as a regular expression
    examples: tuple[str, ...]
    examples_from: str | None
    source: str

    @property
    def unused(self) -> bool:
        """Listed as unused and as applying to none of A100, H100, B100, GB200."""
        return self.description == UNUSED and not self.applies_to


def line_pattern(code: int) -> str:
    """The pattern of this code's Xid lines only (Xid 13 is not Xid 131)."""
    return XID_LINE.replace(r"(\d{1,4})", str(code))


class XidCatalog(Struct):
    xids: dict[int, Xid]
    buckets: dict[str, XidBucket]
    source: str
    data_as_of: str = ""

    @classmethod
    def from_data(cls, path: Path, data: dict[str, Any]) -> XidCatalog:
        rows = Rows(path, data)
        buckets = {b.name: b for b in (_bucket(r) for r in rows.table("bucket"))}
        xids: dict[int, Xid] = {}
        for row in rows.table("xid"):
            xid = _xid(row, buckets)
            if xid.code in xids:
                raise CompatError(f"{row.where}: Xid {xid.code} appears twice")
            xids[xid.code] = xid
        return cls(xids, buckets, rows.text("source"), rows.text("data_as_of"))

    def get(self, code: int) -> Xid | None:
        return self.xids.get(code)

    def bucket(self, xid: Xid) -> XidBucket | None:
        return self.buckets.get(xid.immediate)

    def severity(self, xid: Xid) -> str:
        bucket = self.bucket(xid)
        return xid.severity or (bucket.severity if bucket else "warn")

    def title(self, xid: Xid) -> str:
        if xid.title:
            return xid.title
        if xid.unused:
            return f"Xid {xid.code}: {xid.mnemonic} (listed as unused on A100 and newer GPUs)"
        return f"Xid {xid.code}: {xid.description}"

    def action(self, xid: Xid) -> str:
        """The immediate action in a sentence, and NVIDIA's investigatory one for an Xid that
        comes back."""
        bucket = self.bucket(xid)
        first = bucket.action if bucket else (xid.note or "NVIDIA's catalog gives no action.")
        if xid.investigatory in _NOT_GIVEN or xid.investigatory == xid.immediate:
            return first
        return f"{first} If it comes back, NVIDIA's investigatory action: {xid.investigatory}."

    def source_of(self, xid: Xid) -> str:
        buckets = (
            f"immediate action {xid.immediate or 'none given'}, "
            f"investigatory action {xid.investigatory or 'none given'}"
        )
        page = xid.source.split(" ", 1)[0]
        cited = f"{page} (Xid {xid.code}, {xid.mnemonic}, '{xid.description}': {buckets})"
        return cited + (f"; examples from {xid.examples_from}" if xid.examples_from else "")

    def message(self, code: int) -> Message:
        """The Xid as an entry of the message catalog, so explain reports it as any other."""
        xid = self.get(code)
        if xid is None:
            return _unknown(code, self)
        bucket = self.bucket(xid)
        described = (
            f"{xid.mnemonic}: NVIDIA lists this code as unused on A100 and newer GPUs (it may "
            "come from a V100 or older GPU)."
            if xid.unused
            else f"{xid.description} ({xid.mnemonic})."
        )
        cause = xid.cause or xid.note or described
        if xid.cause and xid.note:
            cause += f" NVIDIA: {xid.note}"
        return Message(
            id=f"xid.{code}",
            layer=xid.layer or (bucket.layer if bucket else "gpus"),
            severity=self.severity(xid),
            pattern=line_pattern(code) + (f"|{xid.also}" if xid.also else ""),
            title=self.title(xid),
            cause=cause,
            fix=self.action(xid),
            step=bucket.step if bucket else StepKind.INFO.value,
            command=bucket.command if bucket else None,
            decide=None,
            examples=xid.examples or (f"NVRM: Xid (PCI:0000:01:00): {code}, pid=1",),
            source=self.source_of(xid),
        )

    def others(self) -> list[tuple[int, str]]:
        """(code, pattern) of the lines that name an Xid without its usual prefix."""
        return [(x.code, x.also) for x in self.xids.values() if x.also]


def _unknown(code: int, catalog: XidCatalog) -> Message:
    return Message(
        id=f"xid.{code}",
        layer="gpus",
        severity="warn",
        pattern=line_pattern(code),
        title=f"Xid {code}: not in NVIDIA's catalog as of {catalog.data_as_of}",
        cause="An Xid this data does not know: a newer driver's, or a GPU older than A100.",
        fix="Look it up in NVIDIA's Xid catalog (a newer edition may list it).",
        step=StepKind.INFO.value,
        command=None,
        decide=None,
        examples=(f"NVRM: Xid (PCI:0000:01:00): {code}, pid=1",),
        source=catalog.source,
    )


def _check(row: Row, key: str, value: str | None, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        raise CompatError(f"{row.where}: {key} = {value!r} is not one of {', '.join(allowed)}")


def _bucket(row: Row) -> XidBucket:
    bucket = row.struct(XidBucket)
    _check(row, "severity", bucket.severity, SEVERITIES)
    _check(row, "layer", bucket.layer, LAYERS)
    _check(row, "step", bucket.step, tuple(kind.value for kind in StepKind))
    return bucket


def _xid(row: Row, buckets: dict[str, XidBucket]) -> Xid:
    xid = row.struct(Xid, optional=("applies_to", "examples"))
    if not 0 < xid.code < 10000:
        raise CompatError(f"{row.where}: code = {xid.code} is not an Xid code")
    if xid.immediate and xid.immediate not in buckets:
        raise CompatError(f"{row.where}: immediate = {xid.immediate!r} is not a [[bucket]]")
    if not xid.immediate and xid.severity is None:
        raise CompatError(f"{row.where}: a row without an immediate bucket needs a severity")
    _check(row, "severity", xid.severity, SEVERITIES)
    _check(row, "layer", xid.layer, LAYERS)
    if xid.also is not None:
        try:
            re.compile(xid.also)
        except re.error as exc:
            raise CompatError(f"{row.where}: also is not a regular expression: {exc}") from None
    return xid
