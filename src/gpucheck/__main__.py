from gpucheck.cli import main

main()
