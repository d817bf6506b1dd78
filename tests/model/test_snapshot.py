"""Snapshots round-trip, and reading one is parsing untrusted input: clear errors, never a
traceback, for anything that is not a snapshot of a readable schema version."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import builders

from gpucheck.model.snapshot import SCHEMA_VERSION, Snapshot, SnapshotError, dumps, loads


def test_round_trip_keeps_every_fact() -> None:
    snap = builders.node(
        [builders.a100_mig(0), builders.with_process(builders.h100(1), 4242, "python", 1000)]
    )
    again = loads(dumps(snap))
    assert again == snap
    assert again.nvml.gpus[0].mig_devices[3].uuid == "MIG-00000003-1111-2222-3333-444444444444"
    assert again.nvml.gpus[1].processes is not None
    assert again.nvml.gpus[1].processes[0].pid == 4242


def test_a_whole_report_is_accepted_as_a_snapshot() -> None:
    snap = builders.h100_node(2)
    report = {"schema_version": SCHEMA_VERSION, "findings": [], "snapshot": snap.to_dict()}
    assert loads(json.dumps(report)) == snap


def test_newer_minor_version_is_read_and_unknown_fields_ignored() -> None:
    data = builders.h100_node(1).to_dict()
    major = SCHEMA_VERSION.split(".")[0]
    data["schema_version"] = f"{major}.99"
    data["nvml"]["gpus"][0]["nvlink_state"] = {"links": 18}
    data["frameworks"] = {"torch": {}}
    snap = Snapshot.from_dict(data)
    assert snap.nvml.gpus[0].name == "NVIDIA H100 80GB HBM3"


def test_missing_optional_sections_are_unknown_not_errors() -> None:
    snap = loads(json.dumps({"schema_version": SCHEMA_VERSION}))
    assert snap.nvml.driver_version is None
    assert snap.nvml.gpus == []


def test_other_major_version_is_refused_with_a_clear_message() -> None:
    data = builders.h100_node(1).to_dict()
    data["schema_version"] = f"{int(SCHEMA_VERSION.split('.')[0]) + 1}.0"
    with pytest.raises(SnapshotError, match=r"schema .* is not readable by gpucheck"):
        Snapshot.from_dict(data)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not valid JSON"),
        ("{", "not valid JSON"),
        ("[]", "expected a JSON object"),
        ('{"nvml": {}}', "no valid schema_version"),
        ('{"schema_version": 1}', "no valid schema_version"),
        (
            '{"schema_version": "1.0", "nvml": {"gpus": [{"index": "0"}]}}',
            r"nvml\.gpus\[0\]\.index: expected integer, got string",
        ),
        (
            '{"schema_version": "1.0", "nvml": {"gpus": [{"name": "x"}]}}',
            r"gpus\[0\]\.index: is required",
        ),
        (
            '{"schema_version": "1.0", "system": {"env": {"A": 1}}}',
            r"system\.env\[\.\.\.\]: expected string",
        ),
        (
            '{"schema_version": "1.0", "probes": [{"name": "nvml", "status": "ok", "duration_ms": NaN}]}',
            "not valid JSON",
        ),
        ("[" * 100000, "not valid JSON"),
    ],
)
def test_malformed_snapshots_give_one_clear_error(text: str, message: str) -> None:
    with pytest.raises(SnapshotError, match=message) as info:
        loads(text)
    assert "\n" not in str(info.value)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {"schema_version": st.sampled_from([SCHEMA_VERSION, "1.7", "0.1", "x"])},
        optional={
            "system": JSON,
            "nvml": JSON,
            "cuda": JSON,
            "cudnn": JSON,
            "probes": JSON,
            "created_at": JSON,
        },
    )
)
def test_hostile_json_yields_a_snapshot_or_a_snapshot_error(data: dict[str, object]) -> None:
    try:
        Snapshot.from_dict(data)
    except SnapshotError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_escapes_as_another_exception(text: str) -> None:
    with contextlib.suppress(SnapshotError):
        loads(text)


def _leaf_paths(value: object, path: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaf_paths(v, (*path, k))] or [path]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaf_paths(v, (*path, i))] or [path]
    return [path]


def _set(root: object, path: tuple[object, ...], value: object) -> None:
    for key in path[:-1]:
        root = root[key]  # type: ignore[index]
    root[path[-1]] = value  # type: ignore[index]


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_any_corrupted_field_is_refused_or_diagnosed_without_a_check_breaking(
    data: st.DataObject,
) -> None:
    """Replace one fact of a real-looking snapshot by any JSON value: reading it either fails
    with a SnapshotError, or the snapshot is well typed and every check copes with it."""
    from gpucheck import checks
    from gpucheck.model.finding import Status

    snap = builders.node([builders.a100_mig(0), builders.rtx_3060(1)])
    snap.cudnn.libraries = [builders.library("cudnn", "/usr/lib/libcudnn.so.9", "9.1.0")]
    base = snap.to_dict()
    path = data.draw(
        st.sampled_from([p for p in _leaf_paths(base) if p and p[0] != "schema_version"])
    )
    _set(base, path, data.draw(JSON))
    try:
        loaded = Snapshot.from_dict(base)
    except SnapshotError:
        return
    findings = checks.run(checks.Context(loaded))
    broken = [f.title for f in findings if f.status == Status.ERROR]
    assert not broken, (path, broken)


def test_unicode_digits_and_huge_numbers_are_refused_or_diagnosed() -> None:
    """Well-typed but odd values found by review: Unicode digits where CUDA expects ASCII ones,
    integers no driver reports, integer literals longer than Python converts."""
    from gpucheck import checks
    from gpucheck.model.finding import Status

    snap = builders.h100_node(2)
    snap.system.env["CUDA_VISIBLE_DEVICES"] = "²"
    found = {f.id: f for f in checks.run(checks.Context(snap))}
    assert found["system.cuda-visible-devices"].status is Status.FAIL
    assert all(f.status is not Status.ERROR for f in found.values())
    data = builders.h100_node(1).to_dict()
    data["nvml"]["gpus"][0]["memory_total"] = 10**400
    with pytest.raises(SnapshotError, match="integer out of range"):
        Snapshot.from_dict(data)
    with pytest.raises(SnapshotError, match="out of range"):
        loads('{"schema_version": "1.0", "nvml": {"device_count": ' + "9" * 5000 + "}}")


@pytest.mark.parametrize(
    ("where", "field", "value"),
    [
        (("nvml", "gpus", 0), "ecc_uncorrected_volatile", -1),  # judged a FAIL before
        (("nvml", "gpus", 0), "memory_total", -5),  # judged "memory free" before
        (("nvml",), "cuda_driver_version", -1),
        (("nvml", "gpus", 0), "pcie_width_current", -16),
    ],
)
def test_negative_counts_and_sizes_are_refused(
    where: tuple[str | int, ...], field: str, value: int
) -> None:
    data = builders.h100_node(1).to_dict()
    record: Any = data
    for key in where:
        record = record[key]
    record[field] = value
    with pytest.raises(SnapshotError) as info:
        Snapshot.from_dict(data)
    said = str(info.value)
    assert said.startswith("invalid snapshot: nvml.")
    assert said.endswith(f".{field}: must not be negative (a count or size)")


def test_a_negative_temperature_or_return_code_is_still_read() -> None:
    # NVML's signed temperature API (nvmlTemperature_t) and nvmlReturn_t are not counts.
    data = builders.h100_node(1).to_dict()
    data["nvml"]["gpus"][0]["temperature_c"] = -3
    assert Snapshot.from_dict(data).nvml.gpus[0].temperature_c == -3
