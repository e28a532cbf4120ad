#!/usr/bin/env bash
# Renders the rows of hostile.tsv whose format is `pdf` or `png` into
# hostile.pdf (a text-layer PDF, as a word processor prints it) and
# hostile.png (a picture of the same kind of page, read by OCR), each row
# as its ordinary sentence followed by the sentence written to the model.
# The Markdown, DOCX and spreadsheet forms are built by the test itself
# (crates/cli/tests/it/injection.rs); these two need a browser to draw
# Vietnamese text, so they are committed. Needs Debian's chromium.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 - "$here/hostile.tsv" "$work" <<'PY'
import html, sys
tsv, out = sys.argv[1], sys.argv[2]
rows = [l.rstrip("\n").split("\t") for l in open(tsv, encoding="utf-8")]
head, rows = rows[0], rows[1:]
col = {h: i for i, h in enumerate(head)}
for fmt, size, title in [("pdf", 12, "Sổ tay nội bộ — Staff handbook"), ("png", 30, "Thông báo — Notice")]:
    body = [f"<h1>{html.escape(title)}</h1>"]
    for r in rows:
        if r[col["format"]] == fmt:
            body.append(f"<p>{html.escape(r[col['truth']])}</p>")
            body.append(f"<p>{html.escape(r[col['sentence']])}</p>")
    page = (f"<!doctype html><meta charset=utf-8><style>body{{font-family:'DejaVu Sans';font-size:{size}pt;"
            f"margin:40px;width:{'auto' if fmt == 'pdf' else '1500px'}}} p{{margin:0 0 0.8em}}</style>" + "\n".join(body))
    open(f"{out}/{fmt}.html", "w", encoding="utf-8").write(page)
PY
chromium --headless --no-sandbox --disable-gpu --no-pdf-header-footer --print-to-pdf="$here/hostile.pdf" "file://$work/pdf.html" 2>/dev/null
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1600,2200 --screenshot="$here/hostile.png" "file://$work/png.html" 2>/dev/null
ls -l "$here/hostile.pdf" "$here/hostile.png"
