//! The folder a soak's workspace follows: changed as the run goes, and
//! checked at the end against the documents it became.

use std::path::PathBuf;

use serde_json::json;

/// The followed folder's files: new names only (a removed name never comes
/// back), so each file is one document.
pub(super) struct Folder {
    pub(super) dir: PathBuf,
    pub(super) next: usize,
    pub(super) present: std::collections::VecDeque<String>,
    pub(super) edits: usize,
}

impl Folder {
    fn write(&self, name: &str, text: &str) -> std::io::Result<()> {
        std::fs::write(self.dir.join(name), text)
    }
    pub(super) fn add(&mut self) -> std::io::Result<()> {
        let name = format!("ghi-chu-{:05}.txt", self.next);
        self.write(&name, &format!("Ghi chú số {}: kho K{} mở cửa lúc {} giờ.\n", self.next, self.next, 7 + self.next % 3))?;
        self.present.push_back(name);
        self.next += 1;
        Ok(())
    }
    /// One change: a file edited, one added, the oldest removed.
    pub(super) fn churn(&mut self) -> std::io::Result<()> {
        self.edits += 1;
        if let Some(name) = self.present.get(self.edits % self.present.len().max(1)).cloned() {
            self.write(&name, &format!("{name} (sửa lần {}): kho mở cửa lúc {} giờ.\n", self.edits, 8 + self.edits % 3))?;
        }
        self.add()?;
        if self.present.len() > 12 {
            if let Some(old) = self.present.pop_front() {
                std::fs::remove_file(self.dir.join(old))?;
            }
        }
        Ok(())
    }
}

/// Whether the followed folder's checkpoint holds every file confirmed.
pub(super) async fn folder_settled(pool: &rag_store::sqlx::PgPool, source: uuid::Uuid, folder: &Folder) -> bool {
    let Ok(rows) = rag_store::sources::files(pool, source).await else { return false };
    let confirmed = rows.iter().all(|f| f.pending_sha256.is_none());
    let present = rows.iter().filter(|f| f.state == "present").count() == folder.present.len();
    confirmed && present
}

/// The followed folder at the end: each file exactly one live document,
/// ingested, whose searchable revision is its newest and whose text is the
/// file's; no live document for a removed file.
pub(super) async fn folder_check(pool: &rag_store::sqlx::PgPool, workspace: &str, folder: &Folder) -> anyhow::Result<serde_json::Value> {
    let docs = rag_store::documents::list(pool, workspace).await?;
    let mut wrong = Vec::new();
    for name in &folder.present {
        let live: Vec<_> = docs.iter().filter(|d| d.metadata["source_key"] == name.as_str()).collect();
        let [d] = live.as_slice() else {
            wrong.push(format!("{name}: {} live documents", live.len()));
            continue;
        };
        if d.status != rag_store::documents::DocumentStatus::Ingested || d.revision != Some(d.latest_revision) {
            wrong.push(format!("{name}: {} revision {:?} of {}", d.status, d.revision, d.latest_revision));
            continue;
        }
        let text: String = rag_store::raw::full_text(pool, workspace, d.id, None).await?.unwrap_or_default().into_iter().collect();
        let file = std::fs::read_to_string(folder.dir.join(name)).unwrap_or_default();
        if text.trim() != file.trim() {
            wrong.push(format!("{name}: searchable text {text:?} is not the file's {file:?}"));
        }
    }
    let stray: Vec<String> = docs
        .iter()
        .filter_map(|d| d.metadata["source_key"].as_str())
        .filter(|k| !folder.present.iter().any(|n| n == k))
        .map(|k| format!("{k}: removed, still listed"))
        .collect();
    wrong.extend(stray);
    Ok(json!({"ok": wrong.is_empty(), "files": folder.present.len(), "changes": folder.edits, "wrong": wrong}))
}
