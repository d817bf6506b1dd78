"""Host identity from a fabricated root: machine-id hashed (never copied), FQDN from
/etc/hosts, boot time from /proc/stat, the cloud instance from cloud-init's files or the EC2
Nitro asset tag, and the board serial only where it is a real one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_gpucheck

from gpucheck.probes.host import probe_host
from gpucheck.probes.system import probe_system

MACHINE_ID = "4f3c9b0e2a7d4e51b6c8d9e0f1a2b3c4"
# /proc/stat as Linux 5.15 writes it (cpu lines shortened); btime 1763715600 is
# 2025-11-21T09:00:00Z.
PROC_STAT = "cpu  2255 34 2290 22625563 6290 127 456 0 0 0\nintr 114930548 113199788 3\nctxt 1990473\nbtime 1763715600\nprocesses 2915\n"
# cloud-init's /run/cloud-init/instance-data.json (world-readable part), as on an EC2 host.
INSTANCE_DATA = '{"v1": {"cloud_name": "aws", "instance_id": "i-0af01c0123456789a", "region": "us-east-1"}, "ds": {}}'


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_machine_id_is_hashed_stably_and_never_copied(tmp_path: Path) -> None:
    write(tmp_path, "etc/machine-id", MACHINE_ID + "\n")
    facts = probe_host(tmp_path, "node-17")
    assert facts.host_id_source == "machine-id"
    assert facts.host_id is not None and facts.host_id.startswith("mid-")
    assert MACHINE_ID not in facts.host_id
    assert probe_host(tmp_path, "renamed").host_id == facts.host_id
    write(tmp_path, "etc/machine-id", "0" * 31 + "1\n")
    assert probe_host(tmp_path, "node-17").host_id != facts.host_id


def test_host_id_option_wins_over_machine_id(tmp_path: Path) -> None:
    write(tmp_path, "etc/machine-id", MACHINE_ID)
    facts = probe_host(tmp_path, "node-17", host_id="rack4-u12")
    assert (facts.host_id, facts.host_id_source) == ("rack4-u12", "option")


def test_fqdn_from_etc_hosts_without_dns(tmp_path: Path) -> None:
    write(
        tmp_path,
        "etc/hosts",
        "127.0.0.1\tlocalhost\n# comment node-17.example.org\n10.1.2.17 node-17.cluster.example.org node-17\n",
    )
    assert probe_host(tmp_path, "node-17").fqdn == "node-17.cluster.example.org"
    assert probe_host(tmp_path, "node-18").fqdn is None
    assert probe_host(tmp_path, "gpu1.lab.example.net").fqdn == "gpu1.lab.example.net"


def test_boot_time_from_proc_stat(tmp_path: Path) -> None:
    write(tmp_path, "proc/stat", PROC_STAT)
    assert probe_host(tmp_path, "n").boot_time == "2025-11-21T09:00:00+00:00"


def test_cloud_instance_from_cloud_init_instance_data(tmp_path: Path) -> None:
    write(tmp_path, "run/cloud-init/instance-data.json", INSTANCE_DATA)
    facts = probe_host(tmp_path, "n")
    assert (facts.cloud, facts.cloud_instance_id) == ("aws", "i-0af01c0123456789a")


def test_cloud_instance_from_the_nitro_asset_tag(tmp_path: Path) -> None:
    write(tmp_path, "sys/class/dmi/id/board_asset_tag", "i-0af01c0123456789a\n")
    facts = probe_host(tmp_path, "n")
    assert (facts.cloud, facts.cloud_instance_id) == ("aws", "i-0af01c0123456789a")


def test_cloud_init_without_a_cloud_is_no_instance(tmp_path: Path) -> None:
    write(tmp_path, "var/lib/cloud/data/instance-id", "iid-datasource-none\n")
    write(tmp_path, "run/cloud-init/instance-data.json", "{truncated")
    assert probe_host(tmp_path, "n").cloud_instance_id is None
    write(tmp_path, "var/lib/cloud/data/instance-id", "7d3c2a1e-openstack\n")
    assert probe_host(tmp_path, "n").cloud_instance_id == "7d3c2a1e-openstack"


def test_board_serial_only_when_real(tmp_path: Path) -> None:
    write(tmp_path, "sys/class/dmi/id/board_serial", "To be filled by O.E.M.\n")
    assert probe_host(tmp_path, "n").board_serial is None
    write(tmp_path, "sys/class/dmi/id/board_serial", "PCABC1234567\n")
    assert probe_host(tmp_path, "n").board_serial == "PCABC1234567"


def test_nothing_readable_is_all_unknown(tmp_path: Path) -> None:
    facts = probe_host(tmp_path, "n")
    assert (facts.host_id, facts.fqdn, facts.boot_time, facts.cloud_instance_id) == (
        None,
        None,
        None,
        None,
    )


def test_system_probe_carries_the_host_identity(tmp_path: Path) -> None:
    write(tmp_path, "etc/machine-id", MACHINE_ID)
    facts = probe_system(root=tmp_path, env={}, host_id=None)
    assert facts.host.host_id_source == "machine-id"


# --- the command ------------------------------------------------------------------------------


def test_snapshot_reads_the_identity_through_gpucheck_root(tmp_path: Path) -> None:
    write(tmp_path, "etc/machine-id", MACHINE_ID + "\n")
    write(tmp_path, "proc/stat", PROC_STAT)
    write(tmp_path, "run/cloud-init/instance-data.json", INSTANCE_DATA)
    result = run_gpucheck("snapshot", env={"GPUCHECK_ROOT": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    host = json.loads(result.stdout)["system"]["host"]
    assert host["host_id"] == probe_host(tmp_path, "x").host_id
    assert (host["boot_time"], host["cloud_instance_id"]) == (
        "2025-11-21T09:00:00+00:00",
        "i-0af01c0123456789a",
    )
    named = run_gpucheck("snapshot", "--host-id", "rack4-u12", env={"GPUCHECK_ROOT": str(tmp_path)})
    assert json.loads(named.stdout)["system"]["host"]["host_id"] == "rack4-u12"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["snapshot", "--host-id", ""], "--host-id: expected 1 to 256 printable characters"),
        (["doctor", "--from", "x.json", "--host-id", "a"], "--host-id probe this one"),
    ],
)
def test_bad_host_id_use_is_one_line(args: list[str], needle: str) -> None:
    result = run_gpucheck(*args)
    assert result.returncode == 2 and needle in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
