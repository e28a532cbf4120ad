//! The upstream example of docs/upstream.md, run exactly as documented
//! (Python, confluent-kafka, fastavro, boto3): the document it produces
//! goes through the whole pipeline.

use std::time::Duration;

use crate::app::TestApp;
use crate::common::*;

#[tokio::test]
async fn the_documented_upstream_producer_gets_a_document_ingested() {
    let t = TestEnv::new().await;
    let run = TestApp::spawn(&t, &[]).await;
    let dir_scratch = crate::common::scratch_dir("upstream");
    let dir = dir_scratch.path().to_path_buf();
    let file = dir.join("so-tay-nhan-vien.md");
    std::fs::write(&file, "# Sổ tay nhân viên\n\nNhân viên mới nhận thẻ ra vào ở quầy lễ tân tầng một.\n").unwrap();
    let out = tokio::process::Command::new(repo_root().join("scripts/upstream-example"))
        .arg(&file)
        .args(["--workspace", &t.workspace, "--meta", "source=hr-system"])
        .envs(&t.env)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "the example failed: {}", String::from_utf8_lossy(&out.stderr));
    let produced: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let doc = produced["document_id"].as_str().unwrap().to_string();
    assert_eq!(produced["topic"], format!("{}documents.uploaded", t.prefix));
    wait_until("the upstream document ingested", Duration::from_secs(120), || async {
        t.find_document(&doc).await.is_some_and(|d| d.status.as_str() == "ingested")
    })
    .await;
    let d = t.find_document(&doc).await.unwrap();
    let metadata = d.metadata;
    assert_eq!(
        (d.filename.unwrap().as_str(), d.content_type.unwrap().as_str(), d.uploaded_by.unwrap().as_str()),
        ("so-tay-nhan-vien.md", "text/markdown", "upstream-example")
    );
    assert_eq!(metadata["source"], "hr-system");
    let (ok, out, err) = t.run(&["search", "thẻ ra vào", "--workspace", &t.workspace, "--json"]).await;
    assert!(ok, "{err}");
    assert!(out.contains(&doc), "{out}");
    run.stop().await;
    t.cleanup().await;
}
