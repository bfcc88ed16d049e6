// The live connection: one EventSource on /v1/events (server-sent events). Each message is an
// envelope {id, type, ts, data}; every stream starts with a `snapshot`, so a page that
// reconnects simply starts over from it. EventSource retries a dropped connection by itself;
// when it gives up (the stream was closed for good, or answered an error) this retries with
// a growing delay and asks /v1/health why, so the page can say what is wrong meanwhile.

const MAX_DELAY_MS = 5000;

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
      if (source.readyState === EventSource.CONNECTING) {
        this.onStatus("reconnecting"); // the browser is retrying on its own
        return;
      }
      source.close();
      this.retry();
    };
  }

  async retry() {
    this.failures += 1;
    const why = await probe();
    if (why === "signed-out") {
      this.onStatus("signed-out"); // only a new login helps; retrying would be noise
      return;
    }
    this.onStatus(why === "unreachable" ? "unreachable" : "reconnecting");
    const delay = Math.min(500 * 2 ** (this.failures - 1), MAX_DELAY_MS);
    setTimeout(() => this.open(), delay);
  }
}

async function probe() {
  try {
    const response = await fetch("/v1/health", { credentials: "same-origin" });
    if (response.status === 401) return "signed-out";
    return response.ok ? "ok" : "unreachable";
  } catch {
    return "unreachable";
  }
}
