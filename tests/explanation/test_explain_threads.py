"""`gpucheck explain` on error texts quoted from public threads beyond the real cases (each
cites the thread it was read in): the message it names first and that message's layer.
`pytest -s` prints how many it explains."""

from __future__ import annotations

import pytest

from gpucheck.compat import load
from gpucheck.explanation import explain

# (thread, the text as quoted there, the message explain names first)
THREADS = [
    (
        "https://github.com/pytorch/pytorch/issues/134929",
        "libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12",
        "torch.nvjitlink-older-on-path",
    ),
    (
        "https://github.com/pytorch/pytorch/issues/144244",
        "ImportError: /root/.cache/pypoetry/virtualenvs/soccer-eventpred-YF5lB--H-py3.10/lib/"
        "python3.10/site-packages/torch/lib/../../nvidia/cusparse/lib/libcusparse.so.12: "
        "undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12",
        "torch.nvjitlink-older-on-path",
    ),
    (
        "https://github.com/infiniflow/ragflow/issues/4466",
        "ImportError: /home/mit/kxyRAG/ragflow/.venv/lib/python3.12/site-packages/torch/lib/../../"
        "nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkAddData_12_1, "
        "version libnvJitL",
        "torch.nvjitlink-older-on-path",
    ),
    (
        "https://github.com/m-bain/whisperX/issues/1297",
        "factory  | Unable to load any of {libcudnn_cnn.so.9.1.0, libcudnn_cnn.so.9.1, "
        "libcudnn_cnn.so.9, libcudnn_cnn.so}\n"
        "factory  | Invalid handle. Cannot load symbol cudnnCreateConvolutionDescriptor",
        "cudnn.sublibrary-not-loaded",
    ),
    (
        "https://github.com/jhj0517/Whisper-WebUI/issues/346",
        "Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, "
        "libcudnn_ops.so}\nInvalid handle. Cannot load symbol cudnnCreateTensorDescriptor",
        "cudnn.sublibrary-not-loaded",
    ),
    (
        "https://github.com/daswer123/xtts-finetune-webui/issues/18",
        "Loading Whisper Model!\nCould not load library libcudnn_ops_infer.so.8. Error: "
        "libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory\n"
        "Aborted (core dumped)",
        "cudnn.sublibrary-not-loaded",
    ),
    (
        "https://github.com/SYSTRAN/faster-whisper/issues/1182",
        "INFO:faster_whisper:Processing audio with duration 03:52.176\n"
        "Unable to load any of {libcudnn_cnn.so.9.1.0, libcudnn_cnn.so.9.1, libcudnn_cnn.so.9, "
        "libcudnn_cnn.so}",
        "cudnn.sublibrary-not-loaded",
    ),
    (
        "https://github.com/stas00/ml-engineering (compute/accelerator/nvidia/debug.md)",
        "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, "
        "reset gpu to activate.",
        "xid.63",
    ),
]
EXPLAINED_AT_LEAST = 8


@pytest.mark.parametrize(("thread", "text", "message_id"), THREADS, ids=[t[2] for t in THREADS])
def test_a_threads_text_names_its_message_first(thread: str, text: str, message_id: str) -> None:
    result = explain(text, load())
    assert result.findings, thread
    assert result.findings[0].id == f"explain.{message_id}", thread


def test_score_on_threads() -> None:
    right = sum(
        1
        for _, text, message_id in THREADS
        if (found := explain(text, load()).findings) and found[0].id == f"explain.{message_id}"
    )
    print(f"\nexplain on thread texts: {right} right first of {len(THREADS)}")
    assert right >= EXPLAINED_AT_LEAST
