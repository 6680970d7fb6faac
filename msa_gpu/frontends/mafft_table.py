"""``msagpu-mafft``'s option tables: what each MAFFT option becomes
(`MAPPING`, the README's table and ``--help``), what it refuses and why
(`UNSUPPORTED`), and which options take a value."""

#: What each MAFFT option becomes (the table in the README).
MAPPING = {
    "--auto": "--mode auto (accurate up to 200 sequences, large from 20,000, else fast)",
    "--localpair": "--mode accurate (L-INS-i): the pair-HMM posterior library for protein (ProbCons' model), "
                   "the pair-HMM posterior library for nucleotides (ProbConsRNA's); no refinement unless "
                   "--maxiterate N (as MAFFT)",
    "--genafpair": "the same as --localpair (msagpu has no generalised affine pairs)",
    "--globalpair": "--mode accurate (G-INS-i): the pair-HMM posterior library for protein (ProbCons' model), the "
                    "pair-HMM posterior library for nucleotides (ProbConsRNA's), the same run as --localpair; no "
                    "refinement unless --maxiterate N (as MAFFT)",
    "--maxiterate N": "--maxiterate N (refinement rounds; without a *pair option: fast mode + refinement, FFT-NS-i)",
    "--retree N": "--retree N-1 (MAFFT counts the first tree; FFT-NS-2 is --retree 2 there, 1 here)",
    "--op X": "--gap-open 13 X / 1.53 (protein; 8 X / 1.53 nucleotides): proportional to MAFFT's default",
    "--ep X": "MAFFT's offset (default 0, which changes nothing): --gap-extend 0.8 + 13 X / 1.53 / 2 (protein; "
              "6.0 + 8 X / 1.53 / 2 nucleotides), half an offset a gapped residue on --op's scale",
    "--kimura N": "accepted for N = 200, MAFFT's default (msagpu's nucleotide scoring is fixed: NUC.4.4 and "
                  "ProbConsRNA's pair-HMM); any other N, or protein input (where MAFFT reads it as JTT N), an error",
    "--thread N": "--threads N (N <= 0: all cores)",
    "--reorder": "rows in guide-tree order",
    "--inputorder": "rows in input order (the default)",
    "--clustalout": "--outfmt clustal",
    "--phylipout": "strict PHYLIP, as MAFFT writes it: each name's first word cut or padded to 10 characters "
                   "(names that the cut makes equal are kept distinct by a numbered tail: seq_longn1)",
    "--namelength N": "names cut to N characters in Clustal output, and cut or padded to N in PHYLIP output",
    "--preservecase": "residues as given (else DNA/RNA lower case, protein upper case)",
    "--anysymbol": "any character accepted, scored as the wildcard (X or N), '*' kept (without it '*' is deleted, "
                   "as MAFFT deletes it, with a note on stderr)",
    "--quiet": "--quiet",
    "--treeout": "guide tree to INPUT.tree as MAFFT writes it (Newick, leaves N_title)",
    "--treein FILE": "align along this guide tree, in MAFFT's format (a merge 'i j [length length]' a line, "
                     "sequences numbered from 1 in input order)",
    "--amino": "--seqtype protein",
    "--nuc": "--seqtype dna",
    "--add FILE": "add FILE's sequences to the input alignment, whose columns never change (msagpu align --add)",
    "--addfragments FILE": "the same as --add (each fragment is aligned to the whole alignment)",
    "--keeplength": "with --add: insertions dropped, the alignment keeps its width",
    "--merge TABLE": "the input holds sub-alignments (and other sequences); TABLE lists each one's sequence "
                     "numbers a line (makemergetable.rb's table): aligned to each other, each one's columns kept, "
                     "the unlisted sequences ungapped and aligned with them (msagpu align --merge)",
    "--seed FILE": "a seed alignment (repeatable): its columns kept, its rows named _seed_NAME and written first, "
                   "the input's sequences aligned with it (msagpu align --merge)",
    "--6merpair": "--mode fast (6-mer distances, as msagpu's default tree)",
    "--parttree": "--mode large (k-mer pivots and a partition tree, MAFFT's PartTree idea)",
    "--dpparttree": "--mode large",
    "--fastaparttree": "--mode large",
    "--large": "--mode large (no N x N matrix)",
    "--memsave": "accepted (long merges always run in msagpu's checkpointed kernel, memory ~ (m + n)^1.5)",
    "--bl N": "--matrix BLOSUMN (45, 50, 62, 80 or 90) for protein; nucleotides keep their scoring, as in MAFFT "
              "(a note on stderr)",
    "--lop X": "accepted (negative, as MAFFT's), with a note on stderr: the pair-HMM library has no gap costs of its "
               "own, so it changes nothing",
    "--lexp X": "accepted (not positive, as MAFFT's), with a note on stderr: the pair-HMM library has no gap costs "
                "of its own, so it changes nothing",
    "--lep X": "accepted, with a note on stderr: MAFFT's score offset of the local pairs; msagpu's library has "
               "no offset, so it changes nothing",
    "--adjustdirection": "nucleotide sequences whose reverse complement shares more 6-mers with the first sequence "
                         "are turned and named _R_<name>, as MAFFT names them",
    "--adjustdirectionaccurately": "the same as --adjustdirection (msagpu compares k-mers, not alignments)",
}
#: Options MAFFT has that msagpu-mafft refuses, with the reason.
UNSUPPORTED = {
    "--addfull": "use --add (msagpu aligns every added sequence to the whole alignment)",
    "--addlong": "use --add (msagpu aligns every added sequence to the whole alignment)",
    "--leavegappyregion": "msagpu aligns every region; gappy regions are not left unaligned",
    "--unalignlevel": "msagpu has no unaligned-region model (MAFFT's --unalignlevel); drop the option",
    "--jtt": "msagpu has no JTT matrix covering B, Z and X (Biopython's JONES lacks them); use --bl N "
             "(nucleotides: MAFFT reads --jtt N as --kimura N; drop it, or give --kimura 200)",
    "--tm": "msagpu has no transmembrane matrix; use --bl N (nucleotides: MAFFT ignores it; drop it)",
    "--aamatrix": "msagpu reads no matrix files; use --bl N (nucleotides: MAFFT ignores it; drop it)",
}
#: Options that take a value, and flags: each declared once, in `MAPPING` ("--op X" takes one, "--auto" none).
_VALUED, _FLAGS = {k.split()[0] for k in MAPPING if " " in k}, {k for k in MAPPING if " " not in k}
_LARGE = ("--parttree", "--dpparttree", "--fastaparttree", "--large")
