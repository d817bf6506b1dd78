"""Who this machine is, for joining a fleet's reports: a stable id, FQDN, boot time, the cloud
instance id and the board serial, each read from local files (under `root`, like the rest of
the system probe). Nothing here asks the network: no DNS, no cloud metadata service, so
nothing can hang.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from datetime import datetime, timezone
from pathlib import Path

from gpucheck.model.snapshot import HostIdentity
from gpucheck.probes.files import LIMIT, read_text

# machine-id(5) is confidential; systemd derives per-application ids from it with
# HMAC-SHA256 keyed by the machine id (sd_id128_get_machine_app_specific(3)): same here, so
# a report identifies the host to a fleet without disclosing the machine id itself.
APP_KEY = b"gpucheck host id"
DMI = "sys/class/dmi/id"
# Values firmware writes where nobody filled the field in: no identity.
PLACEHOLDERS = re.compile(
    r"^(|0+|none|n/?a|not (specified|applicable|available)|default string|"
    r"to be filled by o\.?e\.?m\.?|system serial number|chassis serial number|123456789)$",
    re.I,
)


def _read(path: Path, limit: int = LIMIT) -> str | None:
    text = read_text(path, limit)
    return None if text is None else text.strip()


def _real(value: str | None) -> str | None:
    return None if value is None or PLACEHOLDERS.match(value.strip()) else value.strip()


def host_id_from_machine_id(machine_id: str) -> str:
    digest = hmac.new(machine_id.strip().lower().encode(), APP_KEY, hashlib.sha256).hexdigest()
    return f"mid-{digest[:32]}"


def probe_host(root: Path, hostname: str, host_id: str | None = None) -> HostIdentity:
    facts = HostIdentity(fqdn=fqdn(root, hostname), boot_time=boot_time(root))
    if host_id:
        facts.host_id, facts.host_id_source = host_id, "option"
    else:
        for rel in ("etc/machine-id", "var/lib/dbus/machine-id"):
            mid = _read(root / rel)
            if mid and re.fullmatch(r"[0-9a-fA-F]{32}", mid):
                facts.host_id, facts.host_id_source = host_id_from_machine_id(mid), "machine-id"
                break
    facts.cloud, facts.cloud_instance_id = cloud_instance(root)
    # board_serial is readable by root only on most systems: unknown otherwise.
    facts.board_serial = _real(_read(root / DMI / "board_serial"))
    return facts


def fqdn(root: Path, hostname: str) -> str | None:
    """The hostname if it is qualified, else the first qualified name /etc/hosts gives it (what
    `hostname -f` finds first on most systems), else unknown. Not DNS: a broken resolver would
    hang the probe."""
    if "." in hostname:
        return hostname
    for line in (_read(root / "etc/hosts") or "").splitlines():
        names = line.split("#", 1)[0].split()[1:]
        if hostname and hostname in names:
            qualified = [n for n in names if n.startswith(hostname + ".")]
            if qualified:
                return qualified[0]
    return None


def boot_time(root: Path) -> str | None:
    """From /proc/stat's btime (seconds since the epoch): with the host id, it tells a reboot
    apart from the same boot reported twice."""
    match = re.search(r"^btime\s+(\d+)$", _read(root / "proc/stat", 1 << 20) or "", re.M)
    if not match:
        return None
    moment = datetime.fromtimestamp(int(match.group(1)), timezone.utc)
    return moment.isoformat(timespec="seconds")


def cloud_instance(root: Path) -> tuple[str | None, str | None]:
    """(provider, instance id) from what is on disk: cloud-init's world-readable instance data
    (any provider), its instance-id file, or the EC2 Nitro board asset tag."""
    text = _read(root / "run/cloud-init/instance-data.json", 1 << 22)
    if text:
        try:
            v1 = json.loads(text).get("v1", {})
        except (ValueError, AttributeError):
            v1 = {}
        if isinstance(v1, dict) and isinstance(v1.get("instance_id"), str):
            cloud = v1.get("cloud_name")
            return (cloud if isinstance(cloud, str) else None), v1["instance_id"]
    asset = _read(root / DMI / "board_asset_tag") or ""
    if re.fullmatch(r"i-[0-9a-f]{8,17}", asset):
        return "aws", asset
    instance = _real(_read(root / "var/lib/cloud/data/instance-id"))
    # cloud-init's NoCloud fallback writes "iid-datasource-none" where there is no cloud.
    if instance and instance != "iid-datasource-none":
        return None, instance
    return None, None
