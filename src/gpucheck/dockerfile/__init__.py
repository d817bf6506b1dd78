"""`gpucheck dockerfile`: a Dockerfile or Compose file judged against the machine it will run
on (recipe.py and compose.py read it; judge.py judges it), as the doctor's findings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpucheck.dockerfile.compose import is_compose, read_compose
from gpucheck.dockerfile.containers import judge_env, judge_service
from gpucheck.dockerfile.judge import Host, image_cuda, judge_base, judge_pips
from gpucheck.dockerfile.recipe import Recipe, RecipeError, Stage, read_recipe
from gpucheck.inputs import note_input

if TYPE_CHECKING:
    from gpucheck.compat import Compat
    from gpucheck.model.finding import Finding
    from gpucheck.model.snapshot import Snapshot

__all__ = ["RecipeError", "host_unknown", "judge_file"]

RECIPE_LIMIT = 4 << 20  # a Dockerfile or Compose file larger than this is not one


def judge_file(path: str, text: str, snapshot: Snapshot, compat: Compat) -> list[Finding]:
    host = Host(snapshot, compat)
    if is_compose(path, text):
        findings: list[Finding] = []
        for service in read_compose(path, text):
            where = f"{path}: services.{service.name}"
            findings.append(judge_service(host, where, service))
            stage = _service_stage(service.image, service.dockerfile, where)
            if stage is not None:
                stage.env.update(service.environment)
                for finding in _judge_stage(host, where, stage):
                    finding.title = f"service {service.name}: {finding.title}"
                    findings.append(finding)
        return findings
    return _judge_stage(host, path, read_recipe(path, text).final)


def host_unknown(snapshot: Snapshot) -> str | None:
    """Why the recipe could not be judged against the host, or None: without its driver, whether
    the image's CUDA and the framework builds run there is not known (a CI runner without a
    GPU), and a report saying "ready" would pass a recipe nobody checked."""
    if snapshot.nvml.driver_version is not None:
        return None
    return (
        "the host's driver is unknown (no NVML answer); judge the recipe against the machine "
        "it will run on: --from SNAPSHOT"
    )


def _service_stage(image: str | None, dockerfile: str | None, where: str) -> Stage | None:
    if dockerfile is not None:
        note_input(dockerfile)
        try:
            with open(dockerfile, encoding="utf-8") as stream:
                text = stream.read(RECIPE_LIMIT)
        except OSError as exc:
            raise RecipeError(f"{where}: cannot read {dockerfile}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise RecipeError(f"{where}: {dockerfile} is not UTF-8 text") from None
        recipe: Recipe = read_recipe(dockerfile, text)
        return recipe.final
    if image is not None:
        return Stage(image, None, 0, base=image)
    return None


def _judge_stage(host: Host, where: str, stage: Stage) -> list[Finding]:
    findings = [judge_base(host, where, stage)]
    _, cuda = image_cuda(host, stage.base, stage.env)
    pips = judge_pips(host, where, stage, cuda)
    if pips is not None:
        findings.append(pips)
    env = judge_env(where, stage.env, "ENV")
    if env is not None:
        findings.append(env)
    return findings
