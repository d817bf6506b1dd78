from gpucheck.entry import main

main()
