#!/usr/bin/env bash
# SHA-256 of every output of a batch run, one line a family, to show that a change keeps the bytes.
#   benchmarks/output_checksums.sh LABEL PACKAGE_ROOT MODE BACKEND LIST SHA_DIR
# PACKAGE_ROOT is the folder holding the msa_gpu to run (a checkout, or a copy of an earlier one);
# LIST a .txt of FASTA paths (e.g. BAliBASE's 218 .tfa); the manifest goes to SHA_DIR/LABEL-MODE-BACKEND.sha
# and a line with the run's exit status, file count, wall time and the manifest's own hash to stdout.
set -u
label=$1; root=$(cd "$2" && pwd); mode=$3; backend=$4; list=$(cd "$(dirname "$5")" && pwd)/$(basename "$5")
shadir=$(mkdir -p "$6" && cd "$6" && pwd)
out=$(mktemp -d)
start=$(date +%s.%N)
(cd "$root" && python3 -m msa_gpu align "$list" --outdir "$out" --outfmt fasta --mode "$mode" \
    --backend "$backend" --quiet)
rc=$?
end=$(date +%s.%N)
(cd "$out" && sha256sum -- *) > "$shadir/$label-$mode-$backend.sha"
echo "$label $mode $backend rc=$rc files=$(ls "$out" | wc -l) wall=$(awk "BEGIN{print $end - $start}")" \
     "manifest=$(sha256sum < "$shadir/$label-$mode-$backend.sha" | cut -c1-16)"
rm -rf "$out"
