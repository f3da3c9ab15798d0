// Chat: a conversation with the agent. Each message starts a turn
// (SendStreamingMessage) on the conversation's context and the reply
// streams in as the turn's artifact grows; a message sent while a turn is
// working is steering input to it; a conversation can be closed
// (conversation.close) or a new one started.

import { userMessage } from '../lib/a2a.js';
import { h, replace, notice, partsText, stateBadge, time } from '../lib/dom.js';
import { isTerminal, kindOf } from '../lib/tasks.js';
import { title } from './home.js';

export function mount(main, ctx, contextId) {
  const abort = new AbortController();
  let running = null; // {id, state} of the turn in progress
  let closed = false;

  const convList = h('ul', { class: 'conversations', id: 'conversations' });
  const log = h('div', { class: 'transcript', id: 'transcript', role: 'log', 'aria-label': 'Conversation' });
  const status = h('div', { class: 'chat-status', 'aria-live': 'polite' });
  const input = h('textarea', { id: 'chat-input', rows: 2, placeholder: 'Message the agent (Enter sends, Shift+Enter for a new line)', 'aria-label': 'Message' });
  const send = h('button', { type: 'submit', class: 'primary', id: 'chat-send' }, 'Send');
  const stop = h('button', { type: 'button', class: 'danger', id: 'chat-stop', hidden: true, onclick: stopTurn }, 'Stop');
  const fresh = h('a', { href: '#/chat', class: 'button', id: 'chat-new' }, 'New conversation');
  const close = h('button', { type: 'button', id: 'chat-close', onclick: closeConversation }, 'Close conversation');
  const form = h('form', { class: 'composer' }, input, h('div', { class: 'composer-actions' }, send, stop));
  const heading = h('h1', {}, contextId ? 'Conversation' : 'New conversation');

  replace(main, h('div', { class: 'chat' },
    h('aside', { class: 'chat-side', 'aria-label': 'Conversations' }, fresh, convList),
    h('div', { class: 'chat-main' }, h('div', { class: 'chat-head' }, heading, h('code', { id: 'chat-context' }, contextId || ''), close), log, status, form)));

  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text || closed) return;
    input.value = '';
    if (running && running.state === 'TASK_STATE_WORKING') steer(text);
    else turn(text);
  });

  function bubble(role, text, extra) {
    const body = h('div', { class: 'bubble-text' }, text || '');
    const el = h('div', { class: `msg ${role}` }, h('span', { class: 'who' }, role === 'user' ? 'you' : role), body, extra || null);
    log.append(el);
    log.scrollTop = log.scrollHeight;
    return body;
  }

  function setRunning(r) {
    running = r;
    const busy = !!r;
    send.textContent = busy ? 'Steer' : 'Send';
    send.title = busy ? 'Sent to the running turn as steering input' : '';
    stop.hidden = !busy;
    close.hidden = !contextId || closed;
    input.disabled = closed;
    send.disabled = closed;
  }

  function renderConversations() {
    const byContext = new Map();
    for (const t of ctx.tasks.list()) if (kindOf(t) === 'turn') byContext.set(t.contextId, t); // oldest wins
    replace(convList, [...byContext].map(([c, t]) => h('li', {}, h('a', { href: `#/chat/${c}`, 'aria-current': c === contextId ? 'page' : null }, title(t)),
      h('span', { class: 'muted' }, time(t.status.timestamp)))));
    if (!byContext.size) replace(convList, h('li', { class: 'empty' }, 'No conversations yet.'));
  }

  /** Reads one turn's stream into the reply bubble. */
  async function follow(events, reply) {
    let text = reply.textContent;
    let final = null;
    for await (const ev of events) {
      if (ev.task) {
        setRunning({ id: ev.task.id, state: ev.task.status.state });
        // Joining a turn already under way: what it has written so far.
        const written = (ev.task.artifacts || []).find((a) => a.name === 'reply');
        if (written) reply.textContent = text = partsText(written.parts);
        if (!contextId) {
          contextId = ev.task.contextId;
          // The address names the conversation without reloading the page.
          history.replaceState(null, '', `#/chat/${contextId}`);
          heading.textContent = 'Conversation';
          document.getElementById('chat-context').textContent = contextId;
          setRunning(running);
        }
      } else if (ev.artifactUpdate) {
        const t = partsText(ev.artifactUpdate.artifact.parts);
        text = ev.artifactUpdate.append ? text + t : t;
        reply.textContent = text;
        log.scrollTop = log.scrollHeight;
      } else if (ev.statusUpdate) {
        final = ev.statusUpdate.status;
        if (running) running.state = final.state;
      } else if (ev.message) {
        reply.textContent = text = partsText(ev.message.parts);
      }
    }
    if (final && !text && final.message) reply.textContent = partsText(final.message.parts);
    if (final && final.state !== 'TASK_STATE_COMPLETED') reply.parentElement.append(stateBadge(final.state), final.message && final.state === 'TASK_STATE_FAILED' ? h('p', { class: 'muted' }, partsText(final.message.parts)) : '');
  }

  async function turn(text) {
    bubble('user', text);
    const reply = bubble('agent', '');
    reply.parentElement.classList.add('streaming');
    replace(status);
    setRunning({ id: null, state: 'TASK_STATE_SUBMITTED' });
    const message = userMessage([{ text }], contextId ? { contextId } : {});
    try {
      await follow(ctx.client.stream('SendStreamingMessage', { message }, undefined, abort.signal), reply);
    } catch (e) {
      if (!abort.signal.aborted) replace(status, notice('error', e.message));
    } finally {
      reply.parentElement.classList.remove('streaming');
      setRunning(null);
      if (!abort.signal.aborted) focusInput();
    }
  }

  async function steer(text) {
    const badge = h('span', { class: 'badge' }, 'steering');
    bubble('user', text, badge);
    try {
      await ctx.client.call('SendMessage', {
        message: userMessage([{ text }], { taskId: running.id, contextId }),
        configuration: { returnImmediately: true },
      });
      badge.textContent = 'steering (sent)';
    } catch (e) {
      badge.textContent = 'steering (refused)';
      replace(status, notice('error', `Steering refused: ${e.message}`));
    }
  }

  async function stopTurn() {
    if (!running || !running.id) return;
    try {
      await ctx.client.call('CancelTask', { id: running.id });
    } catch (e) {
      replace(status, notice('error', e.message));
    }
  }

  async function closeConversation() {
    try {
      const r = await ctx.client.command('conversation.close', { contextId });
      closed = true;
      setRunning(null);
      replace(status, notice('ok', `Conversation closed${r.canceled && r.canceled.length ? `; canceled ${r.canceled.length} turn(s)` : ''}.`));
    } catch (e) {
      replace(status, notice('error', e.message));
    }
  }

  function focusInput() {
    if (!closed) input.focus({ preventScroll: true });
  }

  async function load() {
    if (!contextId) return;
    try {
      const conv = await ctx.client.command('conversation.get', { contextId });
      closed = !!conv.closed;
      for (const t of conv.turns || []) {
        for (const m of t.messages || []) bubble(m.role === 'ROLE_USER' ? 'user' : 'agent', partsText(m.parts));
        if (!isTerminal(t.state) && t.state !== 'TASK_STATE_INPUT_REQUIRED') {
          const reply = bubble('agent', '');
          setRunning({ id: t.taskId, state: t.state });
          follow(ctx.client.stream('SubscribeToTask', { id: t.taskId }, undefined, abort.signal), reply)
            .catch(() => {})
            .finally(() => setRunning(null));
        }
      }
      if (closed) replace(status, notice('info', 'This conversation is closed.'));
    } catch (e) {
      replace(status, notice('error', e.message));
    }
    setRunning(running);
  }

  setRunning(null);
  renderConversations();
  load().then(focusInput);
  const off = ctx.tasks.on(renderConversations);
  return () => {
    abort.abort();
    off();
  };
}
