"""Writes a small PPTX for the browser test, with the standard library only
(the Rust tests write theirs with crates/docparse/src/tests/slide_inputs.rs):
three slides in presentation order, each a title and a body, the second a
table with its header row, the third speaker notes.

    python3 make_pptx.py OUT.pptx
"""
import sys
import zipfile
from xml.sax.saxutils import escape

NS = ('xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
      'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
      'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"')
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"

SLIDES = [
    ("Kết quả kinh doanh quý 3", ["Doanh thu quý 3 tăng 18% so với cùng kỳ.", "Khách hàng mới: 1.240 doanh nghiệp."], None, None),
    ("Doanh thu theo khu vực", [], [["Khu vực", "Doanh thu (tỷ đồng)"], ["Miền Bắc", "412,5"], ["Miền Nam", "538,1"]], None),
    ("Kế hoạch quý 4", ["Mở văn phòng tại Đà Nẵng vào tháng 11."], None, "Ngân sách văn phòng Đà Nẵng: 3,2 tỷ đồng."),
]


def paragraphs(items):
    return "".join(f"<a:p><a:r><a:t>{escape(t)}</a:t></a:r></a:p>" for t in items)


def shape(sid, ph, items):
    ph = f'<p:ph type="{ph}"/>' if ph else ""
    return (f'<p:sp><p:nvSpPr><p:cNvPr id="{sid}" name="s{sid}"/><p:cNvSpPr/><p:nvPr>{ph}</p:nvPr></p:nvSpPr><p:spPr/>'
            f"<p:txBody><a:bodyPr/>{paragraphs(items)}</p:txBody></p:sp>")


def table(rows):
    body = "".join("<a:tr>" + "".join(f"<a:tc><a:txBody><a:bodyPr/>{paragraphs([c])}</a:txBody></a:tc>" for c in r) + "</a:tr>"
                   for r in rows)
    return ('<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="9" name="t"/><p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr>'
            '<a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table">'
            f'<a:tbl><a:tblPr firstRow="1"/>{body}</a:tbl></a:graphicData></a:graphic></p:graphicFrame>')


def tree(inner):
    return ('<p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>'
            f"{inner}</p:spTree></p:cSld>")


def rels(entries):
    return ('<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            + "".join(f'<Relationship Id="{i}" Type="{REL}/{k}" Target="{t}"/>' for i, k, t in entries) + "</Relationships>")


def main(out):
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                   '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                   '<Default Extension="xml" ContentType="application/xml"/></Types>')
        z.writestr("_rels/.rels", rels([("rId1", "officeDocument", "ppt/presentation.xml")]))
        ids = "".join(f'<p:sldId id="{256 + n}" r:id="rId{n + 1}"/>' for n in range(len(SLIDES)))
        z.writestr("ppt/presentation.xml", f'<?xml version="1.0" encoding="UTF-8"?><p:presentation {NS}><p:sldIdLst>{ids}</p:sldIdLst></p:presentation>')
        z.writestr("ppt/_rels/presentation.xml.rels", rels([(f"rId{n + 1}", "slide", f"slides/slide{n + 1}.xml") for n in range(len(SLIDES))]))
        for n, (title, body, rows, notes) in enumerate(SLIDES, start=1):
            inner = shape(2, "title", [title]) + (shape(3, None, body) if body else "") + (table(rows) if rows else "")
            z.writestr(f"ppt/slides/slide{n}.xml", f'<?xml version="1.0" encoding="UTF-8"?><p:sld {NS}>{tree(inner)}</p:sld>')
            slide_rels = []
            if notes:
                slide_rels.append(("rId2", "notesSlide", f"../notesSlides/notesSlide{n}.xml"))
                z.writestr(f"ppt/notesSlides/notesSlide{n}.xml",
                           f'<?xml version="1.0" encoding="UTF-8"?><p:notes {NS}>{tree(shape(3, "body", [notes]))}</p:notes>')
            z.writestr(f"ppt/slides/_rels/slide{n}.xml.rels", rels(slide_rels))


if __name__ == "__main__":
    main(sys.argv[1])
