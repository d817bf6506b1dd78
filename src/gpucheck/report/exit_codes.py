"""Exit codes: documented in the README; CI gates depend on them never changing meaning."""

EXIT_OK = 0  # nothing failed (with --strict: nothing warned either)
EXIT_FAILED = 1  # at least one check failed (or warned, with --strict)
EXIT_USAGE = 2  # bad arguments, or a snapshot/compat file that cannot be read
EXIT_INTERNAL = 3  # gpucheck itself broke: a check raised, or an unexpected error
EXIT_OUTPUT = 4  # the report could not be written (a full disk, a closed device)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as shells report it
