"""`gpucheck fit`: will this model train (or serve) on these GPUs at this batch size?

Estimates from published formulas (see estimate.py), from a parameter count, a local Hugging
Face config.json, a local safetensors header, or a PyTorch module traced on the meta device.
Nothing here touches the network or a GPU; `trace.py` runs the one child that imports torch.
"""
