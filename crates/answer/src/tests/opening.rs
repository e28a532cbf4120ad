//! The answer's opening written for the model (`ANSWER_LLM_PREFILL`,
//! llama.cpp's assistant prefill), against the fake chat-completions
//! server: the model's own `answerable` value and its probability kept, the
//! sections streamed from their first word, and a provider that refuses
//! it asked the ordinary way.

use super::llm_server::*;
use crate::contract::prefill;
use crate::LlmFallback;

fn last_message(req: &serde_json::Value) -> (String, String) {
    let last = req["messages"].as_array().unwrap().last().unwrap();
    (last["role"].as_str().unwrap().to_string(), last["content"].as_str().unwrap().to_string())
}

#[tokio::test]
async fn the_model_says_answerable_itself_and_its_sections_continue_the_opening_written_for_it() {
    let rest = "Doanh thu tăng 12,4%.\", \"cites\": [\"S1\"]}, {\"text\": \"Lợi nhuận đạt 187,3 tỷ.\", \"cites\": [\"S2\"]}]}";
    let (url, server) = serve(vec![Reply::Value(0.9), Reply::Stream { content: rest.into(), piece: 4, cut: false }]).await;
    let (out, partials) = ask(&client_with(&url, 5000, true), LlmFallback::Fail, QUESTION).await;
    let out = out.unwrap();
    assert!(!out.abstained);
    let cited: Vec<&str> = out.sections.iter().map(|s| s.citations[0].text.as_str()).collect();
    assert_eq!(cited, ["Doanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng, tăng 12,4%.", "Lợi nhuận sau thuế đạt 187,3 tỷ đồng."]);
    // The decision's P(answerable) is the model's own, from the first call.
    let p = out.report.answerable_score.unwrap();
    assert!((p - 0.9).abs() < 1e-9, "{p}");
    // The first call: the opening as the assistant's message, the value's
    // grammar, a few tokens; no schema (llama.cpp would apply it to the
    // continuation from its first character).
    let reqs = server.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 2);
    assert_eq!(last_message(&reqs[0]), ("assistant".into(), prefill::ANSWERABLE_OPENING.into()));
    assert_eq!(reqs[0]["grammar"], prefill::ANSWERABLE_GRAMMAR);
    assert_eq!(reqs[0]["max_tokens"], prefill::ANSWERABLE_MAX_TOKENS);
    assert!(reqs[0].get("response_format").is_none());
    // The second: the opening up to the first section's text (text first
    // whatever the languages), and the grammar of the rest, naming the
    // prompt's ids only.
    assert_eq!(last_message(&reqs[1]), ("assistant".into(), prefill::sections_opening(true)));
    assert!(reqs[1]["grammar"].as_str().unwrap().contains("id ::= \"\\\"S1\\\"\" | \"\\\"S2\\\"\"\n"), "{}", reqs[1]["grammar"]);
    assert_eq!(reqs[1]["stream"], true);
    // Streamed from the first section's first words, before it closed.
    let texts: Vec<String> = partials.iter().filter_map(|p| p.first().map(|s| s.text.clone())).collect();
    assert!(texts.iter().any(|t| !t.is_empty() && t.len() < "Doanh thu tăng 12,4%.".len()), "{texts:?}");
    // The record keeps the prompt's own prefill and all the server's time.
    let t = out.timings.unwrap();
    assert_eq!(t["prompt_ms"].as_f64(), Some(1500.0));
    assert!(out.first_token.is_some());
}

#[tokio::test]
async fn the_model_saying_not_answerable_ends_the_answer_in_one_short_call() {
    let (url, server) = serve(vec![Reply::Value(0.2)]).await;
    let (out, _) = ask(&client_with(&url, 5000, true), LlmFallback::Fail, QUESTION).await;
    let out = out.unwrap();
    assert!(out.abstained);
    assert!(out.sections.iter().all(|s| s.citations.is_empty()));
    let p = out.report.answerable_score.unwrap();
    assert!((p - 0.2).abs() < 1e-9, "{p}");
    assert_eq!(server.requests.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_provider_that_refuses_the_opening_is_asked_the_ordinary_way() {
    let (url, server) = serve(vec![Reply::Status(400), Reply::Content(answer_json(&["S1"]))]).await;
    let (out, _) = ask(&client_with(&url, 5000, true), LlmFallback::Fail, QUESTION).await;
    let out = out.unwrap();
    assert!(!out.abstained);
    assert_eq!(out.sections[0].citations[0].text, "Doanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng, tăng 12,4%.");
    let reqs = server.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1]["response_format"]["type"], "json_schema");
    assert_eq!(last_message(&reqs[1]).0, "user");
}

#[tokio::test]
async fn a_value_the_grammar_should_not_allow_is_asked_the_ordinary_way() {
    let (url, server) = serve(vec![Reply::Content("maybe".into()), Reply::Content(answer_json(&["S1"]))]).await;
    let (out, _) = ask(&client_with(&url, 5000, true), LlmFallback::Fail, QUESTION).await;
    assert!(!out.unwrap().abstained);
    assert_eq!(server.requests.lock().unwrap().len(), 2);
}
