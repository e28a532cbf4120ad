"""llama.cpp's OpenAI-compatible server (/v1/chat/completions, /v1/embeddings)
from the xllamacpp wheel, which ships the server as a library, not a program.

    python3 llm_server.py GGUF --port 18082 [--threads 2] [--ctx 4096]

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
    ap.add_argument("--ctx", type=int, default=4096)
    a = ap.parse_args()
    p = xllamacpp.CommonParams()
    p.model.path = a.gguf
    p.hostnames = [a.host]
    p.port = a.port
    p.n_ctx = a.ctx
    p.n_parallel = 1
    p.cpuparams.n_threads = a.threads
    p.cpuparams_batch.n_threads = a.threads
    server = xllamacpp.Server(p)
    print(f"llama.cpp server on {server.listening_address} serving {a.gguf}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
