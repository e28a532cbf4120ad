"""A slow OpenAI-compatible chat-completions server for the browser test:
it speaks the real wire protocol (server-sent events when asked to stream)
so the page can be seen while an answer is written.

    python3 fake_llm.py PORT

- A request with a `response_format` is an answer: it cites the evidence
  sentences ("[S4] ...") sharing the most words with the question, one
  section each, or answers `{"answerable": false}` when none shares three.
  Streamed 4 characters every 60 ms (a few seconds in all).
- A question with "viết lại" ("write again") gets a first reply cut
  short (its closing brackets missing): the answerer cannot read it and
  asks again, so the page sees the answer's words taken back and written
  a second time. The second reply is whole.
- A question that asks two things, "…? Ngoài ra, …?", is answered part by
  part, and the model sees only the part: its first part here, how much
  net revenue grew ("doanh thu thuần … tăng bao nhiêu?"), gets a first
  section that starts by asking the question back ("Doanh thu thuần tăng
  bao nhiêu?"). The answerer takes questions out of an answer, so the
  part's final text is shorter than its streamed words, which is no
  restart: the page must not say "Checking again…".
- A question with "con số" ("the figure") gets net revenue's rise
  written wrong (21,4% for the document's 12,4%): the answerer's figure
  check takes it back after it streamed, and the page strikes it through.
- A check of an answer (`{"answers": bool}`) passes.
- A request without one condenses a follow-up: the question as it is.
"""
import json
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WORD = re.compile(r"\w+", re.UNICODE)


def words(text):
    return {w.lower() for w in WORD.findall(text) if len(w) > 1}


# What the answerer says after a reply it could not read (prompt::retry).
RETRY = "That reply could not be used"


def question_of(messages):
    """The question, and whether this is the answerer's second try."""
    if messages[-1]["content"].startswith(RETRY):
        return messages[-3]["content"], True
    return messages[-1]["content"], False


def answer(body):
    messages = body["messages"]
    question, _ = question_of(messages)
    evidence = messages[1]["content"] if len(messages) > 1 else ""
    units = []
    for line in evidence.splitlines():
        m = re.match(r"\[(S\d+)\] (.*)", line)
        if m:
            units.append((len(words(m.group(2)) & words(question)), m.group(1), m.group(2)))
    best = sorted((u for u in units if u[0] >= 3), key=lambda u: -u[0])[:2]
    if not best:
        return {"answerable": False, "sections": []}
    sections = [{"text": text, "cites": [sid]} for _, sid, text in best]
    if asks_back(question):
        sections[0]["text"] = "Doanh thu thuần tăng bao nhiêu? " + sections[0]["text"]
    if "con số" in question.lower():
        for s in sections:
            s["text"] = s["text"].replace("12,4%", "21,4%")
    return {"answerable": True, "sections": sections}


def asks_back(question):
    """The first part of the two-part question of the browser test (or the
    whole of it, should the answerer ever pass it on whole)."""
    q = question.lower()
    return "ngoài ra" in q or bool(re.search(r"doanh thu thuần.*tăng bao nhiêu\?$", q.strip()))


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        schema = body.get("response_format", {}).get("json_schema", {}).get("schema", {})
        if schema.get("required") == ["answers"]:
            content = json.dumps({"answers": True})
        elif "response_format" in body:
            content = json.dumps(answer(body), ensure_ascii=False)
            question, retried = question_of(body["messages"])
            if "viết lại" in question.lower() and not retried:
                content = content[:-2]
        else:
            content = body["messages"][-1]["content"].split("User (last question): ")[-1]
        usage = {"prompt_tokens": 100, "completion_tokens": 30, "total_tokens": 130}
        if not body.get("stream"):
            out = json.dumps({"object": "chat.completion", "model": "fake",
                              "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
                              "usage": usage}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for i in range(0, len(content), 4):
            chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": content[i:i + 4]}}]}
            self.wfile.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
            self.wfile.flush()
            time.sleep(0.06)
        self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\ndata: [DONE]\n\n".encode())
        self.wfile.flush()


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
