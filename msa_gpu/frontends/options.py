"""The command line's options: each an ``Annotated`` type with its help,
shared by the commands of `msa_gpu.frontends.msagpu`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from msa_gpu.settings.choices import BackendChoice, DistanceMethod, FragmentPlace, Mode, PairMode, SeqType, TreeMethod

Inputs = Annotated[Optional[list[str]], typer.Argument(help="Unaligned FASTA: paths ('-' for stdin, .gz allowed), folders of FASTA files, or .txt/.list files of paths")]
OutDir = Annotated[Optional[Path], typer.Option("--outdir", help="Batch mode: align every input in one run, writing DIR/<name>.<ext>")]
Output = Annotated[Optional[Path], typer.Option("-o", "--output", "--out", help="Output file (default: stdout)")]
OutFmt = Annotated[Optional[str], typer.Option("--outfmt", help="Output format: fasta, clustal, phylip, "
                                               "phylip-strict (10-character names; the map in OUT.names), nexus, "
                                               "stockholm, msf, vienna (FASTA, a row a line); also Clustal "
                                               "Omega's a2m, fa, clu, phy, st, vie, any case. Default: from the "
                                               "extension, else FASTA")]
SeqTypeOpt = Annotated[SeqType, typer.Option("--seqtype", case_sensitive=False, help="Sequence type")]
BackendOpt = Annotated[BackendChoice, typer.Option("--backend", help="auto: GPU if usable, else CPU (small inputs: CPU)")]
TreeOpt = Annotated[TreeMethod, typer.Option("--tree", help="Guide-tree method (auto: mixed linkage below 500 "
                                                              "sequences; from 500 single linkage on LCS distances, "
                                                              "UPGMA where the distances are k-mers; sequences over "
                                                              "3,000 long on average: NJ on k-mer divergences, "
                                                              "midpoint-rooted)")]
DistanceOpt = Annotated[DistanceMethod, typer.Option("--distance", help="Guide-tree distances: k-mers, all-pairs alignments, or lcs (FAMSA 2's indel^0.75 / LCS); "
                                                         "auto: lcs from 500 sequences and where k-mers are blind, k-mers otherwise")]

Fragments = Annotated[FragmentPlace, typer.Option("--fragments",
                                        help="last: sequences under half the 95th length percentile are merged one at a "
                                             "time after the rest (MAFFT's --addfragments within one input); tree: where the guide tree puts them")]
TreeOut = Annotated[Optional[Path], typer.Option("--tree-out", "--guidetree-out", help="Write the guide tree as Newick")]
TreeIn = Annotated[Optional[Path], typer.Option("--guidetree-in", "--tree-in", help="Align along this guide tree "
                                                "(Newick, leaves named as the input's sequences; --tree-out "
                                                "writes one)")]
InOpt = Annotated[Optional[list[str]], typer.Option("-i", "--in", "--infile", help="Input (Clustal Omega's spelling; "
                                                    "the same as a positional input)")]
DistmatOut = Annotated[Optional[Path], typer.Option("--distmat-out", help="Write the guide-tree distances as a "
                                                    "labelled PHYLIP matrix")]
ColumnScores = Annotated[Optional[Path], typer.Option("--column-scores", help="Write each column's confidence "
                                                      "(0-1, one line a column: the mean pair-HMM posterior of "
                                                      "the residues it aligns, protein; with --ensemble, the "
                                                      "ensemble's column confidence, any sequences)")]
AddOpt = Annotated[Optional[Path], typer.Option("--add", help="Sequences to add to the --existing alignment "
                                              "(its columns never change)")]
ExistingOpt = Annotated[Optional[Path], typer.Option("--existing", help="The existing alignment (aligned FASTA) "
                                                    "that --add adds to")]
MergeFlag = Annotated[bool, typer.Option("--merge", help="INPUTS are alignments: align them to each other, each "
                                         "one's columns kept (a single sequence is an alignment of one; as MAFFT's "
                                         "--merge)")]
KeepLength = Annotated[bool, typer.Option("--keeplength", help="With --add: drop insertions, so the alignment "
                                          "keeps its width (as MAFFT's --keeplength)")]
Force = Annotated[bool, typer.Option("--force", help="Accepted for Clustal Omega command lines: msagpu always "
                                     "replaces an existing output, atomically, once the run succeeds")]
Threads = Annotated[Optional[int], typer.Option("--threads", "--thread", min=1, help="Cap on CPU threads")]
AutoFlag = Annotated[bool, typer.Option("--auto", help="Clustal Omega's and MAFFT's spelling of --mode auto "
                                        "(the default)")]
Verbose = Annotated[bool, typer.Option("-v", "--verbose", help="Clustal Omega's spelling of --explain: each "
                                       "family's recipe on stderr in batch mode (one family's recipe is said "
                                       "anyway, unless --quiet)")]
GapOpen = Annotated[Optional[float], typer.Option("--gap-open", min=0.0, help="Gap open cost (matrix units)")]
GapExtend = Annotated[Optional[float], typer.Option("--gap-extend", min=0.0, help="Gap extension cost (matrix units)")]
Matrix = Annotated[Optional[str], typer.Option("--matrix", help="Substitution matrix name (Biopython; PFASUM and VTML too where scoring-matrices is installed)")]
Retree = Annotated[int, typer.Option("--retree", min=0, max=10, help="Guide-tree rebuilds from the alignment (the auto tree of 500+ sequences or of long ones is kept)")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No messages on stderr")]
EnsembleN = Annotated[Optional[int], typer.Option("--ensemble", help="Align N (at least 2) replicates under perturbed guide trees "
                                                 "and gap costs (replicate 0: the default alignment) in one batch; "
                                                 "write the one the ensemble agrees with most, say the dispersion")]
PerturbOpt = Annotated[Optional[str], typer.Option("--perturb", help="--ensemble: what replicates vary, a comma list of tree, "
                                         "gaps and model (the pair-HMM's gap probabilities: a library a "
                                         "replicate); default tree,gaps")]
SeedOpt = Annotated[Optional[int], typer.Option("--seed", help="--ensemble: the perturbations' seed (the same seed, the same "
                                      "bytes; default 0)")]
ReplicateOpt = Annotated[Optional[int], typer.Option("--replicate", help="--ensemble: write replicate K instead of "
                                                     "the most agreed one")]
EnsembleOut = Annotated[Optional[Path], typer.Option("--ensemble-out", help="--ensemble: every replicate as "
                                                     "Ensemble FASTA (MUSCLE 5's EFA)")]
MinConfidence = Annotated[Optional[float], typer.Option("--min-confidence", help="--ensemble: drop the columns whose "
                                                        "confidence is below X (0-1) from the written alignment")]
KeptColumns = Annotated[Optional[Path], typer.Option("--kept-columns", help="--min-confidence: write the kept "
                                                     "columns' 1-based positions, one a line")]
ResidueScores = Annotated[Optional[Path], typer.Option("--residue-scores", help="--ensemble: write each residue's "
                                                       "confidence as a digit (0-9) in an aligned FASTA file")]
Explain = Annotated[bool, typer.Option("--explain", help="Say each family's recipe on stderr (mode, distances, tree, "
                                       "library, gaps, refinement, backend); a batch otherwise says only how many "
                                       "families take each mode")]
Anchors = Annotated[bool, typer.Option("--anchors/--no-anchors", help="Cut merges of over 16M DP cells at exact k-mer "
                                       "matches and align only between them (long genomes); --no-anchors: the full DP")]
ModeOpt = Annotated[Mode, typer.Option("--mode", help="accurate: a consistency library (MAFFT L-INS-i class): "
                                       "the pair-HMM posterior library for protein (ProbCons' model), the pair-HMM "
                                       "posterior library for nucleotides (ProbConsRNA's); fast: progressive only (FFT-NS-2 "
                                       "class); large: no N x N matrix (k-mer pivots, partition tree); auto: accurate "
                                       "up to 200 sequences of up to 2,000 residues, large from 20,000 sequences, "
                                       "else fast")]
Linsi = Annotated[bool, typer.Option("--linsi", "--localpair", help="MAFFT's spelling of --mode accurate (L-INS-i), "
                                     "the same run: the pair-HMM posterior library for protein (ProbCons' model), "
                                     "the pair-HMM posterior library for nucleotides (ProbConsRNA's)")]
Ginsi = Annotated[bool, typer.Option("--ginsi", "--globalpair", help="Accurate mode (MAFFT's G-INS-i): the "
                                     "pair-HMM posterior library for protein (ProbCons' model), the pair-HMM "
                                     "posterior library for nucleotides (ProbConsRNA's), the same run as --mode "
                                     "accurate")]
GpusOpt = Annotated[Optional[str], typer.Option("--gpus", help="GPUs of this machine for a batch: all, a count or "
                                                 "indices (0,2); CUDA_VISIBLE_DEVICES picks them. The output is "
                                                 "the same as on one GPU. Default: one")]
DaskOpt = Annotated[Optional[str], typer.Option("--dask", help="Spread a batch's families over Dask workers: a scheduler "
                                                "address, or 'local' for worker processes on this machine")]
MaxIterate = Annotated[Optional[int], typer.Option("--maxiterate", "--iter", min=0, max=100000,
                                                   help="Refinement rounds, at most (default: 0 in accurate mode "
                                                        "for nucleotides, 0 in accurate mode for protein, 0 in fast "
                                                        "mode; large mode never refines)")]

PairModeOpt = Annotated[PairMode, typer.Option("--mode", help="semiglobal: end gaps free on both sequences")]
