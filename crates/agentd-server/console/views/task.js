// A task page: its facts (link, owner, command), the status timeline from
// the annotations' `statusHistory` (commit times), the open gate, messages,
// artifacts streaming in (SubscribeToTask), links to its run, conversation,
// parent and subagents, reminders, and cancel.

import { A2aError, annotations } from '../lib/a2a.js';
import { h, replace, section, stateBadge, stateName, shortId, time, duration, renderParts, notice } from '../lib/dom.js';
import { isTerminal, kindOf } from '../lib/tasks.js';
import { gateForm } from './gate.js';
import { title } from './home.js';
import { reminderPanel } from './reminders.js';

export function mount(main, ctx, id) {
  const abort = new AbortController();
  const offs = [];
  let task = null;
  let artifacts = [];
  const children = new Map(); // subagent task id → {handle, state}
  let parent = null;

  const head = h('div', { class: 'task-head' });
  const actions = h('div', { class: 'actions' });
  const facts = h('dl', { class: 'facts' });
  const timeline = h('ol', { class: 'timeline', id: 'timeline' });
  const gate = h('div', { id: 'gate' });
  const messages = h('div', { class: 'messages', id: 'messages' });
  const artifactBox = h('div', { class: 'artifacts', id: 'artifacts', 'aria-live': 'polite' });
  const links = h('ul', { class: 'links', id: 'links' });
  const status = h('div', { 'aria-live': 'polite' });
  const reminders = reminderPanel(ctx, id);

  replace(main, h('div', { class: 'task-page' },
    head, status, actions, facts, gate,
    h('div', { class: 'columns' },
      h('div', {}, section('Status timeline', timeline), section('Links', links), reminders.el),
      h('div', {}, section('Messages', messages), section('Artifacts', artifactBox)))));

  function renderHead() {
    const a = annotations(task);
    replace(head, h('h1', {}, title(task)), ' ', stateBadge(task.status.state));
    replace(facts,
      h('dt', {}, 'Task'), h('dd', {}, h('code', {}, task.id)),
      h('dt', {}, 'Context'), h('dd', {}, h('code', {}, task.contextId)),
      h('dt', {}, 'Kind'), h('dd', {}, a.link ? `${a.link.kind} ${a.link.id}` : 'task'),
      a.principal ? [h('dt', {}, 'Owner'), h('dd', {}, a.principal)] : null,
      a.command ? [h('dt', {}, 'Command'), h('dd', {}, h('code', {}, a.command))] : null,
      h('dt', {}, 'Created'), h('dd', {}, time(a.created)));
    const cancel = h('button', { type: 'button', class: 'danger', id: 'cancel', onclick: () => doCancel(cancel) }, 'Cancel task');
    replace(actions, isTerminal(task.status.state) ? null : cancel);
  }

  function renderTimeline() {
    const hist = annotations(task).statusHistory || [];
    replace(timeline, hist.map((s, i) => h('li', { dataset: { state: s.state } },
      h('time', { datetime: s.ts }, time(s.ts)), ' ', stateBadge(s.state),
      i > 0 ? h('span', { class: 'muted' }, ` +${duration(hist[i - 1].ts, s.ts)}`) : null)));
    if (!hist.length) replace(timeline, h('li', {}, stateName(task.status.state), ' (activate task annotations to see the history)'));
  }

  function renderGate() {
    if (task.status.state === 'TASK_STATE_INPUT_REQUIRED') {
      if (!gate.dataset.for || gate.dataset.for !== task.status.timestamp) {
        gate.dataset.for = task.status.timestamp;
        replace(gate, section('Waiting for an answer', gateForm(ctx, task, (t) => { task = { ...task, ...t }; refresh(); })));
      }
    } else {
      delete gate.dataset.for;
      replace(gate);
    }
  }

  function renderMessages() {
    const hist = task.history || [];
    replace(messages, hist.length ? hist.map((m) => h('div', { class: `msg ${m.role === 'ROLE_USER' ? 'user' : 'agent'}` },
      h('span', { class: 'who' }, m.role === 'ROLE_USER' ? 'user' : 'agent'), renderParts(m.parts))) : h('p', { class: 'empty' }, 'No messages.'));
  }

  function renderArtifacts() {
    replace(artifactBox, artifacts.length ? artifacts.map((a) => h('article', { class: 'artifact', dataset: { artifact: a.artifactId } },
      h('h3', {}, a.name || a.artifactId), renderParts(a.parts))) : h('p', { class: 'empty' }, 'No artifacts yet.'));
  }

  function renderLinks() {
    const a = annotations(task);
    const items = [];
    if (a.link && a.link.kind === 'run') items.push(h('li', {}, 'Run: ', h('a', { href: `#/run/${task.id}` }, a.link.id)));
    if (kindOf(task) === 'turn') items.push(h('li', {}, 'Conversation: ', h('a', { href: `#/chat/${task.contextId}` }, task.contextId)));
    if (parent) items.push(h('li', {}, 'Parent: ', h('a', { href: `#/task/${parent}` }, parent)));
    for (const [cid, c] of children) items.push(h('li', {}, 'Subagent: ', h('a', { href: `#/task/${cid}` }, c.handle || cid), ' ', c.state ? stateBadge(c.state) : null));
    replace(links, items.length ? items : h('li', { class: 'empty' }, 'None.'));
  }

  function renderAll() {
    renderHead();
    renderTimeline();
    renderGate();
    renderMessages();
    renderArtifacts();
    renderLinks();
    reminders.setOpen(!isTerminal(task.status.state));
  }

  async function doCancel(button) {
    button.disabled = true;
    try {
      task = await ctx.client.call('CancelTask', { id });
      ctx.tasks.put(task);
      await refresh();
    } catch (e) {
      replace(status, notice('error', `Cancel refused: ${e.message}`));
      button.disabled = false;
    }
  }

  let pending = null;
  /** GetTask again (the timeline's commit times come from the daemon). */
  function refresh() {
    if (pending) return pending;
    pending = (async () => {
      try {
        const t = await ctx.client.call('GetTask', { id });
        const keepStreamed = !isTerminal(t.status.state) && streaming;
        task = t;
        if (!keepStreamed) artifacts = t.artifacts || [];
        renderAll();
      } catch (e) {
        replace(status, notice('error', e.message));
      } finally {
        pending = null;
      }
    })();
    return pending;
  }

  function applyArtifact(u) {
    const i = artifacts.findIndex((a) => a.artifactId === u.artifact.artifactId);
    if (i < 0 || !u.append) {
      if (i < 0) artifacts.push(u.artifact);
      else artifacts[i] = u.artifact;
    } else {
      const parts = [...(artifacts[i].parts || [])];
      for (const p of u.artifact.parts || []) {
        const last = parts[parts.length - 1];
        if (last && last.text !== undefined && p.text !== undefined) parts[parts.length - 1] = { ...last, text: last.text + p.text };
        else parts.push(p);
      }
      artifacts[i] = { ...artifacts[i], parts };
    }
    renderArtifacts();
  }

  let streaming = false;
  async function watch() {
    if (isTerminal(task.status.state)) return;
    try {
      streaming = true;
      for await (const ev of ctx.client.stream('SubscribeToTask', { id }, undefined, abort.signal)) {
        if (ev.task) {
          task = ev.task;
          artifacts = ev.task.artifacts || [];
          renderAll();
        } else if (ev.artifactUpdate) {
          applyArtifact(ev.artifactUpdate);
        } else if (ev.statusUpdate) {
          await refresh();
        }
      }
    } catch (e) {
      // An answerer may read but not watch a task; the feed still updates it.
      if (!(e instanceof A2aError) && !abort.signal.aborted) replace(status, notice('error', `Live updates stopped: ${e.message}`));
    } finally {
      streaming = false;
    }
    if (!abort.signal.aborted) refresh();
  }

  offs.push(ctx.feed.on((e) => {
    const d = e.data || {};
    if (e.kind === 'subagent' && d.parentTaskId === id) {
      children.set(d.taskId, { handle: d.handle, state: d.state });
      if (task) renderLinks();
    } else if (e.kind === 'task' && d.id === id && !streaming) {
      refresh();
    } else if (e.kind === 'task' && children.has(d.id)) {
      children.get(d.id).state = d.status.state;
      renderLinks();
    }
  }));
  offs.push(reminders.listen());

  (async () => {
    try {
      task = await ctx.client.call('GetTask', { id });
    } catch (e) {
      replace(main, h('h1', {}, 'Task'), notice('error', e.code === -32001 ? `No task ${id} is visible to you.` : e.message));
      return;
    }
    artifacts = task.artifacts || [];
    renderAll();
    if (kindOf(task) === 'subagent') {
      ctx.client.command('subagent.status', { id }).then((s) => {
        parent = s.parent || null;
        for (const c of s.liveChildren || []) children.set(typeof c === 'string' ? c : c.taskId, typeof c === 'string' ? {} : c);
        renderLinks();
      }).catch(() => {});
    }
    watch();
  })();

  return () => {
    abort.abort();
    for (const off of offs) off();
  };
}
