// The tasks this principal may see, kept live: a ListTasks page when the
// feed (re)starts from scratch, then every `task` event of the feed. Also
// the gates addressed to this principal on others' tasks (the `gate.list`
// command), which neither ListTasks nor the feed shows: read again when the
// feed reports a gate or a change of state, and every 15 s. The daemon
// decides visibility; this holds what it was given.

import { A2aError, EXT, annotations } from './a2a.js';

const PAGE = 100;
/** Tasks kept in memory: a console left open for days stays small. */
const KEEP = 2000;
/** How often the gates addressed to you are read again without a hint. */
const ADDRESSED_POLL_MS = 15000;
const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

export function isTerminal(state) {
  return TERMINAL.has(state);
}

/** `turn`, `run`, `subagent` (from the annotations' link), or `task`. */
export function kindOf(task) {
  const link = annotations(task).link;
  return (link && link.kind) || 'task';
}

/**
 * A `gate.list` gate in the shape of the task it waits on, as far as the
 * inbox needs one: question, askSchema, askChannel, run. `addressed` marks
 * it as someone else's task.
 */
function addressedTask(g) {
  const a = { askSchema: g.askSchema, askChannel: g.askChannel };
  if (g.runId) a.link = { kind: 'run', id: g.runId };
  return {
    id: g.taskId,
    contextId: g.contextId,
    addressed: true,
    status: {
      state: 'TASK_STATE_INPUT_REQUIRED',
      timestamp: g.openedAt,
      message: { role: 'ROLE_AGENT', parts: [{ text: g.question }] },
    },
    metadata: { [EXT.annotations]: a },
  };
}

function stamp(task) {
  return Date.parse((task.status && task.status.timestamp) || '') || 0;
}

export class TaskStore {
  constructor(client, feed) {
    this.client = client;
    this.byId = new Map();
    this.nextPageToken = '';
    this.total = 0;
    this.loaded = false;
    this.error = null;
    this.listeners = new Set();
    this.addressed = new Map(); // task id → gate (gate.list)
    this.addressedTruncated = false;
    this.addressedOff = false; // the role has no grant for gate.list
    this.reading = null;
    this.readAgain = false;
    feed.onReset(() => {
      this.reload();
      this.refreshAddressed();
    });
    feed.on((e) => {
      if (e.kind === 'gate') this.refreshAddressed();
      if (e.kind === 'task' && e.data && e.data.id) {
        const old = this.byId.get(e.data.id);
        const moved = !old || !e.data.status || old.status.state !== e.data.status.state;
        this.put(e.data);
        if (moved) this.refreshAddressed();
      }
    });
    this.timer = setInterval(() => this.refreshAddressed(), ADDRESSED_POLL_MS);
  }

  /** Stops reading the addressed gates (sign-out, another token). */
  stop() {
    clearInterval(this.timer);
    this.addressedOff = true;
  }

  /** Reads `gate.list` again; calls while one is in flight make one more. */
  async refreshAddressed() {
    if (this.addressedOff) return;
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = this.client.command('gate.list');
    try {
      const r = await this.reading;
      this.addressed = new Map((r.gates || []).map((g) => [g.taskId, g]));
      this.addressedTruncated = !!r.truncated;
    } catch (e) {
      // Without the grant there is nothing to read; other errors are
      // tried again at the next hint or tick.
      if (e instanceof A2aError && e.reason === 'PERMISSION_DENIED') this.addressedOff = true;
    } finally {
      this.reading = null;
    }
    this.changed();
    if (this.readAgain) {
      this.readAgain = false;
      this.refreshAddressed();
    }
  }

  /** An addressed gate that was answered leaves the inbox at once. */
  answered(taskId) {
    if (this.addressed.delete(taskId)) this.changed();
  }

  /** `fn()` after any change; returns an unsubscribe function. */
  on(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  changed() {
    for (const fn of this.listeners) fn();
  }

  /** Keeps the newer of two versions of a task (by status timestamp). */
  put(task, notify = true) {
    const old = this.byId.get(task.id);
    if (old && stamp(old) > stamp(task)) return;
    if (!old) this.total += 1;
    this.byId.set(task.id, task);
    if (this.byId.size > KEEP) this.forgetOldest();
    if (notify) this.changed();
  }

  /** Drops the least recently updated task that waits for nobody. */
  forgetOldest() {
    let oldest = null;
    for (const t of this.byId.values()) {
      if (t.status && t.status.state === 'TASK_STATE_INPUT_REQUIRED') continue;
      if (!oldest || stamp(t) < stamp(oldest)) oldest = t;
    }
    if (oldest) this.byId.delete(oldest.id);
  }

  async reload() {
    try {
      const page = await this.client.call('ListTasks', { pageSize: PAGE, historyLength: 2 });
      this.byId.clear();
      this.total = 0;
      for (const t of page.tasks || []) this.put(t, false);
      this.total = Math.max(page.totalSize || 0, this.byId.size);
      this.nextPageToken = page.nextPageToken || '';
      this.loaded = true;
      this.error = null;
    } catch (e) {
      this.error = e;
    }
    this.changed();
  }

  async loadMore() {
    if (!this.nextPageToken) return;
    const page = await this.client.call('ListTasks', {
      pageSize: PAGE,
      historyLength: 2,
      pageToken: this.nextPageToken,
    });
    for (const t of page.tasks || []) if (!this.byId.has(t.id)) this.byId.set(t.id, t);
    this.nextPageToken = page.nextPageToken || '';
    this.changed();
  }

  /** Newest first. */
  list() {
    return [...this.byId.values()].sort((a, b) => stamp(b) - stamp(a) || (a.id < b.id ? 1 : -1));
  }

  /**
   * The gates waiting for a person, oldest first: tasks in INPUT_REQUIRED,
   * and the gates addressed to you on others' tasks (marked `addressed`).
   */
  inbox() {
    const own = this.list().filter((t) => t.status && t.status.state === 'TASK_STATE_INPUT_REQUIRED');
    const seen = new Set(own.map((t) => t.id));
    const others = [...this.addressed.values()].filter((g) => !seen.has(g.taskId)).map(addressedTask);
    return [...own, ...others].sort((a, b) => stamp(a) - stamp(b) || (a.id < b.id ? -1 : 1));
  }
}
