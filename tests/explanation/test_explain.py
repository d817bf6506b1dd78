"""`gpucheck explain` as a library: which messages a text holds, the order that puts the best
explanation first, harmless messages said to be harmless, and the facts of a snapshot joined to
the text (the GPU's architecture and the build; the driver and the newest CUDA it runs)."""

from __future__ import annotations

import io

from support.builders import workstation
from support.framework_builders import blackwell_workstation, on, torch_cu124

import gpucheck
from gpucheck.compat import load
from gpucheck.compat.matching import Lines, Matcher
from gpucheck.compat.messages import Message, MessageCatalog
from gpucheck.explanation import Explanation, decode, explain
from gpucheck.model.finding import Status
from gpucheck.model.fix import StepKind, Tool
from gpucheck.model.layers import Layer

ARCH_WARNING = """\
/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:209: UserWarning:
NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.
The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.
If you want to use the NVIDIA GeForce RTX 5090 GPU with PyTorch, please check the instructions at https://pytorch.org/get-started/locally/
"""
NO_KERNEL = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
TRT = "2024-05-10 11:33:15.185131: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Could not find TensorRT"


def _text(result: Explanation) -> str:
    out = io.StringIO()
    result.write_text(out)
    return out.getvalue()


def test_a_failing_message_is_a_failure_with_its_line_cause_fix_and_source() -> None:
    result = explain(f"starting\n{TRT}\n{NO_KERNEL}\n", load())
    assert [(f.id, f.status, f.section) for f in result.findings] == [
        ("explain.cuda.no-kernel-image", Status.FAIL, Layer.FRAMEWORKS),
        ("explain.tensorflow.tensorrt-missing", Status.INFO, Layer.FRAMEWORKS),
    ]
    first = result.findings[0]
    assert first.evidence[0] == f"line 3: {NO_KERNEL}"
    assert first.evidence[-1].startswith(
        "source: https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"
    )
    assert result.exit_code == 1
    assert result.source.lines == 3


def test_harmless_messages_alone_exit_0_and_say_they_are_harmless() -> None:
    result = explain(TRT + "\n", load())
    assert [f.status for f in result.findings] == [Status.INFO]
    assert result.exit_code == 0
    assert "INFO (harmless)  [Frameworks] TensorFlow did not find TensorRT" in _text(result)


def test_nothing_known_exits_0_and_suggests_the_doctor() -> None:
    result = explain("Traceback (most recent call last):\nValueError: bad shape\n", load())
    assert result.findings == [] and result.exit_code == 0
    assert _text(result).endswith(
        "nothing known was found in this text: no message of the catalog matched. "
        "`gpucheck doctor` checks the machine itself.\n"
    )
    assert result.to_dict()["summary"]["explained"] is False


def test_the_root_cause_comes_first_then_the_more_specific_message_then_the_earlier_line() -> None:
    log = (
        "rank0: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error, NCCL version 2.20.5\n"
        "rank0: NVRM: Xid (PCI:0000:2b:00): 45, pid=1, Ch 00000010\n"
        "kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.\n"
    )
    ids = [f.id for f in explain(log, load()).findings]
    # both fail; the Xid line pins down more than NCCL's generic words; Xid 45 is harmless
    assert ids == ["explain.xid.79", "explain.nccl.unhandled-cuda-error", "explain.xid.45"]


def test_a_message_repeated_a_thousand_times_is_quoted_five_times_and_counted() -> None:
    line = "NVRM: Xid (PCI:0000:01:00): 13, pid=7, Graphics Exception"
    finding = explain("\n".join([line] * 1000), load()).findings[0]
    assert finding.evidence[:6] == [
        *(f"line {n}: {line}" for n in range(1, 6)),
        "... and 995 more lines like these",
    ]


def test_control_characters_are_escaped_and_any_bytes_decode() -> None:
    raw = b"\xff\xfe\x00garbage\n\x1b[31mRuntimeError: CUDA error: out of memory\x1b[0m\n"
    text = decode(raw)
    assert "\x00" not in text and "\ufffd" in text
    result = explain(text, load())
    assert [f.id for f in result.findings] == ["explain.cuda.out-of-memory"]
    shown = _text(result)
    assert "\\x1b[31mRuntimeError: CUDA error: out of memory\\x1b[0m" in shown
    assert "\x1b" not in shown


def test_the_arch_warning_alone_names_the_gpu_and_what_the_build_carries() -> None:
    finding = explain(ARCH_WARNING, load()).findings[0]
    assert finding.id == "explain.torch.arch-not-compatible"
    assert (
        "the GPU the message names: compute capability 12.0, Blackwell; the installed torch "
        "carries sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90: has no code for it (newer than "
        "every architecture in this build)"
    ) in finding.evidence
    assert any(
        e.startswith("the driver version decides which CUDA variant") for e in finding.evidence
    )
    assert finding.fix is not None
    assert finding.fix.steps[0].tool is Tool.PIP
    assert finding.fix.steps[0].command is not None
    assert finding.fix.steps[0].command.startswith("pip install 'torch==")


def test_no_kernel_image_without_facts_says_which_fact_decides_and_how_to_get_it() -> None:
    finding = explain(NO_KERNEL, load()).findings[0]
    assert (
        "undecided: the GPU's compute capability decides which build has code for it; save "
        "the facts with `gpucheck snapshot -o snapshot.json` and run `gpucheck explain FILE "
        "--from snapshot.json` again"
    ) in finding.evidence
    assert finding.fix is not None and [s.kind for s in finding.fix.steps] == [StepKind.MANUAL]


def test_no_kernel_image_with_a_snapshot_names_the_gpu_the_build_and_the_build_that_fits() -> None:
    facts = on(blackwell_workstation(), torch_cu124())
    finding = gpucheck.explain(NO_KERNEL, snapshot=facts).findings[0]
    assert (
        "GPU 0 (NVIDIA GeForce RTX 5090): compute capability 12.0, Blackwell; torch "
        "2.5.1+cu124 carries sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90: has no code for it "
        "(newer than every architecture in this build)"
    ) in finding.evidence
    assert finding.fix is not None
    first = finding.fix.steps[0]
    assert first.text.endswith("carries code for it and runs on driver 590.44.01")
    assert first.command is not None and first.command.startswith("pip install 'torch==")


def test_driver_insufficient_with_a_snapshot_names_the_newest_cuda_the_driver_runs() -> None:
    facts = on(workstation(), torch_cu124())
    facts.nvml.driver_version = "470.57.02"
    finding = gpucheck.explain(
        "CUDA driver version is insufficient for CUDA runtime version", snapshot=facts
    ).findings[0]
    assert finding.section is Layer.DRIVER
    assert "driver 470.57.02 runs CUDA up to 11.4" in finding.evidence
    assert (
        "torch 2.5.1+cu124 is built with CUDA 12.4, which needs driver 550.54.14 or newer"
        in finding.evidence
    )
    assert finding.fix is not None
    keep = finding.fix.steps[-1]
    # install's answer for the RTX 3060 (8.6): 2.6 and 2.7's cu118 architectures are not in
    # the compat data (never assumed), so 2.5 cu118 is the newest known to carry sm_86
    assert (keep.option, keep.command) == (
        1,
        "pip install 'torch==2.5.*' --index-url https://download.pytorch.org/whl/cu118",
    )


def test_an_extensions_missing_symbol_is_shown_demangled_or_raw() -> None:
    line = "ImportError: /v/flash_attn_2_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"
    finding = explain(line, load()).findings[0]
    # reported under the framework, as the doctor reports an extension; its fix is the extension
    assert finding.section is Layer.FRAMEWORKS
    assert finding.fix is not None and finding.fix.steps[0].layer is Layer.EXTENSIONS
    assert (
        "missing: c10::cuda::SetDevice(int)" in finding.evidence
        or "missing: _ZN3c104cuda9SetDeviceEi" in finding.evidence
    )


def test_a_pattern_that_could_cross_lines_still_matches_one_line_at_a_time() -> None:
    # \s* may run over a newline in a scan of the whole text: the hit is the line it matches
    crossing = Message(
        "t.crossing", "extensions", "warn", r"^\s*PyTorch \S+ with CUDA", "t", "c", "f",
        "manual", None, None, ("  PyTorch 2.1 with CUDA",), "https://example.org",
    )  # fmt: skip
    text = "xFormers was built for:\n\n    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.1.0)\n"
    (match,) = Matcher(MessageCatalog([crossing])).matches(Lines(text))
    assert [(h.line, h.matched) for h in match.hits] == [(3, "    PyTorch 2.1.0+cu121 with CUDA")]


def test_the_api_takes_bytes_and_refuses_other_types() -> None:
    result = gpucheck.explain(b"Failed to initialize NVML: Driver/library version mismatch\n")
    assert [f.id for f in result.findings] == ["explain.nvml.driver-library-mismatch"]
    assert result.findings[0].fix is not None
    assert result.findings[0].fix.steps[0].kind is StepKind.REBOOT
    try:
        gpucheck.explain(42)  # type: ignore[arg-type]
    except TypeError as exc:
        assert str(exc) == "text: expected str or bytes, not int"
    else:
        raise AssertionError("no TypeError")


def test_a_pattern_is_searched_as_its_top_level_alternatives_each_whole() -> None:
    from gpucheck.compat.matching import alternatives

    assert alternatives(r"(?i)a|b(c|d)|[|x]|e\|f") == [
        "(?i)a", "(?i)b(c|d)", "(?i)[|x]", r"(?i)e\|f",
    ]  # fmt: skip
    assert alternatives(r"[]|]x|y") == [r"[]|]x", "y"]


def test_a_pasted_nvidia_smi_header_supplies_the_driver() -> None:
    text = (
        "| NVIDIA-SMI 470.57.02    Driver Version: 470.57.02    CUDA Version: 11.4     |\n"
        "RuntimeError: CUDA driver version is insufficient for CUDA runtime version\n"
    )
    finding = explain(text, load()).findings[0]
    assert "driver 470.57.02 (line 1 of the text) runs CUDA up to 11.4" in finding.evidence


def test_a_pip_error_for_torch_is_explained() -> None:
    text = "ERROR: No matching distribution found for torch==1.9.1+cu111\n"
    finding = explain(text, load()).findings[0]
    assert (finding.id, finding.section) == ("explain.pip.no-matching-torch", Layer.FRAMEWORKS)
