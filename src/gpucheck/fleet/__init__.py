"""`gpucheck fleet`: many saved reports (and snapshots) read in parallel (reading.py), merged
into one view of the fleet (summary.py), and written as a table, JSON or CSV (rendering.py).

Each report is reduced, in a worker process, to a small HostRecord; only those travel back
and are kept, so memory stays small however many reports there are.
"""
