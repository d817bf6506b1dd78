"""`gpucheck install`: the build of each package that runs on a machine, decided before the
install from the compat data (machine.py: the facts; torch_builds.py and others.py: the
resolvers; resolve.py: packages together, installed ones moved or named; commands.py: the
installer's commands; flow.py: where the machine comes from; render.py: text)."""
