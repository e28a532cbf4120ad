"""llama.cpp's OpenAI-compatible server (/v1/chat/completions, /v1/embeddings)
from the xllamacpp wheel, which ships the server as a library, not a program.

    python3 llm_server.py GGUF --port 18082 [--threads 2] [--ctx 4096] [--parallel 2]

Two slots by default, each with --ctx tokens: llama.cpp gives a request
the slot whose cached prompt it shares most, so an answer's fixed
instructions stay cached in one slot while the short check of the answer
(and the condensing of follow-ups) use the other, instead of evicting
them between answers.

Started (and restarted) by `scripts/models up` when RAG_LLM_GGUF is set.
"""
import argparse
import signal
import sys
import time

import xllamacpp


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("gguf")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=18082)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=4096, help="context per slot, in tokens")
    ap.add_argument("--parallel", type=int, default=2, help="slots")
    a = ap.parse_args()
    p = xllamacpp.CommonParams()
    p.model.path = a.gguf
    p.hostnames = [a.host]
    p.port = a.port
    p.n_ctx = a.ctx * a.parallel
    p.n_parallel = a.parallel
    p.cpuparams.n_threads = a.threads
    p.cpuparams_batch.n_threads = a.threads
    server = xllamacpp.Server(p)
    print(f"llama.cpp server on {server.listening_address} serving {a.gguf}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
