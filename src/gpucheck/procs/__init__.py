"""`gpucheck procs`: who holds each GPU (model/holders.py reads it from the snapshot, shared
with the doctor), rendering (render.py) and ending processes safely (ending.py)."""
