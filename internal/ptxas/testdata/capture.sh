#!/usr/bin/env bash
# capture.sh: regenerate the captured `ptxas -v` outputs in this folder.
#   usage: internal/ptxas/testdata/capture.sh [PTXAS]   (default: scripts/fetch-ptxas)
# The .txt files are stderr of `ptxas -v -arch=<arch> -o /dev/null <kernel>.ptx`, unchanged.
set -euo pipefail
here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
ptxas="${1:-$("$here/../../../scripts/fetch-ptxas")}"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
for arch in sm_80 sm_90; do
	for kernel in simple spill; do
		(cd "$here" && "$ptxas" -v -arch="$arch" -o "$out" "$kernel.ptx") 2>"$here/${arch}_${kernel}.txt"
		echo "wrote ${arch}_${kernel}.txt" >&2
	done
done
"$ptxas" --version >"$here/ptxas_version.txt"
