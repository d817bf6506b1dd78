"""`gpucheck fit`: will this model train (or serve) on these GPUs at this batch size?

Estimates from published formulas, from a parameter count, a local Hugging Face config.json
(config.py reads it with families.py's rules, params.py counts it), a local safetensors header,
or a PyTorch module traced on the meta device. request.py validates the options; training.py,
activations.py, serving.py and quant.py compute the parts; report.py renders them.
Nothing here touches the network or a GPU; `trace.py` runs the one child that imports torch.
"""
