"""What the sampling child of `gpucheck watch` (watch.py) and gpucheck's own process share:
the CSV rows (the child writes them; gpucheck writes the rows of a sample the child did not
finish) and the step page (the child marks where it is; gpucheck reads it when a call hangs).
Standard library only, Python 3.8+: the child imports this file from its own folder.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import mmap
import os
import re
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

STEP_SIZE = 7  # bytes of the shared page: a call's code, its GPU, the samples written (below)

# --- the CSV rows: the child writes them, so that a sample crosses to the log as text (no
# encoding and decoding of its values on the way); watch/log.py uses the same class for the
# rows it makes itself (a sample the child did not finish).

TEXT_FIELDS = frozenset(("timestamp", "uuid", "name", "pstate"))
FLOAT_FIELDS = frozenset(("power.draw", "power.limit"))
BITS_FIELD = "clocks_event_reasons.active"
IDENTITY = ("timestamp", "index")
# nvidia-smi writes these for values it cannot give.
NOT_SUPPORTED = "[N/A]"
ERROR_TEXT = {
    "GpuIsLost": "[GPU is lost]",
    "NoPermission": "[Insufficient Permissions]",
    "Unknown": "[Unknown Error]",
    "NotSupported": NOT_SUPPORTED,
}
# Control characters (C0, DEL, C1), the bidirectional controls and the line separators: the
# same set as report/text.py's printable(), which this script cannot import (a test holds them
# equal).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with every control character shown as an escape (\\x1b), never raw."""
    return _UNSAFE.sub(
        lambda m: (
            f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"
        ),
        text,
    )


def csv_text(text: str) -> str:
    """A text value as one CSV cell: control characters escaped, then quoted by the csv module
    when it holds the separator, a quote or spaces at its ends (RFC 4180: quotes doubled)."""
    text = printable(text)
    if "," in text or '"' in text or text != text.strip():
        out = io.StringIO()
        csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="").writerow([text])
        return out.getvalue()
    return text


class CsvRows:
    """The CSV rows of a sample at the cost of a hand-written loop: a row is one str.format
    call on a template made once (each field's format: str, "{:.2f}" for watts, "0x{:016x}"
    for the clock event bits; one template per set of failed fields, made when first seen);
    the timestamp's date and minute formatted once a minute; a text value (name, UUID: the
    same every sample) escaped and quoted once.

    A GPU's row is [index, values in the order of the fields without timestamp and index,
    {field: NVML error name} or None, the GPU's own error or None]."""

    TEXT_CACHE = 1024  # distinct texts remembered; past it the cache starts again

    def __init__(self, fields: list[str]) -> None:
        self.fields = fields
        self.names = [f for f in fields if f not in IDENTITY]
        self.slot = {name: k for k, name in enumerate(self.names)}
        self.text_slots = [k for k, name in enumerate(self.names) if name in TEXT_FIELDS]
        self._templates: dict[tuple[int, ...], str] = {}
        self._texts: dict[str, str] = {}
        self._minute = -1
        self._minute_text = ""

    def template(self, missing: tuple[int, ...]) -> str:
        """The row's format: argument 0 the timestamp, 1 the index, 2 + k the k-th value;
        a value in `missing` is an error text, written as it is."""
        made = self._templates.get(missing)
        if made is None:
            parts = []
            given = 0
            for name in self.fields:
                if name == "timestamp":
                    parts.append("{0}")
                elif name == "index":
                    parts.append("{1}")
                else:
                    spec = ""
                    if given not in missing and name in FLOAT_FIELDS:
                        spec = ":.2f"
                    elif given not in missing and name == BITS_FIELD:
                        spec = ":#018x"  # 0x and 16 hex digits, as nvidia-smi prints the mask
                    parts.append("{" + str(given + 2) + spec + "}")
                    given += 1
            made = self._templates[missing] = ", ".join(parts)
        return made

    def _text(self, value: Any) -> str:
        cell = self._texts.get(value)
        if cell is None:
            if len(self._texts) >= self.TEXT_CACHE:
                self._texts.clear()
            cell = self._texts[value] = csv_text(str(value))
        return cell

    def _missing(self, errors: dict[str, str] | None, error: str | None, name: str) -> str:
        why = (errors.get(name) if errors else None) or error
        return self._text(ERROR_TEXT.get(why or "NotSupported") or f"[{why}]")

    def stamp(self, when: float) -> str:
        """nvidia-smi's local time to the millisecond, as datetime.strftime would give it
        (microseconds rounded, then cut to milliseconds), the date and minute formatted once
        a minute: strftime is a tenth of a sample's cost."""
        whole = math.floor(when)
        micro = round((when - whole) * 1e6)
        if micro >= 1000000:
            whole, micro = whole + 1, micro - 1000000
        minute, second = divmod(whole, 60)
        if minute != self._minute:
            self._minute = minute
            self._minute_text = time.strftime("%Y/%m/%d %H:%M:", time.localtime(minute * 60))
        return f"{self._minute_text}{second:02d}.{micro // 1000:03d}"

    def __call__(self, when: float, gpus: list[list[Any]]) -> str:
        stamp = self.stamp(when)
        texts = self._texts
        templates = self._templates
        rows = []
        for index, values, errors, error in gpus:
            cells = list(values)
            for k in self.text_slots:
                value = cells[k]
                if value is not None:
                    cells[k] = texts.get(value) or self._text(value)
            missing: tuple[int, ...] = ()
            if error:  # the GPU is gone: whatever it did not answer
                missing = tuple(k for k, value in enumerate(cells) if value is None)
            elif errors:  # a value is None only when its call failed
                slot = self.slot
                missing = tuple(slot[f] for f in errors if f in slot)
            for k in missing:
                cells[k] = self._missing(errors, error, self.names[k])
            try:
                rows.append(
                    (templates.get(missing) or self.template(missing)).format(stamp, index, *cells)
                )
            except (TypeError, ValueError):  # a value of an unexpected type: said as it is
                rows.append(self.template(tuple(range(len(cells)))).format(stamp, index, *cells))
        rows.append("")
        return "\n".join(rows)


# --- the step page ---------------------------------------------------------------------------

# What the page can say, by code: byte 0 of the page is the code of the call the child is in,
# bytes 1-2 the GPU's index + 1 (0: none), big-endian; bytes 3-6 the samples this child wrote
# to the log itself (little-endian), by which the parent follows it without a message each.
# Two byte stores per call, where writing the name cost a tenth of a sample. session.py reads
# the page with this table.
STEP_NAMES = (
    "",
    "nvmlInit",
    "nvmlDeviceGetCount",
    "nvmlSystemGetDriverVersion",
    "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetName",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetPowerManagementLimit",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrPcieLinkGeneration",
    "nvmlDeviceGetCurrPcieLinkWidth",
    "nvmlDeviceGetFanSpeed",
    "nvmlDeviceGetPerformanceState",
    "nvmlDeviceGetTotalEccErrors",
    "sleep",
    "write",
)
STEP_CODE = {name: code for code, name in enumerate(STEP_NAMES)}


def step_text(page: bytes) -> str | None:
    """What a page says, for the parent: "nvmlDeviceGetPowerUsage gpu=1"; None: nothing yet."""
    code, gpu = page[0], page[1] << 8 | page[2]
    if not code:
        return None
    name = STEP_NAMES[code] if code < len(STEP_NAMES) else f"step {code}"
    return f"{name} gpu={gpu - 1}" if gpu else name


class Steps:
    """Where the child is: the shared page when the parent gave one, else stderr lines."""

    def __init__(self, fd: int | None) -> None:
        self.page: mmap.mmap | None = None
        self.gpu: int | None = None
        if fd is not None:
            with contextlib.suppress(OSError, ValueError):
                self.page = mmap.mmap(fd, STEP_SIZE)

    def at_gpu(self, gpu: int | None) -> None:
        """The GPU the next calls are about (None: no GPU)."""
        self.gpu = gpu
        if self.page is not None:
            number = 0 if gpu is None else gpu + 1
            self.page[1] = number >> 8 & 0xFF
            self.page[2] = number & 0xFF

    def mark(self, code: int) -> None:
        if self.page is not None:
            self.page[0] = code
        else:
            name = STEP_NAMES[code]
            text = name if self.gpu is None else f"{name} gpu={self.gpu}"
            with contextlib.suppress(OSError):
                os.write(2, f"@ {text}\n".encode())

    def __call__(self, name: str, gpu: int | None = None) -> None:
        self.at_gpu(gpu)
        self.mark(STEP_CODE[name])

    def wrote(self, samples: int) -> None:
        if self.page is not None:
            self.page[3:7] = (samples & 0xFFFFFFFF).to_bytes(4, "little")
