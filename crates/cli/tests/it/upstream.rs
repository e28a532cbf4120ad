//! The upstream example of docs/upstream.md, run exactly as documented
//! (Python, confluent-kafka, fastavro, boto3): the document it produces
//! goes through the whole pipeline.

use std::time::Duration;

use crate::app::TestApp;
use crate::common::*;
use rag_store::sqlx;

#[tokio::test]
async fn the_documented_upstream_producer_gets_a_document_ingested() {
    let t = TestEnv::new().await;
    let run = TestApp::spawn(&t, &[]).await;
    let dir = std::env::temp_dir().join(format!("upstream-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
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
        sqlx::query_scalar::<_, String>("SELECT status FROM documents WHERE id = $1::uuid")
            .bind(&doc)
            .fetch_optional(&t.pool)
            .await
            .unwrap()
            .as_deref()
            == Some("ingested")
    })
    .await;
    let (filename, content_type, uploaded_by, metadata): (String, String, String, serde_json::Value) =
        sqlx::query_as("SELECT filename, content_type, uploaded_by, metadata FROM documents WHERE id = $1::uuid")
            .bind(&doc)
            .fetch_one(&t.pool)
            .await
            .unwrap();
    assert_eq!(
        (filename.as_str(), content_type.as_str(), uploaded_by.as_str()),
        ("so-tay-nhan-vien.md", "text/markdown", "upstream-example")
    );
    assert_eq!(metadata["source"], "hr-system");
    let (ok, out, err) = t.run(&["search", "thẻ ra vào", "--workspace", &t.workspace, "--json"]).await;
    assert!(ok, "{err}");
    assert!(out.contains(&doc), "{out}");
    run.stop().await;
    t.cleanup().await;
}
