#!/usr/bin/env bash
# Extracts a BEIR dataset (NFCorpus or ArguAna) from a local git mirror of
# the public repository beir-cellar/beir into the layout `rag-dev eval retrieval DIR`
# and `scripts/llamaindex-bench --beir DIR` read:
#
#   eval/beir-extract.sh GIT_DIR NAME OUT_DIR
#
#   GIT_DIR  a git directory (bare) holding commit $COMMIT below, e.g.
#            /work/.mirror/beir-cellar+beir/repo
#   NAME     nfcorpus | arguana
#   OUT_DIR  gets corpus.jsonl, queries.jsonl and qrels/test.tsv, and
#            nothing else of the zip (NFCorpus's train and dev qrels are
#            left out). Those three files are overwritten; anything else
#            already in OUT_DIR is left alone.
#
# Why a git mirror: this development machine cannot download the BEIR zips
# (their download site is not reachable from it). The mirror was brought in by the development
# session's repository-fetch tool. The zips sit at
# data/beir_raw/NAME.zip in commit $COMMIT, the head of pull request 213 of
# beir-cellar/beir (refs/pull/213/head, not merged upstream). They are
# byte-identical to the official BEIR downloads: their MD5s are the ones in
# beir-cellar/beir's README table and examples/dataset/md5.csv
# (nfcorpus.zip a89dba18a62ef92f7d323ec890a0d38d, arguana.zip
# 8ad3e3c2a5867cdced806d6503f29b99). The script pins and checks SHA-256.
#
# Licences (neither is redistributed by this repository; OUT_DIR is for
# local evaluation, e.g. under .local/, which git ignores):
# - ArguAna (Wachsmuth et al., 2018, as packaged by BEIR): CC BY-SA 4.0.
# - NFCorpus (Boteva et al., ECIR 2016): for academic (research) use, per
#   its project site; the
#   texts come from NutritionFacts.org and PubMed.
# BEIR's own code is Apache-2.0; it does not relicense the datasets.
#
# Needs git, sha256sum and unzip (else python3 -m zipfile).
set -euo pipefail

COMMIT=9dce09749d6cd7e7e56578978baec143f8f4b657
declare -A SHA256=(
  [nfcorpus]=efe5be03f8c5b86a5870102d0599d227c8c6e2484328e68c6522560385671b0b
  [arguana]=cfdf79adce27a401b3cd3ea267903134dbfab2c6afeb95d7fe5724a00bf7557b
)
# Expected sizes after extraction (documents, queries in queries.jsonl).
declare -A DOCS=([nfcorpus]=3633 [arguana]=8674)
declare -A QUERIES=([nfcorpus]=3237 [arguana]=1406)

die() { echo "beir-extract: $*" >&2; exit 1; }
[ $# -eq 3 ] || die "usage: $0 GIT_DIR NAME OUT_DIR (NAME: ${!SHA256[*]})"
GIT_DIR=$1 NAME=$2 OUT=$3
[ -n "${SHA256[$NAME]:-}" ] || die "unknown dataset '$NAME' (known: ${!SHA256[*]})"
git --git-dir="$GIT_DIR" cat-file -e "$COMMIT^{commit}" 2>/dev/null ||
  die "$GIT_DIR does not hold commit $COMMIT (a mirror of beir-cellar/beir with refs/pull/213/head)"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
git --git-dir="$GIT_DIR" cat-file -p "$COMMIT:data/beir_raw/$NAME.zip" >"$TMP/$NAME.zip" ||
  die "no data/beir_raw/$NAME.zip at $COMMIT"
got=$(sha256sum "$TMP/$NAME.zip" | cut -d' ' -f1)
[ "$got" = "${SHA256[$NAME]}" ] || die "$NAME.zip: sha256 $got, expected ${SHA256[$NAME]}"

mkdir -p "$TMP/x"
if command -v unzip >/dev/null; then
  unzip -q "$TMP/$NAME.zip" -d "$TMP/x"
else
  python3 -m zipfile -e "$TMP/$NAME.zip" "$TMP/x"
fi
SRC="$TMP/x/$NAME"
for f in corpus.jsonl queries.jsonl qrels/test.tsv; do
  [ -s "$SRC/$f" ] || die "$NAME.zip has no $NAME/$f"
done
docs=$(wc -l <"$SRC/corpus.jsonl")
queries=$(wc -l <"$SRC/queries.jsonl")
[ "$docs" -eq "${DOCS[$NAME]}" ] || die "$NAME: $docs documents, expected ${DOCS[$NAME]}"
[ "$queries" -eq "${QUERIES[$NAME]}" ] || die "$NAME: $queries queries, expected ${QUERIES[$NAME]}"

mkdir -p "$OUT/qrels"
cp "$SRC/corpus.jsonl" "$SRC/queries.jsonl" "$OUT/"
cp "$SRC/qrels/test.tsv" "$OUT/qrels/test.tsv"
judged=$(tail -n +2 "$OUT/qrels/test.tsv" | awk -F'\t' '$3 > 0 { print $1 }' | sort -u | wc -l)
echo "beir-extract: $NAME (sha256 ${got:0:12}...) -> $OUT: $docs documents, $queries queries, $judged judged test queries" >&2
