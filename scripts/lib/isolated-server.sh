# Sourced by scripts that test a running server (schemathesis, browser-test):
# starts `rag-engine COMMAND...` against the local stack on a free port with
# its own topic prefix and database, waits until /readyz answers, and drops
# the database when the script exits.
#
#   start_isolated_server PREFIX run api     # sets BASE, SERVER, WORK, BIN
#
# Needs ROOT and a `log` function; extra variables for the server can be
# exported before the call (API_DEV_SIGN_IN=true, ...).

start_isolated_server() {
  local prefix=$1
  shift
  [ -f "$ROOT/.local/env" ] || { log "the local stack is not configured: run scripts/stack up"; exit 1; }
  set -a; . "$ROOT/.local/env"; set +a
  BIN="$ROOT/target/debug/rag-engine"
  [ -x "$BIN" ] || (cd "$ROOT" && cargo build --quiet --bin rag-engine)
  local free_port='import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
  local api_port
  api_port=$(python3 -c "$free_port")
  ISOLATED_RUN_ID="$prefix$(date +%s)$$"
  ISOLATED_DB_BASE=${DATABASE_URL%/*}
  "$RAG_ENGINE_PG_BIN/psql" "$ISOLATED_DB_BASE/postgres" -qc "CREATE DATABASE $ISOLATED_RUN_ID" >/dev/null
  export DATABASE_URL="$ISOLATED_DB_BASE/$ISOLATED_RUN_ID" TOPIC_PREFIX="$ISOLATED_RUN_ID." \
    API_ADDR="127.0.0.1:$api_port" METRICS_ADDR="127.0.0.1:$(python3 -c "$free_port")"
  WORK=$(mktemp -d)
  trap stop_isolated_server EXIT
  "$BIN" "$@" >"$WORK/server.log" 2>&1 &
  SERVER=$!
  BASE="http://127.0.0.1:$api_port"
  for _ in $(seq 1 240); do
    curl -sf "$BASE/readyz" >/dev/null 2>&1 && return 0
    kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
    sleep 0.5
  done
  log "the server did not become ready; its log:"
  tail -n 60 "$WORK/server.log" >&2
  exit 1
}

stop_isolated_server() {
  [ -n "${SERVER:-}" ] && kill -TERM "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true
  "$RAG_ENGINE_PG_BIN/psql" "$ISOLATED_DB_BASE/postgres" -qc "DROP DATABASE IF EXISTS $ISOLATED_RUN_ID" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
