"""Health probe for the local broker: one Metadata (v1) request for a single
topic, which tansu answers from its storage, so a broker whose storage task
died (it still accepts connections) fails the probe. Exit 0 when a whole
response with our correlation id arrives within the timeout.

    python3 kafka_health.py HOST PORT [TIMEOUT_SECONDS]
"""
import socket
import struct
import sys


def probe(host: str, port: int, timeout: float) -> bool:
    topic = b"rag-engine-health-probe"
    client = b"rag-engine-stack"
    correlation = 0x5EED
    body = struct.pack(">hhih", 3, 1, correlation, len(client)) + client
    body += struct.pack(">ih", 1, len(topic)) + topic
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(struct.pack(">i", len(body)) + body)
        head = recv_exact(s, 8)
        size, got = struct.unpack(">ii", head)
        recv_exact(s, size - 4)
    return got == correlation


def recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed mid-response")
        buf += chunk
    return buf


if __name__ == "__main__":
    try:
        ok = probe(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 10.0)
    except (OSError, ValueError, struct.error) as e:
        print(f"unhealthy: {e}", file=sys.stderr)
        sys.exit(1)
    sys.exit(0 if ok else 1)
