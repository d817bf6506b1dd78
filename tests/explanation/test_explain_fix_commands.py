"""explain never prints a catalog command with a blank in it: an Xid's `nvidia-smi -r -i <GPU>`
is filled with the GPU the line names (its bus id, or the snapshot's index), else it is a
person's step with no command (`<GPU>` in a shell is a redirect); and the WSL2-only libcuda
command is given where the facts say WSL2, not elsewhere."""

from __future__ import annotations

import re

from conftest import run_gpucheck
from support.builders import h100_node

from gpucheck.compat import load
from gpucheck.explanation import explain
from gpucheck.model.fix import StepKind

COMPAT = load()
XID_48 = "NVRM: Xid (PCI:0000:5a:00): 48, pid=1, DBE"
LIBCUDA = (
    "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared "
    "object file: No such file or directory"
)
WSL_EXPORT = "export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH"


def _commands(text: str, **kwargs: object) -> list[str]:
    result = explain(text, COMPAT, **kwargs)  # type: ignore[arg-type]
    return [c for f in result.findings if f.fix for c in f.fix.commands]


def test_an_xid_reset_is_for_the_bus_id_the_line_names() -> None:
    result = run_gpucheck("explain", "--no-probe", "--text", XID_48)
    assert "sudo nvidia-smi -r -i 00000000:5a:00.0" in result.stdout, result.stdout
    assert "<GPU>" not in result.stdout


def test_an_xid_reset_is_for_the_snapshots_index_of_the_gpu_the_line_names() -> None:
    snap = h100_node(8)  # GPU 5 is at 0000:68:00.0
    line = XID_48.replace("5a:00", "68:00")
    assert _commands(line, snapshot=snap) == ["sudo nvidia-smi -r -i 5"]


def test_an_xid_line_naming_no_gpu_is_a_reset_step_without_a_command() -> None:
    result = explain("NVRM: Xid (GPU?): 48, pid=1, DBE", COMPAT)
    (finding,) = result.findings
    assert finding.fix is not None and finding.fix.commands == []
    manual = [s for s in finding.fix.steps if s.kind is StepKind.MANUAL]
    assert manual and "no GPU is named (give -i the GPU that logged it)" in manual[0].text


def test_no_command_explain_prints_for_any_catalog_example_holds_a_placeholder() -> None:
    examples = [line for m in COMPAT.messages.messages for line in m.examples]
    examples += [line for code in COMPAT.xids.xids for line in COMPAT.xids.message(code).examples]
    examples.append("NVRM: Xid (GPU?): 95, pid=1")
    for line in examples:
        for command in _commands(line):
            assert not re.search(r"<[A-Za-z][A-Za-z0-9_ -]*>", command), (line, command)


def test_libcuda_not_found_on_wsl2_puts_its_library_folder_on_the_loader_path() -> None:
    snap = h100_node(1)
    snap.system.wsl = True
    # (The doctor's own fixes for this node's facts join the answer too: a Linux driver's
    # packages inside WSL2 are its problem here; the WSL2 step is still given.)
    assert WSL_EXPORT in _commands(LIBCUDA, snapshot=snap)


def test_libcuda_not_found_off_wsl2_gives_no_wsl_folder() -> None:
    snap = h100_node(1)
    assert snap.system.wsl is False
    result = explain(LIBCUDA, COMPAT, snapshot=snap)
    (finding,) = [f for f in result.findings if f.id == "explain.cuda.libcuda-not-found"]
    assert finding.fix is not None and finding.fix.commands == []
    assert "this machine is not WSL2" in finding.fix.text


def test_libcuda_not_found_without_facts_says_the_command_is_for_wsl2_only() -> None:
    result = explain(LIBCUDA, COMPAT)
    (finding,) = [f for f in result.findings if f.id == "explain.cuda.libcuda-not-found"]
    assert finding.fix is not None and finding.fix.commands == [WSL_EXPORT]
    assert finding.fix.text.startswith("On WSL2 only (whether the machine is WSL2 decides")
