"""A fix as data: the ordered steps that repair what a finding found.

Each step is a sentence for a person and, where one exists, the exact command with the tool it
is for (pip, conda, apt, a shell, an environment variable), the distributions it moves from one
version to another and the GPUs it touches. A step no command can do says what it is instead
(`manual`, `reboot`, `hardware`, `info`; an `info` step may carry a command that only reads,
such as a re-check). Steps of `option` 0 are the recommended way; a higher
option is another way to the same end. So a script runs the commands, and a later planner can
merge the fixes of many findings into one ordered, deduplicated plan (each fix's steps in their
order, across fixes by `layer`; then by the distributions each step changes), without reading
prose.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Literal

from msgspec import Struct, field
from msgspec.structs import replace

from gpucheck.model.layers import Layer
from gpucheck.model.shell import quote
from gpucheck.model.types import GpuRef


class StepKind(str, enum.Enum):
    COMMAND = "command"  # run `command` with `tool`
    MANUAL = "manual"  # a person's change no one command makes: a config file, the job, a BIOS
    REBOOT = "reboot"  # restart the machine (or the VM / WSL)
    HARDWARE = "hardware"  # physical work: reseat, cooling, power, replace the GPU
    INFO = "info"  # nothing to change: what to look at, read or report (a command only reads)


class Tool(str, enum.Enum):
    """What a step's command is for: the installer or platform that runs it."""

    PIP = "pip"
    UV = "uv"
    CONDA = "conda"
    APT = "apt"
    DNF = "dnf"
    SHELL = "shell"  # a POSIX shell command (nvidia-smi, modprobe, systemctl, ...)
    ENV = "env"  # set or unset an environment variable (`export X=Y`, `unset X`)
    POWERSHELL = "powershell"  # Windows


class Change(Struct, frozen=True):
    """One package a step installs, replaces or removes (a Python distribution for pip/uv/conda
    steps, a system package for apt/dnf steps)."""

    name: str
    from_version: str | None = None  # installed now; null: not installed (or unknown)
    to_version: str | None = None  # installed after the step; null: removed, or the installer picks
    requirement: str | None = None  # what the command asks for ("<2", ">=12.6.85"), if not exact
    remove: bool = False


OR: Literal["or"] = "or"  # in Fix.of(...): the steps after it are another way to the same end


class Step(Struct):
    """One thing to do: a command to run, or what a person must do where no command does it."""

    kind: StepKind
    text: str  # the step, for a person; a command is not repeated in it
    command: str | None = None  # exactly what to run (kind "command"; "info": it only reads)
    tool: Tool | None = None
    changes: list[Change] = field(default_factory=list)
    gpus: list[GpuRef] = field(default_factory=list)  # the GPUs it acts on (empty: none, or all)
    environment: str | None = None  # the Python interpreter a pip/uv/conda step is for
    layer: Layer | None = None  # the runner fills in the check's own layer where a check leaves it
    option: int = 0  # 0: the recommended way; n: the nth other way to the same end

    def sentence(self) -> str:
        if self.command is None:
            return self.text
        return f"{self.text}: `{self.command}`" if self.text else f"`{self.command}`"

    # --- the constructors checks use ------------------------------------------------------

    @classmethod
    def run(
        cls,
        text: str,
        command: str,
        tool: Tool = Tool.SHELL,
        *,
        changes: Iterable[Change] = (),
        gpus: Iterable[GpuRef] = (),
        environment: str | None = None,
        layer: Layer | None = None,
    ) -> Step:
        """A step that is a command: `text` says why, `command` is exactly what to run."""
        return cls(
            StepKind.COMMAND, text, command, tool, list(changes), list(gpus), environment, layer
        )

    @classmethod
    def set_env(
        cls, name: str, value: str, text: str = "", layer: Layer | None = None, *, then: str = ""
    ) -> Step:
        """`export NAME=VALUE`, the value one shell word whatever it holds (a path from a
        snapshot is data); `then`, this code's own shell text after it (":$PATH"), never a
        fact."""
        word = quote(value) if value else ""
        return cls.run(text, f"export {quote(name)}={word}{then}", Tool.ENV, layer=layer)

    @classmethod
    def prepend_loader_path(
        cls, folders: Iterable[str], text: str = "", layer: Layer | None = None
    ) -> Step:
        """Put `folders` first on LD_LIBRARY_PATH, before what the loader would take."""
        return cls.set_env(
            "LD_LIBRARY_PATH", ":".join(folders), text, layer, then=":$LD_LIBRARY_PATH"
        )

    @classmethod
    def unset_env(cls, name: str, text: str = "", layer: Layer | None = None) -> Step:
        return cls.run(text, f"unset {quote(name)}", Tool.ENV, layer=layer)

    @classmethod
    def manual(cls, text: str, layer: Layer | None = None, gpus: Iterable[GpuRef] = ()) -> Step:
        return cls(StepKind.MANUAL, text, gpus=list(gpus), layer=layer)

    @classmethod
    def reboot(cls, text: str = "reboot") -> Step:
        return cls(StepKind.REBOOT, text, layer=Layer.SYSTEM)

    @classmethod
    def hardware(cls, text: str, gpus: Iterable[GpuRef] = ()) -> Step:
        return cls(StepKind.HARDWARE, text, gpus=list(gpus), layer=Layer.GPUS)

    @classmethod
    def info(cls, text: str, layer: Layer | None = None, command: str | None = None) -> Step:
        """Nothing to change: what to look at, or a shell `command` that only reads (a re-check),
        so a plan neither labels it a change nor applies it."""
        return cls(StepKind.INFO, text, command, Tool.SHELL if command else None, layer=layer)


class Fix(Struct):
    """How to repair what a finding found."""

    text: str  # the whole remedy, for a person: the steps' sentences, in order
    steps: list[Step] = field(default_factory=list)

    @classmethod
    def of(cls, *parts: Step | Literal["or"] | None) -> Fix:
        """A fix of these steps, in order; OR starts another way (None parts are left out)."""
        steps: list[Step] = []
        option = 0
        for part in parts:
            if part is None:
                continue
            if part == OR:
                option += 1 if steps else 0
                continue
            assert isinstance(part, Step)
            steps.append(replace(part, option=option))  # a copy: steps are shared between fixes
        return cls(render(steps), steps)

    @property
    def commands(self) -> list[str]:
        """Every step's command, in order (of every option: a plan takes option 0's steps)."""
        return [s.command for s in self.steps if s.command is not None]

    @classmethod
    def joined(cls, fixes: Iterable[Fix]) -> Fix | None:
        """Several findings' fixes as one (e.g. one per environment): their steps in order, each
        once."""
        texts: list[str] = []  # each after the first starts lower case: one sentence
        steps: list[Step] = []
        for fix in fixes:
            text = _lower_first(fix.text)
            if text not in texts:
                texts.append(text)
            steps += [s for s in fix.steps if s not in steps]
        joined = "; ".join(texts)
        return cls(joined[:1].upper() + joined[1:], steps) if texts else None


def _lower_first(text: str) -> str:
    """A sentence's first word in lower case, to go on after '; ' (but not a name: "PID",
    "NVIDIA", "TensorFlow" keep theirs)."""
    first = text.split(" ", 1)[0]
    if first[:1].isupper() and first[1:] == first[1:].lower():
        return text[:1].lower() + text[1:]
    return text


def render(steps: list[Step]) -> str:
    """The steps as one text: '; ' between steps, '; or ' before another way."""
    out = ""
    for i, step in enumerate(steps):
        said = step.sentence()
        if i == 0:
            out = said[:1].upper() + said[1:]
        elif step.option != steps[i - 1].option:
            out += "; or " + _lower_first(said)
        else:
            out += "; " + said
    return out


# --- reading older reports -------------------------------------------------------------------


class FixV2(Struct):
    """A fix as report schema 2.x wrote it: a sentence and the commands in it."""

    text: str
    commands: list[str] = field(default_factory=list)

    def upgraded(self) -> Fix:
        """The same fix as a 3.0 record: its commands as shell steps, or, with none, the
        sentence as one manual step (2.x did not say which tool a command was for)."""
        if not self.commands:
            return Fix(self.text, [Step.manual(self.text)])
        return Fix(self.text, [Step.run("", c) for c in self.commands])
