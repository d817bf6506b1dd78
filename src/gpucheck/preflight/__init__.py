"""`gpucheck preflight`: one verdict for a multi-node job, from every rank the engine (torchrun,
srun, mpirun) starts: each rank runs the doctor on its node, posts its report to rank 0 through
a TCP store, the ranks time one all-reduce together, and rank 0 prints the job's verdict."""
