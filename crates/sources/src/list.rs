//! Listing a source: a folder walked without following symlinks (a link
//! never leads a sync outside the folder), or an S3 prefix page by page.
//! Hidden files and folders (a leading '.') are skipped, as `upload` does.

use std::path::Path;

use rag_blobs::BlobStore;

use crate::plan::Listed;
use crate::SourceError;

/// Every regular file under `root`, keys `/`-separated relative paths;
/// `version` is its size and modification time (nanoseconds), which an
/// edit changes without reading the file.
pub fn folder(root: &Path) -> Result<Vec<Listed>, SourceError> {
    let mut out = Vec::new();
    let walk = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    for entry in walk {
        let entry = entry.map_err(|e| SourceError::List { path: root.display().to_string(), message: e.to_string() })?;
        // Symlinks are skipped, not followed: their target may be anywhere.
        if !entry.file_type().is_file() {
            continue;
        }
        let meta = entry.metadata().map_err(|e| SourceError::List { path: entry.path().display().to_string(), message: e.to_string() })?;
        let Ok(relative) = entry.path().strip_prefix(root) else { continue };
        let key = relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
        let mtime =
            meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map(|d| d.as_nanos()).unwrap_or_default();
        out.push(Listed { key, size: meta.len(), version: format!("{}:{mtime}", meta.len()) });
    }
    Ok(out)
}

/// Every object under `prefix` of the bucket `store` is bound to, keys
/// relative to the prefix; `version` is the ETag with the size and the
/// time of the last write. Objects whose key ends
/// in '/' (folder markers) and hidden ones are skipped. Calls `progress`
/// with the count after each page.
pub async fn bucket(store: &BlobStore, prefix: &str, mut progress: impl FnMut(usize)) -> Result<Vec<Listed>, SourceError> {
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let (page, next) = store.list_page(prefix, token).await?;
        for o in page {
            let Some(key) = o.key.strip_prefix(prefix) else { continue };
            let key = key.trim_start_matches('/');
            if key.is_empty() || key.ends_with('/') || key.split('/').any(|part| part.starts_with('.')) {
                continue;
            }
            // The ETag changes with the content; the size and the time of
            // the last write too, for a server that lists no ETag.
            let version = format!("{}|{}|{}", o.etag.as_deref().unwrap_or(""), o.size, o.modified.as_deref().unwrap_or(""));
            out.push(Listed { key: key.to_string(), size: o.size, version });
        }
        progress(out.len());
        match next {
            Some(n) => token = Some(n),
            None => return Ok(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_lists_its_files_not_hidden_ones_nor_symlinks() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("hr/2026")).unwrap();
        std::fs::write(root.path().join("hr/2026/quy-che.md"), "# Quy chế").unwrap();
        std::fs::write(root.path().join("a.txt"), "a").unwrap();
        std::fs::write(root.path().join(".secret"), "x").unwrap();
        std::fs::create_dir(root.path().join(".git")).unwrap();
        std::fs::write(root.path().join(".git/config"), "x").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("passwd"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("passwd"), root.path().join("link.txt")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("linkdir")).unwrap();
        let listed = folder(root.path()).unwrap();
        let keys: Vec<&str> = listed.iter().map(|l| l.key.as_str()).collect();
        assert_eq!(keys, ["a.txt", "hr/2026/quy-che.md"]);
        assert!(listed[0].version.starts_with("1:"), "{:?}", listed[0]);
    }
}
