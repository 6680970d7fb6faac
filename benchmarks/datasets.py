"""Finding benchmark families in a folder or a ``.tar.gz`` archive.

The layout (see the data README) is ``<set>/[<subset>/]<ID>.tfa`` (or
``<ID>.tfa.gz``) beside ``<ID>.ref.fa`` and ``<ID>.core``. A family's *set* is
the folder holding it, relative to the dataset root: ``RV11`` for BAliBASE,
``balifam100`` for Balifam.
"""

from __future__ import annotations

import re
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

#: Input suffixes, longest first so ``.tfa.gz`` wins over ``.tfa``.
INPUT_SUFFIXES = (".tfa.gz", ".tfa")
REF_SUFFIX = ".ref.fa"
CORE_SUFFIX = ".core"
#: Files an archive extraction keeps (the ``.xml`` originals are not needed).
WANTED_SUFFIXES = INPUT_SUFFIXES + (REF_SUFFIX, CORE_SUFFIX)


class DatasetError(ValueError):
    """The benchmark path or set selection cannot be used."""


@dataclass(frozen=True)
class Family:
    """One benchmark case: unaligned input, reference alignment, core mask.

    Attributes
    ----------
    set_name : str
        The folder holding the family, relative to the dataset root
        (``"RV11"``, ``"balifam100"``).
    family_id : str
        The file name without its input suffix (``"BB11001"``, ``"PF00009.100"``).
    input_path, ref_path, core_path : str
        Absolute paths of the three files.
    """

    set_name: str
    family_id: str
    input_path: str
    ref_path: str
    core_path: str

    @property
    def key(self) -> str:
        """``set/ID``, unique within a dataset."""
        return f"{self.set_name}/{self.family_id}"


@dataclass
class Dataset:
    """The families found under one benchmark root.

    Attributes
    ----------
    name : str
        The benchmark's name: the archive's top folder or the folder's name.
    root : pathlib.Path
        Where the family files are on disk (a temporary folder for archives).
    source : str
        The path the user gave.
    families : list of Family
        Sorted by set (naturally: RV11 < RV12 < RV20) and then by ID.
    skipped : list of str
        Inputs without a reference or core file, as ``set/ID``.
    """

    name: str
    root: Path
    source: str
    families: list[Family] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def sets(self) -> list[str]:
        """Set names in order of first appearance (already naturally sorted)."""
        return list(dict.fromkeys(f.set_name for f in self.families))


def natural_key(text: str) -> tuple:
    """Sort key that orders embedded numbers by value.

    Examples
    --------
    >>> sorted(["balifam1000", "balifam100", "RV20", "RV11"], key=natural_key)
    ['RV11', 'RV20', 'balifam100', 'balifam1000']
    """
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text) if p)


def family_id(filename: str) -> str | None:
    """The family ID of an input file name, or None if it is not an input.

    Examples
    --------
    >>> family_id("PF00009.1000.tfa.gz"), family_id("BB11001.tfa"), family_id("BB11001.core")
    ('PF00009.1000', 'BB11001', None)
    """
    for suffix in INPUT_SUFFIXES:
        if filename.endswith(suffix) and len(filename) > len(suffix):
            return filename[: -len(suffix)]
    return None


def _set_of(relative_parent: PurePosixPath, root_name: str) -> str:
    return relative_parent.as_posix() if relative_parent.parts else root_name


def scan(root: str | Path, name: str | None = None, source: str | None = None) -> Dataset:
    """Find every family under ``root``.

    Parameters
    ----------
    root : str or pathlib.Path
        Dataset root; families may sit directly in it or in (nested) set folders.
    name : str, optional
        Dataset name; defaults to the folder's name.
    source : str, optional
        What the user passed (recorded in reports); defaults to ``root``.

    Returns
    -------
    Dataset
    """
    root = Path(root).resolve()
    if not root.is_dir():
        raise DatasetError(f"{root}: not a folder")
    ds = Dataset(name or root.name, root, source or str(root))
    found = []
    for path in root.rglob("*.tfa*"):
        fid = family_id(path.name)
        if fid is None or not path.is_file():
            continue
        set_name = _set_of(PurePosixPath(path.parent.relative_to(root).as_posix()), root.name)
        ref = path.parent / (fid + REF_SUFFIX)
        core = path.parent / (fid + CORE_SUFFIX)
        if not (ref.is_file() and core.is_file()):
            ds.skipped.append(f"{set_name}/{fid}")
            continue
        found.append(Family(set_name, fid, str(path), str(ref), str(core)))
    found.sort(key=lambda f: (natural_key(f.set_name), natural_key(f.family_id)))
    ds.families = found
    return ds


def is_archive(path: str | Path) -> bool:
    """Whether ``path`` is a (possibly compressed) tar file."""
    path = Path(path)
    return path.is_file() and tarfile.is_tarfile(path)


def _safe_member_path(name: str) -> PurePosixPath | None:
    p = PurePosixPath(name)
    if p.is_absolute() or ".." in p.parts:
        return None
    return p


def extract(archive: str | Path, dest: str | Path, sets: Sequence[str] | None = None) -> tuple[str, Path]:
    """Extract the family files of ``archive`` into ``dest``.

    Only inputs, references and core masks are written (not the ``.xml``
    originals); with ``sets``, only the families of those sets.

    Parameters
    ----------
    archive : str or pathlib.Path
        A tar file, optionally gzip-compressed.
    dest : str or pathlib.Path
        An existing, empty folder.
    sets : sequence of str, optional
        Set names to keep (matched as in `matches_set`).

    Returns
    -------
    name : str
        The archive's single top folder (``balibase3``), else its file name
        without suffixes.
    root : pathlib.Path
        The extracted dataset root.
    """
    dest = Path(dest)
    tops = set()
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:
            rel = _safe_member_path(member.name)
            if rel is None or not rel.parts:
                continue
            tops.add(rel.parts[0])
            if not member.isfile() or not rel.name.endswith(WANTED_SUFFIXES):
                continue
            if sets and not matches_set(_set_of(PurePosixPath(*rel.parts[1:-1]), rel.parts[0]), sets):
                continue
            target = dest.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(member)
            if src is None:
                continue
            with src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
    if len(tops) == 1:
        top = tops.pop()
        if (dest / top).is_dir():
            return top, dest / top
    stem = Path(archive).name
    for suffix in (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return stem, dest


def matches_set(set_name: str, wanted: Sequence[str]) -> bool:
    """Whether ``set_name`` is one of ``wanted`` (full name or last component).

    Examples
    --------
    >>> matches_set("RV11", ["RV11", "RV12"]), matches_set("balifam/balifam100", ["balifam100"])
    (True, True)
    """
    last = set_name.rsplit("/", 1)[-1]
    return any(w in (set_name, last) for w in wanted)


def select(dataset: Dataset, sets: Sequence[str] | None = None, limit: int | None = None) -> list[Family]:
    """The families to run: those of ``sets`` (all when None), at most
    ``limit`` per set (the first ones by ID).

    Raises
    ------
    DatasetError
        If a requested set does not exist.
    """
    if sets:
        known = dataset.sets
        missing = [s for s in sets if not any(matches_set(k, [s]) for k in known)]
        if missing:
            raise DatasetError(f"set(s) {', '.join(missing)} not in {dataset.name}; "
                             f"available: {', '.join(known) or 'none'}")
    chosen: list[Family] = []
    per_set: dict[str, int] = {}
    for fam in dataset.families:
        if sets and not matches_set(fam.set_name, sets):
            continue
        if limit is not None and per_set.get(fam.set_name, 0) >= limit:
            continue
        per_set[fam.set_name] = per_set.get(fam.set_name, 0) + 1
        chosen.append(fam)
    return chosen


@contextmanager
def open_dataset(path: str | Path, sets: Sequence[str] | None = None) -> Iterator[Dataset]:
    """Open a benchmark folder or archive for the duration of a ``with`` block.

    Archives are extracted (family files only, and only ``sets`` if given)
    into a temporary folder that is removed afterwards.

    Parameters
    ----------
    path : str or pathlib.Path
        A folder with the benchmark layout, or a tar(.gz) archive of one.
    sets : sequence of str, optional
        Restrict extraction to these sets (folders are scanned whole).

    Yields
    ------
    Dataset
    """
    path = Path(path)
    if path.is_dir():
        yield scan(path, source=str(path))
        return
    if not path.exists():
        raise DatasetError(f"{path}: no such file or folder")
    if not is_archive(path):
        raise DatasetError(f"{path}: neither a folder nor a tar archive")
    with tempfile.TemporaryDirectory(prefix="msagpu-bench-data-") as tmp:
        name, root = extract(path, tmp, sets)
        ds = scan(root, name=name, source=str(path.resolve()))
        if ds.skipped:
            print(f"warning: {len(ds.skipped)} input(s) lack a reference or core file", file=sys.stderr)
        yield ds
