// Server-Sent Events over fetch. EventSource cannot send an Authorization
// header, and a token in the URL would end up in logs, so the stream is
// read with fetch and parsed here (the text/event-stream format of the
// HTML standard: `event:`, `data:`, `id:` fields, a blank line ends one).

/**
 * Reads `url` as an event stream until `signal` aborts, calling
 * `onEvent({event, data, id})` for each event; reconnects after a drop
 * with `Last-Event-ID`, so no update is missed. `onError(err)` hears about
 * drops and HTTP errors (a 401/404 stops it: retrying cannot help).
 * `onOpen()` hears each time the server has accepted the stream.
 */
export async function streamEvents(url, headers, signal, onEvent, onError, onOpen) {
  let lastId = null;
  let delay = 500;
  while (!signal.aborted) {
    try {
      const h = { ...headers, Accept: "text/event-stream" };
      if (lastId) h["Last-Event-ID"] = lastId;
      const res = await fetch(url, { headers: h, signal });
      if (res.status === 401 || res.status === 404) {
        onError?.({ status: res.status, fatal: true });
        return;
      }
      if (!res.ok || !res.body) throw new Error(`event stream answered ${res.status}`);
      delay = 500;
      onOpen?.();
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      let event = { event: "message", data: [], id: null };
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let nl;
        while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + (buffer.startsWith("\r\n", nl) ? 2 : 1));
          if (line === "") {
            if (event.data.length) {
              if (event.id !== null) lastId = event.id;
              onEvent({ event: event.event, data: event.data.join("\n"), id: event.id });
            }
            event = { event: "message", data: [], id: null };
            continue;
          }
          if (line.startsWith(":")) continue; // keep-alive comment
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          let val = colon < 0 ? "" : line.slice(colon + 1);
          if (val.startsWith(" ")) val = val.slice(1);
          if (field === "event") event.event = val;
          else if (field === "data") event.data.push(val);
          else if (field === "id") event.id = val;
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      onError?.({ error: err, fatal: false });
    }
    if (signal.aborted) return;
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 8000);
  }
}
