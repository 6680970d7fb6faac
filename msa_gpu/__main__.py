from msa_gpu.frontends.msagpu import main

main()
