"""Work built from the aligner's public steps beyond one alignment a family:
ensembles of perturbed replicates (`ensemble`) and alignments merged to each
other, each one's columns kept (`merging`). Importing this package imports
neither."""
