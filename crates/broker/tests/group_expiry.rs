//! The group coordinator of the vendored broker, driven through its own
//! API (the calls a JoinGroup, SyncGroup or Heartbeat request makes) on a
//! sqlite storage of its own: the rebalance races the chaos harness found,
//! replayed step by step with the session timeout as the only clock.

// Test code through and through (helpers included): a panic is the report.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use bytes::Bytes;
use tansu_broker::coordinator::group::Coordinator;
use tansu_broker::coordinator::group::administrator::Controller;
use tansu_sans_io::join_group_request::JoinGroupRequestProtocol;
use tansu_sans_io::sync_group_request::SyncGroupRequestAssignment;
use tansu_sans_io::{Body, ErrorCode};
use tansu_storage::{BrokerRegistrationRequest, Storage, StorageContainer};
use url::Url;

const GROUP: &str = "indexer";
const SESSION_TIMEOUT_MS: i32 = 2_000;

struct Joined {
    error: i16,
    generation: i32,
    leader: String,
    member: String,
    members: Vec<String>,
}

/// The sqlite engine resolves its URL against the working directory (as
/// `scripts/stack`'s `sqlite://tansu.db` relies on), so the database lives
/// in a temporary directory made there and named by its host part.
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new().prefix(".group-expiry-").tempdir_in(".").unwrap()
}

async fn coordinator(dir: &tempfile::TempDir) -> Controller<StorageContainer> {
    let name = dir.path().file_name().unwrap().to_str().unwrap();
    let storage = StorageContainer::builder()
        .cluster_id("test")
        .node_id(111)
        .advertised_listener(Url::parse("tcp://127.0.0.1:9092/").unwrap())
        .schema_registry(None)
        .storage(Url::parse(&format!("sqlite://{name}/tansu.db")).unwrap())
        .build()
        .await
        .unwrap();
    // As the broker does on start: the group tables refer to the cluster.
    storage
        .register_broker(BrokerRegistrationRequest {
            broker_id: 111,
            cluster_id: "test".into(),
            incarnation_id: uuid::Uuid::now_v7(),
            rack: None,
        })
        .await
        .unwrap();
    Controller::with_storage(storage).unwrap()
}

async fn join(c: &mut Controller<StorageContainer>, member: &str) -> Joined {
    let protocols = [JoinGroupRequestProtocol::default().name("range".into()).metadata(Bytes::from_static(b"documents.chunked"))];
    let body = c
        .join(Some("indexer"), GROUP, SESSION_TIMEOUT_MS, Some(30_000), member, None, "consumer", Some(&protocols[..]), None)
        .await
        .unwrap();
    let Body::JoinGroupResponse(r) = body else { panic!("{body:?}") };
    Joined {
        error: r.error_code,
        generation: r.generation_id,
        leader: r.leader,
        member: r.member_id,
        members: r.members.unwrap_or_default().into_iter().map(|m| m.member_id).collect(),
    }
}

/// A new member's two joins: the first is told its id, the second joins.
async fn new_member(c: &mut Controller<StorageContainer>) -> Joined {
    let first = join(c, "").await;
    assert_eq!(first.error, i16::from(ErrorCode::MemberIdRequired));
    join(c, &first.member).await
}

async fn sync(c: &mut Controller<StorageContainer>, generation: i32, member: &str, assigned: &[(&str, &'static [u8])]) -> i16 {
    let assignments: Vec<SyncGroupRequestAssignment> = assigned
        .iter()
        .map(|(m, a)| SyncGroupRequestAssignment::default().member_id((*m).to_string()).assignment(Bytes::from_static(a)))
        .collect();
    let body = c.sync(GROUP, generation, member, None, Some("consumer"), Some("range"), Some(&assignments[..])).await.unwrap();
    let Body::SyncGroupResponse(r) = body else { panic!("{body:?}") };
    r.error_code
}

async fn heartbeat(c: &mut Controller<StorageContainer>, generation: i32, member: &str) -> i16 {
    let body = c.heartbeat(GROUP, generation, member, None).await.unwrap();
    let Body::HeartbeatResponse(r) = body else { panic!("{body:?}") };
    r.error_code
}

/// Seen in CI's chaos run (2026-12-04): a stage process killed right after
/// its first JoinGroup (it had been told its member id, nothing more) was a
/// member of the group; the survivor led the rebalance and was handed both
/// members, and the dead one's session ran out between that join and the
/// leader's SyncGroup. The expiry pruned it without a new generation, so the
/// leader's sync formed the group with half the partitions assigned to a
/// member that no longer existed: `documents.chunked[0]` was read by nobody
/// and ten documents stayed `chunked`. An expiry while forming must
/// invalidate the join responses that listed the expired member.
#[tokio::test]
async fn a_member_expiring_between_the_leaders_join_and_sync_is_not_left_holding_partitions() {
    let dir = scratch();
    let mut c = coordinator(&dir).await;
    let none = i16::from(ErrorCode::None);
    let rebalance = i16::from(ErrorCode::RebalanceInProgress);

    let a = new_member(&mut c).await;
    assert_eq!(a.leader, a.member);
    assert_eq!(sync(&mut c, a.generation, &a.member, &[(&a.member, b"both")]).await, none);

    // A second process joins, is told its id, and dies.
    let b = join(&mut c, "").await;
    assert_eq!(b.error, i16::from(ErrorCode::MemberIdRequired));

    // The survivor is told to rebalance and leads it, over both members.
    assert_eq!(heartbeat(&mut c, a.generation, &a.member).await, rebalance);
    let a = join(&mut c, &a.member).await;
    assert_eq!(a.leader, a.member);
    assert_eq!(a.members.len(), 2, "{:?}", a.members);

    // The survivor stays alive (a heartbeat within its session) while the
    // dead member's session runs out; then the leader syncs its plan.
    let half = Duration::from_millis(u64::try_from(SESSION_TIMEOUT_MS).unwrap() * 6 / 10);
    tokio::time::sleep(half).await;
    assert_eq!(heartbeat(&mut c, a.generation, &a.member).await, none);
    tokio::time::sleep(half).await;
    let synced = sync(&mut c, a.generation, &a.member, &[(&a.member, b"[1]"), (&b.member, b"[0]")]).await;
    assert_eq!(synced, rebalance, "a plan naming an expired member must not form the group");

    // The survivor rejoins alone and takes everything.
    let a = join(&mut c, &a.member).await;
    assert_eq!((a.error, a.leader.as_str(), a.members.len()), (none, a.member.as_str(), 1));
    assert_eq!(sync(&mut c, a.generation, &a.member, &[(&a.member, b"[0,1]")]).await, none);
    assert_eq!(heartbeat(&mut c, a.generation, &a.member).await, none);
}
