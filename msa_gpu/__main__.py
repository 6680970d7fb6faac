from msa_gpu.cli import main

main()
