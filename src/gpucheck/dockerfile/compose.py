"""A Compose file as the facts `gpucheck dockerfile` judges, per service: its image or the
Dockerfile it builds, its GPU reservation (deploy.resources.reservations.devices), its runtime
and its environment. Read with PyYAML's safe loader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec import Struct, field

from gpucheck.dockerfile.recipe import RecipeError


class GpuRequest(Struct):
    driver: str | None
    count: str | None  # "all", or a number as text; None: neither count nor device_ids
    device_ids: list[str]
    capabilities: list[str]


class Service(Struct):
    name: str
    image: str | None = None
    dockerfile: str | None = None  # the Dockerfile it builds (a path), if any
    runtime: str | None = None
    gpus: list[GpuRequest] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)


def is_compose(path: str, text: str) -> bool:
    name = Path(path).name.lower()
    return name.endswith((".yml", ".yaml")) or name.startswith(("compose", "docker-compose"))


def read_compose(path: str, text: str) -> list[Service]:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise RecipeError(f"{path}: not valid YAML{line}") from None
    if not isinstance(data, dict) or not isinstance(data.get("services"), dict):
        raise RecipeError(f"{path}: not a Compose file: no services")
    folder = Path(path).parent
    return [
        _service(str(name), body or {}, folder, path) for name, body in data["services"].items()
    ]


def _service(name: str, body: Any, folder: Path, path: str) -> Service:
    if not isinstance(body, dict):
        raise RecipeError(f"{path}: services.{name} is not a mapping")
    service = Service(name, image=_text(body.get("image")), runtime=_text(body.get("runtime")))
    build = body.get("build")
    if isinstance(build, str):
        service.dockerfile = str(folder / build / "Dockerfile")
    elif isinstance(build, dict):
        context = folder / str(build.get("context", "."))
        service.dockerfile = str(context / str(build.get("dockerfile", "Dockerfile")))
    gpus = body.get("gpus")
    if gpus is not None:  # Compose's short form: gpus: all, or a list of device requests
        service.gpus.append(
            GpuRequest("nvidia", str(gpus) if not isinstance(gpus, list) else None, [], ["gpu"])
        )
    devices = _dig(body, "deploy", "resources", "reservations", "devices")
    for device in devices if isinstance(devices, list) else []:
        if not isinstance(device, dict):
            continue
        count = device.get("count")
        service.gpus.append(
            GpuRequest(
                _text(device.get("driver")),
                None if count is None else str(count),
                [str(d) for d in device.get("device_ids") or []],
                [str(c) for c in device.get("capabilities") or []],
            )
        )
    env = body.get("environment")
    if isinstance(env, dict):
        service.environment = {str(k): "" if v is None else str(v) for k, v in env.items()}
    elif isinstance(env, list):
        for item in env:
            key, _, value = str(item).partition("=")
            service.environment[key] = value
    return service


def _dig(body: dict[str, Any], *keys: str) -> Any:
    value: Any = body
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
