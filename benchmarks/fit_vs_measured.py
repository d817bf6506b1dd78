"""fit's training activations against a real step of Hugging Face's own model, side by side:
the memory a training forward of `AutoModelForCausalLM` (random weights from a config.json)
adds and keeps until backward, and fit's estimate of the same, with their ratio (the
estimate must be within 15%). Runs in an environment with torch and transformers:

    python benchmarks/fit_vs_measured.py --python ENV/bin/python --device cuda \
        --config tests/fixtures/fit/meta-llama-3-8b/config.json --layers 4 --seq 4096
    python benchmarks/fit_vs_measured.py --python ENV/bin/python        # CPU, the tiny fixture

On CUDA the figure is torch.cuda.memory_allocated() after the forward (loss included) minus
before it, and the peak of forward + backward is printed beside; on the CPU the bytes of the
distinct storages autograd saved (tests/fit/test_fit_measured.py's measure). --layers cuts the
model to that many layers so that a large config fits one GPU (the estimate is cut alike).

With --published it prints instead fit's parameter and memory figures beside the published
ones of tests/fit/test_fit_truth_2026.py (gpt-oss, Jamba, Mamba, Mamba-2: each row's source is
there), and a peer's where it runs here: accelerate's `estimate-memory` logic (an empty model
built on the meta device from the local config.json, in --python's environment) when
accelerate, torch and transformers are installed there. hf-mem is not run: it reads the
safetensors headers from the Hub over the network, which this benchmark never touches.

    python benchmarks/fit_vs_measured.py --published [--python ENV/bin/python]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from gpucheck.fit.config import from_config
from gpucheck.fit.estimate import Setup, estimate

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, torch
from transformers import AutoConfig, AutoModelForCausalLM
path, attn, device, batch, seq = sys.argv[1:6]
config = AutoConfig.from_pretrained(path, attn_implementation=attn)
torch.manual_seed(0)
with torch.device(device):
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
model.train()
ids = torch.randint(0, config.vocab_size, (int(batch), int(seq)), device=device)
out = {}
if device == "cuda":
    torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    loss = model(input_ids=ids, labels=ids).loss
    torch.cuda.synchronize()
    out["forward_kept"] = torch.cuda.memory_allocated() - before
    loss.backward(); torch.cuda.synchronize()
    out["peak_over_weights"] = torch.cuda.max_memory_allocated() - before
    out["device"] = torch.cuda.get_device_name(0)
else:
    own = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen, total = set(), [0]
    def pack(t):
        k = t.untyped_storage().data_ptr()
        if k not in own and k not in seen:
            seen.add(k); total[0] += t.untyped_storage().nbytes()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(input_ids=ids, labels=ids).loss.backward()
    out["forward_kept"] = total[0]
    out["device"] = "cpu"
print(json.dumps(out))
"""


PEER = r"""
import json, sys
from accelerate.commands.estimate import create_empty_model
from accelerate.utils import calculate_maximum_sizes
model = create_empty_model(sys.argv[1], library_name="transformers", trust_remote_code=False)
total, _ = calculate_maximum_sizes(model)
print(json.dumps({"bytes_fp32": total}))
"""


def published(python: str) -> int:
    """fit beside the published figures (and accelerate's, where it runs)."""
    import importlib.util

    sys.path.insert(0, str(REPO / "tests"))  # the truth table imports the suite's conftest
    spec = importlib.util.spec_from_file_location(
        "truth_2026", REPO / "tests/fit/test_fit_truth_2026.py"
    )
    assert spec is not None and spec.loader is not None
    truth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(truth)
    print(f"{'figure':<28}{'fit':>20}{'published':>20}{'ratio':>7}  source")
    for what, derived, figure, _, source in truth.ROWS:
        value = derived()
        print(f"{what:<28}{value:>20,.2f}{figure:>20,.2f}{value / figure:>7.3f}  {source}")
    print("\npeer: accelerate estimate-memory (parameters from an empty model, fp32 bytes / 4)")
    for name in ("gpt-oss-20b", "jamba-v0.1", "mamba2-780m"):
        folder = REPO / "tests/fixtures/fit" / name
        proc = subprocess.run([python, "-c", PEER, str(folder)], capture_output=True, text=True,
                              check=False, timeout=600)  # fmt: skip
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            print(f"  {name}: not run in {python} ({last}); pip install accelerate torch "
                  "transformers there to compare")  # fmt: skip
            continue
        peer = json.loads(proc.stdout.strip().splitlines()[-1])["bytes_fp32"] / 4
        ours = from_config(folder / "config.json").params
        print(f"  {name}: accelerate {peer:,.0f} params, fit {ours:,} ({ours / peer:.4f})")
    print("  hf-mem: not run (it reads safetensors headers from the Hub over the network)")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=sys.executable, help="interpreter with torch+transformers")
    ap.add_argument(
        "--config", default=str(REPO / "tests/fixtures/fit/tiny-llama-measure/config.json")
    )
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--published", action="store_true",
                    help="fit beside the published figures and peers, no measurement")  # fmt: skip
    args = ap.parse_args()
    if args.published:
        return published(args.python)
    config = json.loads(Path(args.config).read_text())
    if args.layers:
        config["num_hidden_layers"] = args.layers
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(json.dumps(config))
        shape = from_config(path)
        print(f"{'attention':<10}{'estimate':>16}{'measured':>16}{'ratio':>8}  peak(fwd+bwd)")
        for attn in ("sdpa", "eager"):
            proc = subprocess.run(
                [args.python, "-c", CHILD, str(path), attn, args.device, str(args.batch),
                 str(args.seq)],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if proc.returncode != 0:
                print(f"{attn}: the child failed: {proc.stderr.strip().splitlines()[-1:]}")
                return 1
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            setup = Setup(mode="train", dtype="bf16", batch=args.batch, seq=args.seq,
                          flash_attention=attn != "eager")  # fmt: skip
            est = next(p.bytes for p in estimate(shape, setup).parts if p.name == "activations")
            measured = int(got["forward_kept"])
            peak = got.get("peak_over_weights")
            print(f"{attn:<10}{est:>16,.0f}{measured:>16,}{est / measured:>8.3f}  "
                  f"{'' if peak is None else f'{peak:,}'} ({got['device']})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
