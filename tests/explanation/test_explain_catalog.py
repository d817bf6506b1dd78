"""The message catalog (compat/messages.toml) that `gpucheck explain` reads: every entry cited,
its pattern compiling and matching the sample lines kept beside it, and the messages people hit
most all present."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from gpucheck.compat import Compat, CompatError, data_dir, load
from gpucheck.compat.messages import LAYERS, SEVERITIES

CATALOG = load().messages

# The messages the catalog must explain: what people paste most (the CUDA runtime and driver
# errors, NVML, NVIDIA's Xid catalog's common entries, NCCL, cuDNN, the frameworks, the
# container toolkit), each with one line as people paste it.
MUST_EXPLAIN = {
    "cuda.no-kernel-image": "CUDA error: no kernel image is available for execution on the device",
    "cuda.driver-insufficient": "CUDA driver version is insufficient for CUDA runtime version",
    "cuda.forward-compat-unsupported": "Error 804: forward compatibility was attempted on non supported HW",
    "cuda.system-driver-mismatch": "Error 803: system has unsupported display driver / cuda driver combination",
    "cuda.out-of-memory": "RuntimeError: CUDA error: out of memory",
    "cuda.device-side-assert": "RuntimeError: CUDA error: device-side assert triggered",
    "cuda.illegal-memory-access": "CUDA error: an illegal memory access was encountered",
    "cuda.initialization-error": "RuntimeError: CUDA error: initialization error",
    "nvml.driver-library-mismatch": "Failed to initialize NVML: Driver/library version mismatch",
    "nvml.unknown-error-container": "Failed to initialize NVML: Unknown Error",
    "nvml.smi-no-driver": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
    "nccl.unhandled-system-error": "NCCL error in: x.cpp:1, unhandled system error, NCCL version 2.20.5",
    "nccl.unhandled-cuda-error": "NCCL error in: x.cpp:1, unhandled cuda error, NCCL version 2.7.8",
    "nccl.ibverbs-call-failed": "host:1:2 [0] NCCL WARN Call to ibv_create_cq failed",
    "nccl.connection-closed": "host:1:2 [0] NCCL WARN Net : Connection closed by remote peer",
    "cudnn.not-initialized": "could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED",
    "cudnn.execution-failed": "cuDNN error: CUDNN_STATUS_EXECUTION_FAILED",
    "cudnn.library-not-found": "Could not load library libcudnn_ops_infer.so.8",
    "torch.not-compiled-with-cuda": "AssertionError: Torch not compiled with CUDA enabled",
    "torch.arch-not-compatible": "NVIDIA GeForce RTX 5080 with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
    "extension.undefined-symbol": "ImportError: x.so: undefined symbol: _ZN3c104cuda9SetDeviceEi",
    "xformers.built-for-other-torch": "xFormers was built for:",
    "tensorflow.tensorrt-missing": "TF-TRT Warning: Could not find TensorRT",
    "tensorflow.cannot-dlopen": "Cannot dlopen some GPU libraries. Please make sure",
    "jax.cuda-jaxlib-missing": "a CUDA-enabled jaxlib is not installed. Falling back to cpu.",
    "xla.parallel-compilation": "XLA is disabling parallel compilation, which may slow down compilation.",
    "container.no-gpu-driver": 'could not select device driver "" with capabilities: [[gpu]].',
    "container.cli-initialization-error": "nvidia-container-cli: initialization error: load library failed",
    "cudnn.sublibrary-not-loaded": "Unable to load any of {libcudnn_cnn.so.9.1.0, libcudnn_cnn.so.9}",
    "torch.nvjitlink-older-on-path": "libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12",
}
# The entries whose examples are written in the message's usual format, not quoted from a page
# that was read (constructed = true): none since the Xids moved to NVIDIA's whole catalog
# (compat/xids.toml, tests/compat/test_compat_xids.py). Every entry's examples are quoted from
# its source; an entry added with constructed examples must be named here.
CONSTRUCTED: set[str] = set()
HARMLESS = ("tensorflow.tensorrt-missing", "xla.parallel-compilation")


def test_every_entry_is_cited_compiles_and_matches_its_own_sample_lines() -> None:
    assert len(CATALOG.messages) >= 33
    for message in CATALOG.messages:
        assert re.match(r"https://\S+", message.source), message.id
        assert message.layer in LAYERS and message.severity in SEVERITIES, message.id
        pattern = re.compile(message.pattern)
        assert message.examples, message.id
        for example in message.examples:
            assert pattern.search(example), f"{message.id}: {example!r}"


def test_the_messages_people_hit_are_all_there() -> None:
    for message_id, line in MUST_EXPLAIN.items():
        message = CATALOG.get(message_id)
        assert message is not None, message_id
        assert re.search(message.pattern, line), message_id


def test_harmless_messages_are_never_failures() -> None:
    for message_id in HARMLESS:
        message = CATALOG.get(message_id)
        assert message is not None and message.severity == "info", message_id
    assert load().xids.message(45).severity == "info"  # a stopped application's clean-up


def _catalog_copy(tmp_path: Path, edit: tuple[str, str]) -> Path:
    folder = tmp_path / "compat"
    shutil.copytree(data_dir(), folder)
    shutil.rmtree(folder / "parsed")  # the TOML itself is read
    path = folder / "messages.toml"
    text = path.read_text(encoding="utf-8")
    assert edit[0] in text
    path.write_text(text.replace(edit[0], edit[1], 1), encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            ("pattern = 'no kernel image is available", "pattern = '(no kernel image is available"),
            r"messages.toml: message\[0\]: pattern is not a regular expression",
        ),
        (
            ('layer = "frameworks"', 'layer = "kernel"'),
            r"message\[0\]: layer = 'kernel' is not one of",
        ),
        (
            ('severity = "fail"', 'severity = "fatal"'),
            r"message\[0\]: severity = 'fatal' is not one of",
        ),
        (('id = "cuda.driver-insufficient"', 'id = "cuda.no-kernel-image"'), "appears twice"),
    ],
)
def test_a_bad_catalog_is_refused_with_the_row_named(
    tmp_path: Path, edit: tuple[str, str], problem: str
) -> None:
    folder = _catalog_copy(tmp_path, edit)
    with pytest.raises(CompatError, match=problem):
        _ = Compat.from_dir(folder).messages


def test_every_entry_quotes_its_examples_or_says_they_are_constructed() -> None:
    marked = {m.id for m in CATALOG.messages if m.constructed}
    assert marked == CONSTRUCTED
    for message in CATALOG.messages:
        if message.constructed:
            # Its meaning and fix still come from a page that was read.
            assert "docs.nvidia.com/deploy" in message.source, message.id
        else:
            # A quoted example names where it was quoted from: a thread (an issue, a pull
            # request, a gist, a paste) or the page that prints the line.
            quoted = r"github\.com/|pastebin\.com/|forums\.developer\.nvidia\.com/|dynamic-page-retirement"
            assert re.search(quoted, message.source), message.id


# Prefixes a catalog pattern begins with, repeated so that an unbounded `[^)]*` or `.*` after
# them would scan to the end of the text from every one (quadratic time).
ADVERSARIAL = [
    "NVRM: Xid (",
    "NVRM: Xid (\n",
    "NVRM: GPU ",
    "NCCL WARN ",
    "Could not load dynamic library '",
]


@pytest.mark.parametrize("prefix", ADVERSARIAL)
def test_no_pattern_takes_quadratic_time_on_its_own_prefix_repeated(prefix: str) -> None:
    """A pasted text (or an MCP call) is at most 16 MiB: 256 KiB of one pattern's prefix,
    repeated, must be answered in well under a second, as a real log is. Before the patterns
    were bounded, 64 KiB of "NVRM: Xid (" took 9 s."""
    import time

    from gpucheck import explain

    text = prefix * (256 * 1024 // len(prefix))
    start = time.process_time()
    explain(text)
    assert time.process_time() - start < 2.0
