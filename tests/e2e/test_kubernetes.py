"""integrations/kubernetes: the manifests against Kubernetes' own schemas (kubernetes-validate,
offline), the Node Problem Detector config against the rules NPD applies when it loads one,
and the plugin's exit codes in NPD's terms, with the real gpucheck."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from conftest import REPO

HERE = REPO / "integrations" / "kubernetes"
PLUGIN = HERE / "gpucheck-npd"
FIXTURES = REPO / "tests" / "fixtures" / "integrations"
GPUCHECK = f"env PYTHONPATH={REPO / 'src'} {sys.executable} -m gpucheck"
K8S_VERSION = "1.30.0"  # the oldest Kubernetes release these manifests are meant for

# Go durations, as NPD parses them (time.ParseDuration).
DURATION = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"
# The custom plugin monitor's config, as NPD's Go types declare it
# (pkg/custompluginmonitor/types/config.go and types.go).
NPD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["plugin", "source", "conditions", "rules"],
    "additionalProperties": False,
    "properties": {
        "plugin": {"const": "custom"},
        "pluginConfig": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "invoke_interval": {"type": "string", "pattern": DURATION},
                "timeout": {"type": "string", "pattern": DURATION},
                "max_output_length": {"type": "integer", "minimum": 1},
                "concurrency": {"type": "integer", "minimum": 1},
                "enable_message_change_based_condition_update": {"type": "boolean"},
                "skip_initial_status": {"type": "boolean"},
            },
        },
        "source": {"type": "string", "minLength": 1},
        "metricsReporting": {"type": "boolean"},
        "conditions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type", "reason", "message"],
                "additionalProperties": False,
                "properties": {
                    "type": {"type": "string", "pattern": "^[A-Z][A-Za-z]+$"},
                    "reason": {"type": "string", "pattern": "^[A-Z][A-Za-z]+$"},
                    "message": {"type": "string"},
                },
            },
        },
        "rules": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["type", "reason", "path"],
                "additionalProperties": False,
                "properties": {
                    "type": {"enum": ["temporary", "permanent"]},
                    "condition": {"type": "string"},
                    "reason": {"type": "string", "pattern": "^[A-Z][A-Za-z]+$"},
                    "path": {"type": "string", "pattern": "^/"},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "timeout": {"type": "string", "pattern": DURATION},
                    "invoke_interval": {"type": "string", "pattern": DURATION},
                },
            },
        },
    },
}


def seconds(duration: str) -> float:
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    parts = re.findall(r"([0-9.]+)(ns|us|µs|ms|s|m|h)", duration)
    return sum(float(n) * units[u] for n, u in parts)


def manifests() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((HERE / "gpucheck-npd.yaml").read_text()) if d]


def kind(name: str) -> dict[str, Any]:
    return next(d for d in manifests() if d["kind"] == name)


def test_manifests_pass_the_kubernetes_schemas() -> None:
    docs = manifests()
    assert [d["kind"] for d in docs] == [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "DaemonSet",
    ]
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    # The validation can fail: a misspelt field is rejected in strict mode.
    broken = kind("DaemonSet")
    broken["spec"]["template"]["spec"]["containers"][0]["volumeMount"] = []
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_daemonset_mounts_what_gpucheck_reads() -> None:
    pod = kind("DaemonSet")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes[mounts["dev"]["name"]]["hostPath"]["path"] == "/dev"
    assert mounts["dev"]["mountPath"] == "/dev" and container["securityContext"]["privileged"]
    host = mounts["host"]
    assert volumes["host"]["hostPath"]["path"] == "/" and host["readOnly"]
    assert env["GPUCHECK_ROOT"] == host["mountPath"]
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all" and "utility" in env["NVIDIA_DRIVER_CAPABILITIES"]
    assert "nvidia.com/gpu" not in json.dumps(container.get("resources", {}))  # takes no GPU
    assert "--config.custom-plugin-monitor=/config/gpucheck-monitor.json" in container["args"]


def test_configmap_holds_the_files_verbatim() -> None:
    data = kind("ConfigMap")["data"]
    assert data["gpucheck-monitor.json"] == (HERE / "gpucheck-monitor.json").read_text()
    assert data["gpucheck-npd"] == PLUGIN.read_text()


def test_npd_config_is_one_npd_accepts() -> None:
    config = json.loads((HERE / "gpucheck-monitor.json").read_text())
    jsonschema.Draft202012Validator(NPD_SCHEMA).validate(config)
    # What NPD's Validate() checks on load: each rule's timeout within the global one, and a
    # default condition for every permanent rule.
    global_timeout = seconds(config["pluginConfig"]["timeout"])
    conditions = {c["type"] for c in config["conditions"]}
    for rule in config["rules"]:
        assert seconds(rule.get("timeout", "0s")) <= global_timeout
        assert rule["type"] != "permanent" or rule["condition"] in conditions
    # And what the DaemonSet must provide for it: the plugin at the rule's path, executable,
    # and gpucheck's own bound below the rule's so the plugin, not NPD, reports a hang.
    pod = kind("DaemonSet")["spec"]["template"]["spec"]
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "config")
    volume = next(v for v in pod["volumes"] if v["name"] == "config")
    (rule,) = config["rules"]
    folder, _, key = rule["path"].rpartition("/")
    assert folder == mount["mountPath"] and key in kind("ConfigMap")["data"]
    assert volume["configMap"]["defaultMode"] & 0o111 == 0o111
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert float(env["GPUCHECK_NPD_TIMEOUT"]) < seconds(rule["timeout"])
    # The schema can fail: NPD knows no "interval".
    config["pluginConfig"]["interval"] = "5m"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(NPD_SCHEMA).validate(config)


def plugin(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(PLUGIN)],
        env={**os.environ, "GPUCHECK": GPUCHECK, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("env", "code", "message"),
    [
        ({"GPUCHECK_FROM": str(FIXTURES / "healthy-h100x2.json")}, 0, "gpucheck: ready"),
        ({"GPUCHECK_FROM": str(FIXTURES / "ecc-h100x2.json")}, 1, "gpus.ecc-errors: "),
        # A gate the node misses is a problem of the node...
        (
            {
                "GPUCHECK_FROM": str(FIXTURES / "healthy-h100x2.json"),
                "GPUCHECK_ARGS": "--min-gpus 4",
            },
            1,
            "requirements.min-gpus: ",
        ),
        # ...a bad option, an unreadable snapshot or a missing gpucheck is not: Unknown.
        ({"GPUCHECK_FROM": "/nonexistent.json"}, 2, "gpucheck could not judge this node: "),
        ({"GPUCHECK_ARGS": "--min-gpus zero"}, 2, "gpucheck could not judge this node: "),
        ({"GPUCHECK": "/nonexistent/gpucheck"}, 2, "gpucheck cannot run: "),
    ],
)
def test_plugin_speaks_npd_exit_codes(env: dict[str, str], code: int, message: str) -> None:
    result = plugin(**env)
    assert result.returncode == code, (result.stdout, result.stderr)
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), result.stdout
    assert len(lines[0]) <= 200 or code == 1  # NPD cuts at max_output_length anyway


def test_plugin_kills_a_hung_gpucheck_and_reports_non_ok() -> None:
    started = time.monotonic()
    result = plugin(GPUCHECK="sh -c 'sleep 600; :' --", GPUCHECK_NPD_TIMEOUT="1")
    assert time.monotonic() - started < 20
    assert (
        result.returncode == 1 and result.stdout == "gpucheck timed out after 1 s (hung driver?)\n"
    )


def test_dockerfile_installs_gpucheck_beside_npd() -> None:
    text = (HERE / "Dockerfile").read_text()
    assert "COPY --from=npd /node-problem-detector /node-problem-detector" in text
    assert re.search(r"pip install .*/src", text)
    assert Path(REPO / "pyproject.toml").exists() and (REPO / "compat").is_dir()


def npd_condition(plugin_exit: int, config: dict[str, Any]) -> tuple[str, str, str]:
    """(status, reason, message) of the condition after one plugin run from the default state,
    as NPD's custom plugin monitor sets it (pkg/custompluginmonitor/custom_plugin_monitor.go,
    generateStatus: a status other than True takes the default condition's reason; False its
    message, Unknown the plugin's output)."""
    (default,) = config["conditions"]
    (rule,) = config["rules"]
    output = plugin_output[plugin_exit]
    if plugin_exit == 1:
        return "True", rule["reason"], output
    if plugin_exit == 0:
        return "False", default["reason"], default["message"]
    return "Unknown", default["reason"], output


plugin_output = {
    0: "gpucheck: ready",
    1: "gpus.ecc-errors: Uncorrectable ECC errors",
    2: "gpucheck could not judge this node: gpucheck: --min-gpus: not a number",
}
HEALTHY_WORDS = re.compile(r"pass|ready|healthy|\bok\b|good", re.IGNORECASE)


def test_an_unknown_condition_never_carries_a_healthy_sounding_reason() -> None:
    config = json.loads((HERE / "gpucheck-monitor.json").read_text())
    status, reason, message = npd_condition(2, config)
    assert status == "Unknown" and message.startswith("gpucheck could not judge")
    assert not HEALTHY_WORDS.search(reason), reason
    # The default is what NPD shows before the first run, too: neutral, not "ready".
    (default,) = config["conditions"]
    assert (default["reason"], default["message"]) == (
        "NoGpucheckFailure",
        "gpucheck has reported no failure",
    )
    assert not HEALTHY_WORDS.search(default["message"])
    assert npd_condition(1, config)[:2] == ("True", "GpucheckFailed")


@pytest.mark.slow
def test_a_lost_gpu_fails_from_inside_the_pod(sim_libs: Any, tmp_path: Path) -> None:
    """The DaemonSet's pod: KUBERNETES_SERVICE_HOST set (the pod's environment), the host's
    root at GPUCHECK_ROOT. The host's facts are judged as a host's: a GPU on the PCI bus that the
    driver lost fails gpus.lost, which a container could not judge."""
    from conftest import run_gpucheck
    from sim import scenario as sim

    gpus = [sim.h100(i) for i in range(4)]
    gpus[2].cuda_hidden = True
    machine = sim.Machine.create(
        sim.Scenario(
            gpus=gpus,
            faults=[sim.error("nvmlDeviceGetHandleByIndex", 15, 2)],  # NVML_ERROR_GPU_IS_LOST
        ),
        sim_libs,
        tmp_path / "node",
    )
    (machine.root / "etc/hostname").write_text("gpu-node-17\n")
    pod = {**machine.env, "KUBERNETES_SERVICE_HOST": "10.96.0.1", "container": "oci"}
    env = {
        e["name"]: e.get("value")
        for e in kind("DaemonSet")["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["GPUCHECK_ROOT"] == "/host"  # the manifest's; here the simulated host's root
    result = run_gpucheck("doctor", "--json", "--only", "gpus.lost", env=pod)
    report = json.loads(result.stdout)
    assert report["snapshot"]["system"]["container"] is None, report["snapshot"]["system"]
    assert report["host"]["hostname"] == "gpu-node-17"  # the node's, not the pod's
    (lost,) = [f for f in report["findings"] if f["id"] == "gpus.lost"]
    assert lost["status"] == "fail" and lost["evidence"][0] == "GPU 2: GpuIsLost", lost
    assert result.returncode == 1
    # Without GPUCHECK_ROOT the same variables do mean a container.
    from gpucheck.probes.system import detect_container, probe_system

    assert detect_container(Path("/"), pod) == ("kubernetes", "KUBERNETES_SERVICE_HOST is set")
    assert probe_system(machine.root, pod).container is None


def test_preflight_job_passes_the_kubernetes_schemas_and_gates_training() -> None:
    """integrations/kubernetes/gpucheck-preflight-job.yaml: an Indexed Job whose pods find each
    other by hostname under a headless Service (Kubernetes' "Job with Pod-to-Pod
    Communication"), its init container running gpucheck preflight under torchrun."""
    docs = [d for d in yaml.safe_load_all((HERE / "gpucheck-preflight-job.yaml").read_text()) if d]
    assert [d["kind"] for d in docs] == ["Service", "Job"]
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    service, job = docs
    # Pods are not Ready while their init containers run: their DNS records must exist anyway.
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"]
    assert service["spec"]["selector"] == {"job-name": job["metadata"]["name"]}
    spec, pod = job["spec"], job["spec"]["template"]["spec"]
    assert spec["completionMode"] == "Indexed" and spec["backoffLimit"] == 0
    assert pod["subdomain"] == service["metadata"]["name"]
    (init,) = pod["initContainers"]
    command = init["command"]
    assert command[0] == "torchrun" and command[-3:-1] == ["gpucheck", "preflight"]
    assert (
        f"--nnodes={spec['completions']}" in command and spec["parallelism"] == spec["completions"]
    )
    master = f"--master-addr={job['metadata']['name']}-0.{service['metadata']['name']}"
    assert master in command and master in pod["containers"][0]["command"]
    assert "--node-rank=$(NODE_RANK)" in command
    (rank,) = init["env"]
    index = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    assert rank["valueFrom"]["fieldRef"]["fieldPath"] == index
