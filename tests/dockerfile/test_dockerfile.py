"""`gpucheck dockerfile`: recipes judged against simulated hosts (builders: an RTX 3060 on driver
570.124.04 / CUDA 12.8; an H100 node), through the real parsers (dockerfile-parse, PyYAML)."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from support.builders import h100, no_gpu_machine, node, workstation

from gpucheck.dockerfile import judge_file
from gpucheck.dockerfile.recipe import read_recipe
from gpucheck.inputs import load_compat
from gpucheck.model.finding import Finding, Status
from gpucheck.model.snapshot import Snapshot, dumps

COMPAT = load_compat(None)


def judge(text: str, snap: Snapshot | None = None, path: str = "Dockerfile") -> dict[str, Finding]:
    return {f.id: f for f in judge_file(path, text, snap or workstation(), COMPAT)}


def test_build_arguments_and_stages_lead_to_the_outside_base_image() -> None:
    recipe = read_recipe(
        "Dockerfile",
        "ARG CUDA=12.4.1\n"
        "FROM nvidia/cuda:${CUDA}-devel-ubuntu22.04 AS build\n"
        "ENV A=1\n"
        "FROM build AS runtime\n"
        "RUN pip install --no-cache-dir 'torch==2.5.1' \\\n"
        "    --index-url https://download.pytorch.org/whl/cu124 && echo done\n",
    )
    assert recipe.final.base == "nvidia/cuda:12.4.1-devel-ubuntu22.04"
    assert recipe.final.env == {"A": "1"}
    assert [(p.line, p.requirements, p.index_urls) for p in recipe.final.pips] == [
        (5, ["torch==2.5.1"], ["https://download.pytorch.org/whl/cu124"])
    ]


def test_a_base_image_newer_than_the_driver_fails_with_both_ways_out() -> None:
    found = judge("FROM nvidia/cuda:13.0.1-runtime-ubuntu24.04\n")["dockerfile.base-cuda"]
    assert found.status is Status.FAIL
    assert found.title == (
        "base image nvidia/cuda:13.0.1-runtime-ubuntu24.04: CUDA 13.0.1 needs a newer driver "
        "than the host's 570.124.04 (the container will not start)"
    )
    assert found.fix is not None
    assert found.fix.text == (
        "Use a base image of CUDA 12.8 or older (e.g. nvidia/cuda:12.8.0-runtime-ubuntu22.04); "
        "or upgrade the host driver to 580.65.06 or newer"
    )


def test_forward_compatibility_only_on_data_centre_gpus() -> None:
    # An H100 on a CUDA 12.8 driver: nvidia/cuda 13.0 runs through cuda-compat (a warning);
    # the same image on the RTX 3060 above fails.
    datacentre = node([h100(0)], driver="570.124.04", cuda=12080)
    found = judge("FROM nvidia/cuda:13.0.1-runtime-ubuntu24.04\n", datacentre)
    assert found["dockerfile.base-cuda"].status is Status.WARN
    assert "only through forward compatibility" in found["dockerfile.base-cuda"].title


def test_an_ngc_release_reads_its_cuda_from_the_data() -> None:
    found = judge("FROM nvcr.io/nvidia/pytorch:20.06-py3\n")["dockerfile.base-cuda"]
    assert found.status is Status.PASS
    assert found.title == (
        "base image nvcr.io/nvidia/pytorch:20.06-py3: CUDA 11.0.167 runs on driver 570.124.04"
    )


def test_env_cuda_version_counts_where_the_image_name_says_nothing() -> None:
    found = judge("FROM ubuntu:24.04\nENV CUDA_VERSION=12.9.1\n")["dockerfile.base-cuda"]
    assert found.status is Status.FAIL  # 12.9 needs a newer driver than CUDA 12.8's


def test_tensorflow_cpu_image_and_pip_lines() -> None:
    found = judge(
        "FROM tensorflow/tensorflow:2.15.0\n"
        "RUN pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cpu\n"
        "RUN pip install jax && pip install 'jax[cuda13]'\n"
    )
    assert found["dockerfile.base-cuda"].status is Status.WARN
    pips = found["dockerfile.pip-framework"]
    assert pips.status is Status.FAIL
    assert pips.evidence == [
        "line 2: torch==2.5.1: the CPU build of torch: the GPU goes unused",
        "line 3: jax: jax without a [cudaNN] extra: CPU only",
        "line 3: jax[cuda13]: JAX built with CUDA 13: does not run on driver 570.124.04",
    ]


def test_a_torch_cuda_major_unlike_the_images_is_a_warning() -> None:
    found = judge(
        "FROM nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04\n"
        "RUN pip install torch==2.5.1+cu124 --extra-index-url https://download.pytorch.org/whl/cu124\n"
    )
    pips = found["dockerfile.pip-framework"]
    assert pips.status is Status.WARN
    assert pips.evidence[0].startswith("line 2: torch==2.5.1+cu124: torch built with CUDA 12.4 in")


def test_nvidia_variables_that_hide_the_gpu_fail() -> None:
    hidden = judge("FROM nvidia/cuda:12.4.1-base-ubuntu22.04\nENV NVIDIA_VISIBLE_DEVICES=void\n")
    assert hidden["dockerfile.nvidia-env"].status is Status.FAIL
    nocompute = judge(
        "FROM nvidia/cuda:12.4.1-base-ubuntu22.04\nENV NVIDIA_DRIVER_CAPABILITIES=graphics,utility\n"
    )
    assert nocompute["dockerfile.nvidia-env"].title == (
        "NVIDIA_DRIVER_CAPABILITIES=graphics,utility leaves out compute: no CUDA in the container"
    )


COMPOSE = """
services:
  train:
    image: pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime
    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              device_ids: ["0", "3"]
  web:
    image: nginx
"""


def test_compose_reservations_are_judged_against_the_hosts_gpus() -> None:
    findings = judge_file("compose.yaml", COMPOSE, workstation(), COMPAT)
    by_title = {f.title: f for f in findings}
    train = by_title["service train: a device reservation without capabilities: [gpu]"]
    assert train.status is Status.FAIL
    assert "device_ids 3 are not GPUs of this host" in train.evidence
    web = by_title[
        "service web: reserves no GPU (deploy.resources.reservations.devices with capabilities:"
        " [gpu], or runtime: nvidia)"
    ]
    assert web.status is Status.WARN
    assert (
        "service train: base image pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime: CUDA 12.4 runs"
        " on driver 570.124.04" in by_title
    )


def gpucheck(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpucheck", "dockerfile", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_command_gives_the_doctors_formats_and_exit_codes(tmp_path: Path) -> None:
    snap = tmp_path / "host.json"
    snap.write_text(dumps(workstation()))
    recipe = tmp_path / "Dockerfile"
    recipe.write_text("FROM nvidia/cuda:13.0.1-runtime-ubuntu24.04\n")
    done = gpucheck(str(recipe), "--from", str(snap), "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert [(f["id"], f["status"]) for f in report["findings"]] == [
        ("dockerfile.base-cuda", "fail")
    ]
    junit = gpucheck(str(recipe), "--from", str(snap), "--format", "junit")
    assert junit.returncode == 1
    assert ET.fromstring(junit.stdout).find(".//failure") is not None
    recipe.write_text("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n")
    assert gpucheck(str(recipe), "--from", str(snap)).returncode == 0


def test_a_host_whose_driver_is_unknown_could_not_tell(tmp_path: Path) -> None:
    # A CI runner without a GPU: no driver answered, so whether the image's CUDA runs was not
    # judged; "Ready" would pass a recipe nobody checked.
    snap = tmp_path / "host.json"
    snap.write_text(dumps(no_gpu_machine()))
    recipe = tmp_path / "Dockerfile"
    recipe.write_text("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install torch==2.5.1\n")
    done = gpucheck(str(recipe), "--from", str(snap))
    assert done.returncode == 5, done.stdout
    assert done.stdout.splitlines()[-1] == (
        "? Could not tell: the host's driver is unknown (no NVML answer); judge the recipe "
        "against the machine it will run on: --from SNAPSHOT; 0 passed, 1 skipped, 1 info"
    )
    summary = json.loads(gpucheck(str(recipe), "--from", str(snap), "--json").stdout)["summary"]
    assert (summary["ready"], summary["exit_code"]) == (False, 5)
    assert summary["reason"].startswith("the host's driver is unknown")
    # JUnit: no case fails, so the verdict travels as the suite's properties.
    junit = gpucheck(str(recipe), "--from", str(snap), "--format", "junit")
    assert junit.returncode == 5
    suite = ET.fromstring(junit.stdout).find("testsuite")
    assert suite is not None
    verdict = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert verdict["exit_code"] == "5"
    assert (verdict["reason"] or "").startswith("the host's driver is unknown")
    # What fails whatever the driver still fails (1), as does a warning with --strict.
    recipe.write_text(
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nENV NVIDIA_VISIBLE_DEVICES=none\n"
    )
    assert gpucheck(str(recipe), "--from", str(snap)).returncode == 1
    recipe.write_text("FROM tensorflow/tensorflow:2.16.1\n")
    assert gpucheck(str(recipe), "--from", str(snap)).returncode == 5
    assert gpucheck(str(recipe), "--from", str(snap), "--strict").returncode == 1


def test_bad_recipes_are_one_line_and_exit_2(tmp_path: Path) -> None:
    snap = tmp_path / "host.json"
    snap.write_text(dumps(workstation()))
    missing = gpucheck(str(tmp_path / "nope"), "--from", str(snap))
    assert (missing.returncode, missing.stderr) == (
        2,
        f"gpucheck: PATH: {tmp_path / 'nope'}: no such file\n",
    )
    (tmp_path / "Dockerfile").write_text("RUN true\n")
    nofrom = gpucheck(str(tmp_path / "Dockerfile"), "--from", str(snap))
    assert (nofrom.returncode, nofrom.stderr) == (
        2,
        f"gpucheck: {tmp_path / 'Dockerfile'}: not a Dockerfile: no FROM instruction\n",
    )
    (tmp_path / "compose.yml").write_text("services: [\n")
    bad = gpucheck(str(tmp_path / "compose.yml"), "--from", str(snap))
    assert (bad.returncode, bad.stderr) == (
        2,
        f"gpucheck: {tmp_path / 'compose.yml'}: not valid YAML (line 2)\n",
    )
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00")
    binary = gpucheck(str(tmp_path / "bin"), "--from", str(snap))
    assert (binary.returncode, binary.stderr) == (
        2,
        f"gpucheck: PATH: {tmp_path / 'bin'} is not UTF-8 text\n",
    )


def test_platform_flags_and_exec_form_runs_are_read() -> None:
    recipe = read_recipe(
        "Dockerfile",
        "FROM --platform=linux/amd64 nvidia/cuda:12.4.1-base-ubuntu22.04 AS base\n"
        'RUN ["python3", "-m", "pip", "install", "jax[cuda12]"]\n'
        "FROM base\n",
    )
    assert recipe.stages[0].name == "base"
    assert recipe.final.base == "nvidia/cuda:12.4.1-base-ubuntu22.04"
    assert [p.requirements for p in recipe.final.pips] == [["jax[cuda12]"]]
