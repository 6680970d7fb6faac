"""AlignResult: what one alignment run returns, with its Biopython conversions and writer."""

from __future__ import annotations

from dataclasses import dataclass, field

from msa_gpu.types import Alignment, DistanceMatrix, GuideTree, MergeSchedule, Recipe, Sequences


@dataclass(frozen=True)
class AlignResult:
    """Everything one alignment produced, stages included for inspection."""

    sequences: Sequences
    alignment: Alignment
    distances: DistanceMatrix | None  # None where none was computed (an injected tree, the large path)
    guide_tree: GuideTree
    schedule: MergeSchedule
    backend: str
    timings: dict = field(default_factory=dict)
    library: object = None  # the ConsistencyLibrary of accurate mode, else None
    recipe: Recipe | None = None  # every choice made for the family (msa_gpu.recipe), None only where built by hand

    def explain(self) -> str:
        """The family's recipe in one line, with the backend it ran on (`msa_gpu.recipe.describe`)."""
        from msa_gpu.recipe import describe

        if self.recipe is None:
            return "no recipe recorded"
        return describe(self.recipe, self.backend)

    def rows(self) -> list[bytes]:
        return self.alignment.rows(self.sequences)

    def to_msa(self):
        """The alignment as a Biopython ``MultipleSeqAlignment`` (whole titles as ids)."""
        from Bio.Align import MultipleSeqAlignment
        from Bio.Seq import Seq
        from Bio.SeqRecord import SeqRecord

        return MultipleSeqAlignment([SeqRecord(Seq(r.decode("ascii")), id=n, description="")
                                     for n, r in zip(self.sequences.names, self.rows())])

    def to_alignment(self):
        """The alignment as a Biopython ``Bio.Align.Alignment`` (gaps as coordinates)."""
        from io import StringIO

        from Bio import Align

        from msa_gpu.io import OutFormat, render_alignment

        text = render_alignment(list(self.sequences.names), self.rows(), OutFormat.fasta, self.sequences.seqtype)
        return Align.read(StringIO(text), "fasta")

    @property
    def tree(self):
        """The guide tree as a ``Bio.Phylo`` tree, leaves named by sequence."""
        from io import StringIO

        from Bio import Phylo

        from msa_gpu.io import to_newick

        return Phylo.read(StringIO(to_newick(self.guide_tree, list(self.sequences.names))), "newick")

    def column_scores(self, max_seqs: int | None = None):
        """Each column's confidence in [0, 1] (float64, one a column): the mean
        pair-HMM posterior of the residues it aligns
        (`msa_gpu.consistency.column_confidence`), on this run's backend.
        Protein only."""
        from msa_gpu.backend import backend_named
        from msa_gpu.consistency import column_confidence

        return column_confidence(self.sequences, self.alignment, backend_named(self.backend).xp, max_seqs)

    def write(self, path, fmt=None) -> None:
        """Write the alignment to ``path`` (format from ``fmt`` or the extension)."""
        from msa_gpu.io import format_for, render_alignment, write_text
        from msa_gpu.recipe import describe

        text = render_alignment(list(self.sequences.names), self.rows(), format_for(path, fmt),
                                self.sequences.seqtype,
                                comment=None if self.recipe is None else f"msagpu recipe: {describe(self.recipe)}")
        write_text(path, lambda h: h.write(text))
