// The live connection: one EventSource on /v1/events (server-sent events). Each message is an
// envelope {id, type, ts, data}; every stream starts with a `snapshot`, so a page that
// reconnects simply starts over from it. On any error it asks /v1/health every second until
// the stream is open again: "not answering" (nothing answers), "signed out" (401: the session
// really ended), or the supervisor is back and a fresh stream opens at once.

export class LiveStream {
  constructor(onStatus) {
    this.onStatus = onStatus;
    this.handlers = new Map();
    this.failures = 0;
    this.source = null;
  }

  /** Handle events of one type (unknown types are ignored: later features add their own). */
  on(type, handler) {
    this.handlers.set(type, handler);
    return this;
  }

  start() {
    this.onStatus("connecting");
    this.open();
  }

  open() {
    const source = new EventSource("/v1/events");
    this.source = source;
    source.onopen = () => {
      this.failures = 0;
      this.stopWatch();
      this.onStatus("live");
    };
    source.onmessage = (message) => {
      let event;
      try {
        event = JSON.parse(message.data);
      } catch {
        return;
      }
      const handler = this.handlers.get(event.type);
      if (handler) handler(event.data, event);
    };
    source.onerror = () => {
      if (this.source !== source) return;
      // The browser may retry on its own for as long as anyone watches (a stopped supervisor
      // refuses every attempt): ask /v1/health at once and every second meanwhile, so the page
      // says what is true within a second or two.
      this.onStatus("reconnecting");
      if (source.readyState === EventSource.CLOSED) this.source = null;
      this.watch();
    };
  }

  watch() {
    if (this.watching) return;
    this.watching = true;
    const check = async () => {
      if (!this.watching) return;
      const why = await probe();
      if (!this.watching) return;
      if (why === "signed-out") {
        this.stopWatch();
        if (this.source) this.source.close();
        this.source = null;
        this.onStatus("signed-out"); // the session really ended: only a new login helps
        return;
      }
      if (why === "unreachable") this.onStatus("unreachable");
      else if (!this.source || this.source.readyState !== EventSource.OPEN) {
        // The supervisor answers again: open a fresh stream now rather than wait for the
        // browser's own retry (it starts over from a snapshot).
        if (this.source) this.source.close();
        this.open();
      }
      this.timer = setTimeout(check, 1000);
    };
    check();
  }

  stopWatch() {
    this.watching = false;
    clearTimeout(this.timer);
  }
}

async function probe() {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 2500);
  try {
    const response = await fetch("/v1/health", { credentials: "same-origin", signal: abort.signal, cache: "no-store" });
    if (response.status === 401) return "signed-out";
    return response.ok ? "ok" : "unreachable";
  } catch {
    return "unreachable";
  } finally {
    clearTimeout(timer);
  }
}
