"""Writes a small XLSX for the browser test, with the standard library only
(the Rust tests write theirs with crates/docparse/src/tests/sheet_inputs.rs):
one sheet of branches with a growth rate shown as a percentage (`0.0%`) and
an opening date in the file's own day-first format (`dd/mm/yyyy`).

    python3 make_xlsx.py OUT.xlsx
"""
import sys
import zipfile
from xml.sax.saxutils import escape

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG = "http://schemas.openxmlformats.org/package/2006/relationships"

HEADER = ["Chi nhánh", "Doanh thu (tỷ đồng)", "Tăng trưởng", "Ngày mở"]
# (branch, revenue, growth as a fraction, opening date as an Excel serial day)
ROWS = [
    ("Hà Nội", 1250.5, 0.082, 42065),
    ("Hải Phòng", 702.4, 0.057, 42993),
    ("Đà Nẵng", 640.2, 0.124, 43252),
    ("Cần Thơ", 310.75, -0.031, 44155),
    ("Huế", 120, 0.215, 44571),
]


def cell(ref, value, style=None):
    s = f' s="{style}"' if style is not None else ""
    if isinstance(value, str):
        return f'<c r="{ref}" t="inlineStr"{s}><is><t>{escape(value)}</t></is></c>'
    return f'<c r="{ref}"{s}><v>{value}</v></c>'


def sheet_xml():
    rows = ['<row r="1">' + "".join(cell(f"{c}1", v) for c, v in zip("ABCD", HEADER)) + "</row>"]
    for i, (name, revenue, growth, opened) in enumerate(ROWS, start=2):
        cells = [cell(f"A{i}", name), cell(f"B{i}", revenue), cell(f"C{i}", growth, 1), cell(f"D{i}", opened, 2)]
        rows.append(f'<row r="{i}">' + "".join(cells) + "</row>")
    return f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="{MAIN}"><sheetData>{"".join(rows)}</sheetData></worksheet>'


def main(out):
    ct = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    parts = {
        "[Content_Types].xml": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            f'<Override PartName="/xl/workbook.xml" ContentType="{ct}.sheet.main+xml"/>'
            f'<Override PartName="/xl/styles.xml" ContentType="{ct}.styles+xml"/>'
            f'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="{ct}.worksheet+xml"/></Types>'
        ),
        "_rels/.rels": (
            f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="{PKG}">'
            f'<Relationship Id="rId1" Type="{REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>'
        ),
        "xl/workbook.xml": (
            f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="{MAIN}" xmlns:r="{REL}">'
            '<sheets><sheet name="Chi nhánh" sheetId="1" r:id="rId1"/></sheets></workbook>'
        ),
        "xl/_rels/workbook.xml.rels": (
            f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="{PKG}">'
            f'<Relationship Id="rIdStyles" Type="{REL}/styles" Target="styles.xml"/>'
            f'<Relationship Id="rId1" Type="{REL}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>'
        ),
        # Style 1: the percentage `0.0%`; style 2: the day-first date `dd/mm/yyyy`.
        "xl/styles.xml": (
            f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><styleSheet xmlns="{MAIN}">'
            '<numFmts count="2"><numFmt numFmtId="164" formatCode="dd/mm/yyyy"/><numFmt numFmtId="165" formatCode="0.0%"/></numFmts>'
            '<cellXfs count="3"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
            '<xf numFmtId="165" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
            '<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/></cellXfs></styleSheet>'
        ),
        "xl/worksheets/sheet1.xml": sheet_xml(),
    }
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, body in parts.items():
            z.writestr(name, body)


if __name__ == "__main__":
    main(sys.argv[1])
