// The tasks this principal may see, kept live: a ListTasks page when the
// feed (re)starts from scratch, then every `task` event of the feed. The
// daemon decides visibility; this holds what it was given.

import { annotations } from './a2a.js';

const PAGE = 100;
/** Tasks kept in memory: a console left open for days stays small. */
const KEEP = 2000;
const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

export function isTerminal(state) {
  return TERMINAL.has(state);
}

/** `turn`, `run`, `subagent` (from the annotations' link), or `task`. */
export function kindOf(task) {
  const link = annotations(task).link;
  return (link && link.kind) || 'task';
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
    feed.onReset(() => this.reload());
    feed.on((e) => {
      if (e.kind === 'task' && e.data && e.data.id) this.put(e.data);
    });
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

  /** The gates waiting for a person: tasks in INPUT_REQUIRED, oldest first. */
  inbox() {
    return this.list()
      .filter((t) => t.status && t.status.state === 'TASK_STATE_INPUT_REQUIRED')
      .reverse();
  }
}
