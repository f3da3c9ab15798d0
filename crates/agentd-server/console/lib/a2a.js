// The console's A2A client: JSON-RPC 2.0 over fetch, SSE streams read from
// fetch bodies (EventSource cannot send a bearer token nor POST), and the
// agentd extensions: task annotations, the events feed, reminders and
// command ops. Nothing here is console-only: any client could send these.

export const EXT = {
  annotations: 'https://agentd.dev/a2a/ext/task-annotations',
  events: 'https://agentd.dev/a2a/ext/events',
  reminders: 'https://agentd.dev/a2a/ext/reminders',
  command: 'https://agentd.dev/a2a/ext/command',
};

/** The endpoint, relative to the console so a path prefix keeps working. */
const JSONRPC = new URL('../a2a/jsonrpc', document.baseURI).href;

/** A JSON-RPC error, with the BadRequest field violations and ErrorInfo reason. */
export class A2aError extends Error {
  constructor(error) {
    super(error.message || `error ${error.code}`);
    this.code = error.code;
    this.details = Array.isArray(error.data) ? error.data : [];
    const bad = this.details.find((d) => String(d['@type'] || '').endsWith('google.rpc.BadRequest'));
    this.fields = (bad && bad.fieldViolations) || [];
    const info = this.details.find((d) => String(d['@type'] || '').endsWith('google.rpc.ErrorInfo'));
    this.reason = info && info.reason;
  }
}

/** The daemon refused the credentials (HTTP 401). */
export class AuthError extends Error {}

/** A random UUID (crypto.randomUUID needs a secure context; this does not). */
export function newId() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = [...b].map((v) => v.toString(16).padStart(2, '0')).join('');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** A user message with text or data parts. */
export function userMessage(parts, extra = {}) {
  return { messageId: newId(), role: 'ROLE_USER', parts, ...extra };
}

/** The task annotations of a task, or `{}`. */
export function annotations(task) {
  return (task && task.metadata && task.metadata[EXT.annotations]) || {};
}

export class Client {
  constructor(token) {
    this.token = token || '';
    this.nextId = 1;
  }

  headers(extensions, accept) {
    const h = { 'content-type': 'application/json', 'A2A-Version': '1.0', accept };
    if (this.token) h.authorization = `Bearer ${this.token}`;
    if (extensions.length) h['A2A-Extensions'] = extensions.join(', ');
    return h;
  }

  async post(method, params, extensions, accept, signal) {
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params });
    const r = await fetch(JSONRPC, { method: 'POST', headers: this.headers(extensions, accept), body, signal });
    if (r.status === 401) throw new AuthError('the daemon did not accept this token');
    return r;
  }

  /** One call; its `result`, or throws A2aError. */
  async call(method, params = {}, extensions = [EXT.annotations]) {
    const r = await this.post(method, params, extensions, 'application/json');
    const text = await r.text();
    let doc;
    try {
      doc = JSON.parse(text);
    } catch {
      throw new A2aError({ code: r.status, message: `HTTP ${r.status}: ${text.slice(0, 200)}` });
    }
    if (doc.error) throw new A2aError(doc.error);
    return doc.result;
  }

  /**
   * A streaming call: yields each frame's `result`; an error frame (or an
   * error answered before the stream opened) throws A2aError.
   */
  async *stream(method, params, extensions = [EXT.annotations], signal) {
    const r = await this.post(method, params, extensions, 'text/event-stream', signal);
    if (!(r.headers.get('content-type') || '').startsWith('text/event-stream')) {
      const doc = await r.json().catch(() => ({ error: { code: r.status, message: `HTTP ${r.status}` } }));
      if (doc.error) throw new A2aError(doc.error);
      yield doc.result;
      return;
    }
    const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        let cut;
        while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, '');
          const data = block
            .split(/\r?\n/)
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).replace(/^ /, ''))
            .join('\n');
          if (!data) continue; // a keep-alive comment
          const doc = JSON.parse(data);
          if (doc.error) throw new A2aError(doc.error);
          yield doc.result;
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  /**
   * Runs a command op (docs/commands.md). Read ops answer with the data of
   * their Message; ops that start work with their Task.
   */
  async command(op, args = {}, configuration) {
    const params = { message: userMessage([{ data: { agentd: { op, ...args } } }]) };
    if (configuration) params.configuration = configuration;
    const r = await this.call('SendMessage', params, [EXT.annotations, EXT.command]);
    if (r.message) {
      const part = (r.message.parts || []).find((p) => p.data !== undefined);
      return part ? part.data : r.message;
    }
    return r.task;
  }
}
