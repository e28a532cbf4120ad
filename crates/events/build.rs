//! Embeds every schema under `schemas/` (current and released versions) so
//! that adding a released version needs no code change.
use std::{env, fs, path::PathBuf};

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("../../schemas");
    let root = root.canonicalize().expect("schemas/ directory");
    println!("cargo:rerun-if-changed={}", root.display());
    let released_root = root.join("released");
    println!("cargo:rerun-if-changed={}", released_root.display());
    let mut entries = Vec::new();
    let mut events: Vec<_> = fs::read_dir(&released_root)
        .expect("schemas/released")
        .map(|e| e.expect("a readable schema directory entry").path())
        .filter(|p| p.is_dir())
        .collect();
    events.sort();
    for dir in events {
        println!("cargo:rerun-if-changed={}", dir.display());
        let event = dir.file_name().expect("a directory name").to_string_lossy().to_string();
        let mut versions: Vec<_> = fs::read_dir(&dir)
            .expect("a released schema directory")
            .map(|e| e.expect("a readable schema directory entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "avsc"))
            .collect();
        versions.sort();
        for v in versions {
            println!("cargo:rerun-if-changed={}", v.display());
            let stem = v.file_stem().expect("a schema file name").to_string_lossy().to_string();
            let n: u32 = stem
                .strip_prefix('v')
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("released schema must be named vN.avsc: {}", v.display()));
            entries
                .push(format!("ReleasedSchema {{ event: {event:?}, version: {n}, text: include_str!({:?}) }},", v.display().to_string()));
        }
    }
    let mut current = Vec::new();
    let mut files: Vec<_> = fs::read_dir(&root)
        .expect("schemas/")
        .map(|e| e.expect("a readable schema directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "avsc"))
        .collect();
    files.sort();
    for f in files {
        println!("cargo:rerun-if-changed={}", f.display());
        let event = f.file_stem().expect("a schema file name").to_string_lossy().to_string();
        current.push(format!("({event:?}, include_str!({:?})),", f.display().to_string()));
    }
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("embedded_schemas.rs");
    fs::write(
        out,
        format!(
            "/// Every released schema version, from `schemas/released/<event>/vN.avsc`.\npub static RELEASED: &[ReleasedSchema] = &[\n{}\n];\n/// The current schema of each event, from `schemas/<event>.avsc`.\npub static CURRENT: &[(&str, &str)] = &[\n{}\n];\n",
            entries.join("\n"),
            current.join("\n")
        ),
    )
    .expect("writing the embedded schemas to OUT_DIR");
}
