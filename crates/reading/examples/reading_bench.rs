//! How long a reading view takes for a large document, and how big it is:
//! `cargo run -p rag-reading --example reading_bench [--release]`.
//! A policy of N sections (a heading, two paragraphs with emphasis and a
//! link, a list, a five-row table), as Markdown and as HTML.

use std::time::Instant;

fn main() {
    for sections in [100usize, 1000, 4000] {
        let mut md = String::new();
        let mut html = String::from("<html><body>");
        for i in 0..sections {
            md.push_str(&format!("## Mục {i}. Chính sách nghỉ phép\n\nNhân viên được nghỉ **12 ngày** mỗi năm, xem [quy chế](https://example.vn/{i}).\nNgày phép chưa dùng được chuyển sang *quý đầu* năm sau.\n\n- Nghỉ ốm\n- Nghỉ kết hôn\n\n| Loại | Số ngày | Lương |\n|---|---|---|\n"));
            html.push_str(&format!("<h2>Mục {i}. Chính sách nghỉ phép</h2><p>Nhân viên được nghỉ <b>12 ngày</b> mỗi năm, xem <a href=\"https://example.vn/{i}\">quy chế</a>.</p><ul><li>Nghỉ ốm</li><li>Nghỉ kết hôn</li></ul><table><tr><th>Loại</th><th>Số ngày</th><th>Lương</th></tr>"));
            for r in 0..5 {
                md.push_str(&format!("| Loại {r} | {r} ngày | Có |\n"));
                html.push_str(&format!("<tr><td>Loại {r}</td><td>{r} ngày</td><td>Có</td></tr>"));
            }
            md.push('\n');
            html.push_str("</table>");
        }
        html.push_str("</body></html>");
        let parsed =
            rag_docparse::parse(html.as_bytes(), "text/html", "b.html", &rag_docparse::Limits::default()).expect("the page parses");
        let md_raw = rag_docparse::parse(md.as_bytes(), "text/markdown", "b.md", &rag_docparse::Limits::default())
            .expect("the Markdown parses")
            .full_text;
        let t = Instant::now();
        let view = rag_reading::markdown(&md_raw);
        let md_time = t.elapsed();
        let md_json = serde_json::to_vec(&view).expect("serialises").len();
        let t = Instant::now();
        let view = rag_reading::html(&html, &parsed.full_text);
        let html_time = t.elapsed();
        let html_json = serde_json::to_vec(&view).expect("serialises").len();
        println!(
            "{sections:>5} sections: Markdown {:>7.0} kB -> {:>7.1} ms, view {:>6.0} kB | HTML {:>7.0} kB -> {:>7.1} ms, view {:>6.0} kB",
            md_raw.len() as f64 / 1e3,
            md_time.as_secs_f64() * 1e3,
            md_json as f64 / 1e3,
            html.len() as f64 / 1e3,
            html_time.as_secs_f64() * 1e3,
            html_json as f64 / 1e3
        );
    }
}
