//! What the tests read from the store, through its functions (the read
//! models' own, and `rag_store::testing`'s across a test database): a
//! migration changes the store, not the tests.

use rag_store::documents::{DocumentRow, DocumentStatus};
use rag_store::messages::MessageRow;
use rag_store::testing;
use uuid::Uuid;

use super::TestEnv;

impl TestEnv {
    /// Every document of the test's database (any workspace, deleted ones included), by id.
    pub async fn documents(&self) -> Vec<DocumentRow> {
        testing::all_documents(&self.pool).await.unwrap()
    }

    pub async fn document_count(&self) -> i64 {
        self.documents().await.len() as i64
    }

    pub async fn document_ids(&self) -> Vec<String> {
        self.documents().await.into_iter().map(|d| d.id.to_string()).collect()
    }

    /// Documents of the test's database in one of `statuses`.
    pub async fn count_with_status(&self, statuses: &[DocumentStatus]) -> i64 {
        self.documents().await.iter().filter(|d| statuses.contains(&d.status)).count() as i64
    }

    /// Ingested documents of the test's database, any workspace.
    pub async fn ingested_count(&self) -> i64 {
        self.count_with_status(&[DocumentStatus::Ingested]).await
    }

    /// A document of the test's database, if it has a row (any workspace).
    pub async fn find_document(&self, id: &str) -> Option<DocumentRow> {
        let id: Uuid = id.parse().unwrap();
        self.documents().await.into_iter().find(|d| d.id == id)
    }

    /// A document's status (`"ingested"`, ...) and failure code; the document must have a row.
    pub async fn status_and_failure(&self, id: &str) -> (String, Option<String>) {
        let d = self.find_document(id).await.unwrap_or_else(|| panic!("document {id} has no row"));
        (d.status.as_str().to_string(), d.failure_code)
    }

    /// The status of the test database's only document, if it has one.
    pub async fn only_status(&self) -> Option<String> {
        let docs = self.documents().await;
        assert!(docs.len() <= 1, "one document at most: {docs:?}");
        docs.first().map(|d| d.status.as_str().to_string())
    }

    /// The id of the document named `filename`; exactly one must have it.
    pub async fn document_id(&self, filename: &str) -> Uuid {
        let named: Vec<Uuid> =
            self.documents().await.into_iter().filter(|d| d.filename.as_deref() == Some(filename)).map(|d| d.id).collect();
        assert_eq!(named.len(), 1, "one document named {filename}: {named:?}");
        named[0]
    }

    /// Every message of the test's database, oldest first.
    pub async fn messages(&self) -> Vec<MessageRow> {
        testing::all_messages(&self.pool).await.unwrap()
    }

    /// Sum of the projector's stored next offsets over every partition.
    pub async fn stored_offsets_sum(&self, group: &str) -> i64 {
        let group = format!("{}{group}", self.prefix);
        rag_store::offsets::list(&self.pool, &group).await.unwrap().iter().map(|(_, _, next)| next).sum()
    }
}
