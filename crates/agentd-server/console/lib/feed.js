// The events feed (agentd.events/SubscribeToEvents, docs/ext/events): one
// stream for the whole console. After a drop (network, daemon restart,
// `goodbye`) it reconnects with `fromSeq` = the last seq it saw, so the
// replay fills the gap; only `resync` (the log no longer holds that seq)
// makes the listeners rebuild their state from ListTasks.

import { AuthError, EXT } from './a2a.js';

export class Feed {
  constructor(client) {
    this.client = client;
    this.seq = null; // the last seq seen; null before the first hello
    this.listeners = new Set();
    this.resetListeners = new Set();
    this.statusListeners = new Set();
    this.status = 'connecting';
    this.abort = null;
    this.stopped = false;
    this.onAuthFailure = null;
  }

  /** `fn(event)` for every event; returns an unsubscribe function. */
  on(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** `fn()` when state must be rebuilt (first connect, resync). */
  onReset(fn) {
    this.resetListeners.add(fn);
    return () => this.resetListeners.delete(fn);
  }

  /** `fn(status)`: `connecting`, `live`, `reconnecting`. */
  onStatus(fn) {
    this.statusListeners.add(fn);
    fn(this.status);
    return () => this.statusListeners.delete(fn);
  }

  setStatus(s) {
    this.status = s;
    for (const fn of this.statusListeners) fn(s);
  }

  start() {
    this.loop();
  }

  stop() {
    this.stopped = true;
    if (this.abort) this.abort.abort();
  }

  async loop() {
    let backoff = 250;
    while (!this.stopped) {
      this.abort = new AbortController();
      const params = this.seq === null ? {} : { fromSeq: this.seq };
      try {
        for await (const frame of this.client.stream(
          'agentd.events/SubscribeToEvents',
          params,
          [EXT.events, EXT.annotations],
          this.abort.signal,
        )) {
          if (frame.hello) {
            const first = this.seq === null;
            if (first || frame.hello.resync) this.seq = frame.hello.seq;
            this.setStatus('live');
            backoff = 250;
            if (first || frame.hello.resync) for (const fn of this.resetListeners) fn();
          } else if (frame.event) {
            this.seq = frame.event.seq;
            for (const fn of this.listeners) fn(frame.event);
          } else if (frame.goodbye) {
            this.seq = frame.goodbye.seq;
          }
        }
      } catch (e) {
        if (e instanceof AuthError) {
          if (this.onAuthFailure) this.onAuthFailure(e);
          return;
        }
        if (this.stopped) return;
      }
      if (this.stopped) return;
      this.setStatus('reconnecting');
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, 3000);
    }
  }
}
