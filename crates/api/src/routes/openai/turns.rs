//! The earlier turns a client sends with its question: the conversation
//! they continue (one this API answered), or the history a new one carries.

use rag_events::ConversationTurn;
use rag_store::messages::{self, MessageStatus};
use uuid::Uuid;

use crate::answered::text::without_markers;
use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::AppState;

/// Earlier turns carried in the event when a conversation starts here
/// (as many as every door carries), and the characters kept of each: more
/// than the answerer reads (1,500 characters a turn), and an event stays
/// far below the broker's message size whatever a client sends.
const HISTORY_KEPT: usize = rag_asking::HISTORY_CARRIED;
const TURN_CHARS_KEPT: usize = rag_asking::TURN_CHARS_CARRIED;

/// The last turns of a client's history, as the event carries them.
pub(super) fn recent(mut history: Vec<ConversationTurn>) -> Vec<ConversationTurn> {
    let from = history.len().saturating_sub(HISTORY_KEPT);
    history.drain(..from);
    for t in &mut history {
        if t.content.chars().count() > TURN_CHARS_KEPT {
            t.content = t.content.chars().take(TURN_CHARS_KEPT).collect();
        }
    }
    history
}

/// Earlier answers checked for the conversation a client continues.
const CANDIDATE_CONVERSATIONS: i64 = 5;

/// The conversation a client's earlier turns continue: one of the
/// caller's in this workspace whose messages are exactly those turns.
pub(super) async fn continued_conversation(
    state: &AppState,
    user: &AuthUser,
    ws: &str,
    turns: &[ConversationTurn],
) -> Result<Option<Uuid>, ApiError> {
    let Some(last) = turns.last().filter(|t| t.role == "assistant") else { return Ok(None) };
    let content = without_markers(&last.content);
    for id in messages::conversations_with_answer(state.pool(), ws, &user.user_id, &content, CANDIDATE_CONVERSATIONS).await? {
        let stored = messages::list(state.pool(), ws, id).await?;
        let same = stored.len() == turns.len()
            && stored
                .iter()
                .zip(turns)
                .all(|(m, t)| m.status == MessageStatus::Done && m.role == t.role && m.content.trim() == without_markers(&t.content));
        if same {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_carries_the_last_turns_bounded() {
        let turns: Vec<ConversationTurn> = (0..30)
            .map(|i| ConversationTurn {
                role: if i % 2 == 0 { "user" } else { "assistant" }.into(),
                content: format!("{i} {}", "x".repeat(i * 300)),
            })
            .collect();
        let kept = recent(turns);
        assert_eq!(kept.len(), HISTORY_KEPT);
        assert!(kept[0].content.starts_with("18 "), "{}", &kept[0].content[..5]);
        assert!(kept.iter().all(|t| t.content.chars().count() <= TURN_CHARS_KEPT));
    }
}
