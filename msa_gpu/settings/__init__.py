"""What a run is asked: the choices' vocabulary as light enums (`choices`)
and every knob of a run, frozen and validated (`config`). They stand on
nothing of msagpu's but its errors; the rules that turn a family and these
settings into its recipe are `msa_gpu.recipe`. Importing this package imports
neither module."""
