"""A Dockerfile as the facts `gpucheck dockerfile` judges: the final stage's base image (through
the stages it builds on), its environment, and its pip installs. The file is parsed by
dockerfile-parse (instructions, line continuations, ARG and ENV substitution); a RUN line is
split into commands with shlex, as the shell would, never searched as text."""

from __future__ import annotations

import io
import json
import shlex
from collections.abc import Iterator

from msgspec import Struct, field


class RecipeError(Exception):
    """The recipe cannot be read: one line for the user."""


class PipInstall(Struct):
    """One `pip install` of a RUN line."""

    line: int  # 1-based, where the RUN starts
    requirements: list[str]  # as written: "torch==2.5.1", "jax[cuda12]"
    index_urls: list[str] = field(default_factory=list)  # --index-url / --extra-index-url
    command: str = ""


class Stage(Struct):
    image: str  # FROM, with build arguments substituted
    name: str | None
    line: int
    env: dict[str, str] = field(default_factory=dict)  # set in this stage and those below it
    pips: list[PipInstall] = field(default_factory=list)
    apt_packages: list[str] = field(default_factory=list)
    base: str = ""  # the outside image the stage chain starts from


class Recipe(Struct):
    path: str
    final: Stage
    stages: list[Stage]


def split_image(image: str) -> tuple[str, str]:
    """repository, tag ("latest" where none); docker.io/ and library/ dropped."""
    name = image.split("@", 1)[0]
    repo, _, tag = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "")
    for prefix in ("docker.io/", "index.docker.io/", "library/"):
        repo = repo.removeprefix(prefix)
    return repo, tag or "latest"


def read_recipe(path: str, text: str) -> Recipe:
    from dockerfile_parse import DockerfileParser

    try:
        parser = DockerfileParser(fileobj=io.StringIO(text))
        structure = parser.structure
        contexts = parser.context_structure
        parents = parser.parent_images
    except Exception as exc:  # the parser's own errors have no common base class
        raise RecipeError(f"{path}: not a Dockerfile: {exc}") from None
    stages: list[Stage] = []
    froms = 0
    for item, context in zip(structure, contexts, strict=True):
        instruction = item["instruction"].upper()
        line = int(item["startline"]) + 1
        if instruction == "FROM":
            words = [w for w in item["value"].split() if not w.startswith("--")]  # --platform
            image = parents[froms] if froms < len(parents) else words[0]
            froms += 1
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            below = next((s for s in stages if s.name and s.name == image), None)
            stage = Stage(image, name, line, base=below.base if below else image)
            if below is not None:
                stage.env = dict(below.env)
                stage.pips = list(below.pips)
                stage.apt_packages = list(below.apt_packages)
            stages.append(stage)
        elif not stages:
            continue  # ARG before the first FROM: the parser substitutes it
        elif instruction == "ENV":
            stages[-1].env.update(context.line_envs)
        elif instruction == "RUN":
            _read_run(stages[-1], item["value"], line)
    if not stages:
        raise RecipeError(f"{path}: not a Dockerfile: no FROM instruction")
    return Recipe(path, stages[-1], stages)


def _commands(value: str) -> Iterator[list[str]]:
    """The simple commands of a RUN line (shell form), split as the shell would."""
    try:
        lexer = shlex.shlex(value, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return
    command: list[str] = []
    for word in words:
        if word and set(word) <= set(";&|"):
            if command:
                yield command
            command = []
        else:
            command.append(word)
    if command:
        yield command


def _exec_form(value: str) -> list[str] | None:
    """RUN ["pip", "install", "x"]: the JSON array it is, or None (the shell form)."""
    if not value.lstrip().startswith("["):
        return None
    try:
        words = json.loads(value)
    except ValueError:
        return None
    return words if isinstance(words, list) and all(isinstance(w, str) for w in words) else None


def _read_run(stage: Stage, value: str, line: int) -> None:
    exec_form = _exec_form(value)
    for words in [exec_form] if exec_form is not None else _commands(value):
        if words[:1] in (["apt-get"], ["apt"], ["yum"], ["dnf"]) and "install" in words:
            stage.apt_packages += [w for w in words[words.index("install") + 1 :] if w[:1] != "-"]
        pip = _pip_install(words, line)
        if pip is not None:
            stage.pips.append(pip)


def _pip_install(words: list[str], line: int) -> PipInstall | None:
    if "pip" in words:
        at = words.index("pip")
    elif "pip3" in words:
        at = words.index("pip3")
    else:
        return None
    rest = words[at + 1 :]
    if not rest or rest[0] != "install":
        return None
    requirements: list[str] = []
    indexes: list[str] = []
    skip_next = False
    takes_value = {
        "-r",
        "-c",
        "-e",
        "--requirement",
        "--constraint",
        "-f",
        "--find-links",
        "-t",
        "--target",
        "--prefix",
        "--root",
        "--trusted-host",
        "--cache-dir",
    }
    args = rest[1:]
    for i, word in enumerate(args):
        if skip_next:
            skip_next = False
            continue
        if word in ("-i", "--index-url", "--extra-index-url"):
            if i + 1 < len(args):
                indexes.append(args[i + 1])
            skip_next = True
        elif word.startswith(("--index-url=", "--extra-index-url=")):
            indexes.append(word.split("=", 1)[1])
        elif word in takes_value:
            skip_next = True
        elif not word.startswith("-"):
            requirements.append(word)
    return PipInstall(line, requirements, indexes, shlex.join(words))
