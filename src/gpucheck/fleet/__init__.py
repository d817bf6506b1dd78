"""`gpucheck fleet`: many saved reports (and snapshots) found (sources.py), read in parallel
(reading.py, through the lean types of lean.py), kept on disk (store.py), merged into one view
of the fleet (summary.py), and written as a table, JSON or CSV (rendering.py).

Each report is reduced, in a worker process, to a small HostRecord; only folded batches of
those travel back, the hosts are kept in a temporary SQLite file, and every output is written
as they are read back, so memory stays flat however many reports there are.
"""
