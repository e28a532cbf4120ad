//! An answer whose fixed opening is written for the model
//! ([`contract::prefill`]): one short call for the `answerable` value and
//! its token probabilities, then, when it is `true`, the sections streamed
//! from their first word, continuing the same cached prompt. The reply is
//! handed back as one [`llm::Completion`], as a single call would give it,
//! so everything after the model reads it the same way.

use std::time::Instant;

use crate::contract::prefill;
use crate::llm::{self, ChatClient, Completion, LlmError, TokenLogprobs};
use crate::prompt::ChatMessage;

/// The answer to `messages` in the output contract, its opening prefilled.
/// `Ok(None)`: the provider refused the prefill or the grammar, or gave a
/// value that is neither `true` nor `false`; the caller asks the ordinary
/// way.
pub(crate) async fn answer_with_opening(
    client: &ChatClient,
    messages: &[ChatMessage],
    ids: &[String],
    text_first: bool,
    top: u8,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<Option<Completion>, LlmError> {
    let started = Instant::now();
    let mut asked = messages.to_vec();
    asked.push(ChatMessage::new("assistant", prefill::ANSWERABLE_OPENING));
    let format = llm::Format::Grammar { grammar: prefill::ANSWERABLE_GRAMMAR, max_tokens: Some(prefill::ANSWERABLE_MAX_TOKENS) };
    let value = match client.complete_with_logprobs(&asked, format, top).await {
        Ok(c) => c,
        Err(LlmError::Failed(e)) => {
            tracing::warn!(error = %e, "the provider refused the answer's prefilled opening; asking without it");
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    // The opening as the model would have written it, for the readers of
    // the answer's token probabilities (`answerable`'s value follows it).
    let mut logprobs = vec![TokenLogprobs { token: prefill::ANSWERABLE_OPENING.into(), logprob: 0.0, top_logprobs: Vec::new() }];
    logprobs.extend(value.logprobs.iter().cloned());
    let answerable = match value.content.trim() {
        "true" => true,
        "false" => false,
        other => {
            tracing::warn!(value = other, "the prefilled answer's value is neither true nor false; asking without the opening");
            return Ok(None);
        }
    };
    if !answerable {
        let content = format!("{} false, \"sections\": []}}", prefill::ANSWERABLE_OPENING);
        on_text(&content);
        return Ok(Some(Completion { content, logprobs, elapsed: started.elapsed(), ..value }));
    }
    let opening = prefill::sections_opening(text_first);
    asked.pop();
    asked.push(ChatMessage::new("assistant", opening.clone()));
    let grammar = prefill::sections_grammar(ids, text_first);
    let mut on_rest = |rest: &str| on_text(&format!("{opening}{rest}"));
    let rest = match client
        .complete_streamed_with_logprobs(&asked, llm::Format::Grammar { grammar: &grammar, max_tokens: None }, top, &mut on_rest)
        .await
    {
        Ok(c) => c,
        Err(LlmError::Failed(e)) => {
            tracing::warn!(error = %e, "the provider refused the sections' grammar; asking without the opening");
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let between = opening[prefill::ANSWERABLE_OPENING.len() + " true".len()..].to_string();
    logprobs.push(TokenLogprobs { token: between, logprob: 0.0, top_logprobs: Vec::new() });
    logprobs.extend(rest.logprobs.iter().cloned());
    let mut usage = Some(value.usage.clone());
    llm::add_usage(&mut usage, &rest.usage);
    Ok(Some(Completion {
        content: format!("{opening}{}", rest.content),
        usage: usage.unwrap_or(rest.usage),
        first_token: value.first_token,
        elapsed: started.elapsed(),
        timings: merged_timings(value.timings.as_ref(), rest.timings.as_ref()),
        streamed: rest.streamed,
        logprobs,
    }))
}

/// llama.cpp's `timings` of the two calls as one: the prompt's prefill is
/// the first call's (what the first words cannot come before); the second
/// call's short prefill of the opening counts with the decoding, so
/// `prompt_ms + predicted_ms` stays all the time the server spent.
fn merged_timings(value: Option<&serde_json::Value>, rest: Option<&serde_json::Value>) -> Option<serde_json::Value> {
    let (v, r) = (value?, rest?);
    let f = |t: &serde_json::Value, k: &str| t[k].as_f64().unwrap_or(0.0);
    let predicted_ms = f(v, "predicted_ms") + f(r, "prompt_ms") + f(r, "predicted_ms");
    let predicted_n = f(v, "predicted_n") + f(r, "predicted_n");
    let mut t = v.clone();
    t["predicted_ms"] = predicted_ms.into();
    t["predicted_n"] = predicted_n.into();
    t["predicted_per_second"] = if predicted_ms > 0.0 { (1000.0 * predicted_n / predicted_ms).into() } else { serde_json::Value::Null };
    t["opening_prompt_n"] = r["prompt_n"].clone();
    t["opening_prompt_ms"] = r["prompt_ms"].clone();
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::merged_timings;

    #[test]
    fn the_prompts_prefill_stays_the_first_calls_and_the_total_is_kept() {
        let v =
            serde_json::json!({"prompt_n": 230, "prompt_ms": 3000.0, "predicted_n": 1, "predicted_ms": 110.0, "prompt_per_second": 76.7});
        let r = serde_json::json!({"prompt_n": 12, "prompt_ms": 190.0, "predicted_n": 39, "predicted_ms": 4000.0});
        let t = merged_timings(Some(&v), Some(&r)).unwrap();
        assert_eq!((t["prompt_n"].as_f64(), t["prompt_ms"].as_f64()), (Some(230.0), Some(3000.0)));
        assert_eq!((t["predicted_n"].as_f64(), t["predicted_ms"].as_f64()), (Some(40.0), Some(4300.0)));
        assert_eq!(crate::llm::server_ms(&t), Some(7300));
        assert_eq!(t["opening_prompt_n"], 12);
        assert_eq!(merged_timings(Some(&v), None), None);
    }
}
