// The landing page: what needs a person first (the gates inbox, each gate
// with its form), then the live task list, filterable by state, kind and
// context.

import { annotations } from '../lib/a2a.js';
import { h, replace, section, stateBadge, shortId, time, partsText, notice, keepFocus } from '../lib/dom.js';
import { kindOf } from '../lib/tasks.js';
import { gateForm } from './gate.js';

const STATES = ['SUBMITTED', 'WORKING', 'INPUT_REQUIRED', 'AUTH_REQUIRED', 'COMPLETED', 'FAILED', 'CANCELED', 'REJECTED'];
const KINDS = ['turn', 'run', 'subagent'];

// Kept across visits of the page.
const filters = { state: '', kind: '', context: '' };

/** What a task is about, in a few words. */
export function title(task) {
  const link = annotations(task).link;
  if (link && link.kind === 'run') return link.id.replace(/-[0-9A-Z]{26}$/, '') + ' run';
  if (link && link.kind === 'subagent') return link.id.replace(/-[^-]+(-[^-]+){4}$/, '');
  const msgs = task.history || [];
  const first = msgs.find((m) => m.role === 'ROLE_USER') || msgs[0];
  const text = partsText(first && first.parts) || partsText(task.status && task.status.message && task.status.message.parts);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text || task.id;
}

/**
 * The page a task opens: its run page for runs, else its task page. A gate
 * addressed to you on someone else's run opens its task page: the run's
 * status is its owner's to read.
 */
export function href(task) {
  return kindOf(task) === 'run' && !task.addressed ? `#/run/${task.id}` : `#/task/${task.id}`;
}

export function mount(main, ctx) {
  const inboxList = h('div', { class: 'inbox', id: 'inbox' });
  const inboxEmpty = h('p', { class: 'empty' }, 'Nothing is waiting for you.');
  const inboxMore = h('p', { class: 'muted', hidden: true }, 'More gates are addressed to you than shown here (the newest 100); answer some to see the rest.');
  const gates = new Map(); // task id → element (kept, so typing is never lost)

  const stateSel = h('select', { id: 'filter-state', onchange: () => { filters.state = stateSel.value; renderList(); } },
    h('option', { value: '' }, 'any state'), STATES.map((s) => h('option', { value: `TASK_STATE_${s}` }, s.replace(/_/g, ' ').toLowerCase())));
  const kindSel = h('select', { id: 'filter-kind', onchange: () => { filters.kind = kindSel.value; renderList(); } },
    h('option', { value: '' }, 'any kind'), KINDS.map((k) => h('option', { value: k }, k)));
  const contexts = h('datalist', { id: 'contexts' });
  const ctxInput = h('input', { id: 'filter-context', type: 'search', list: 'contexts', placeholder: 'any context', oninput: () => { filters.context = ctxInput.value.trim(); renderList(); } });
  stateSel.value = filters.state;
  kindSel.value = filters.kind;
  ctxInput.value = filters.context;
  const filterBar = h('div', { class: 'filters', role: 'group', 'aria-label': 'Filter tasks' },
    h('label', { for: 'filter-state' }, 'State'), stateSel,
    h('label', { for: 'filter-kind' }, 'Kind'), kindSel,
    h('label', { for: 'filter-context' }, 'Context'), ctxInput, contexts);
  const tbody = h('tbody', { id: 'task-rows' });
  const table = h('table', { class: 'tasks' },
    h('thead', {}, h('tr', {}, ['State', 'Kind', 'Task', 'Context', 'Owner', 'Updated'].map((c) => h('th', { scope: 'col' }, c)))), tbody);
  const more = h('button', { type: 'button', onclick: () => ctx.tasks.loadMore().then(renderList) }, 'Load older tasks');
  const count = h('p', { class: 'count', 'aria-live': 'polite' });
  const listStatus = h('div');

  replace(main,
    h('h1', { class: 'visually-hidden' }, 'Inbox and tasks'),
    section('Needs you', inboxList),
    section('Tasks', filterBar, listStatus, h('div', { class: 'table-wrap' }, table), count, more));

  function renderInbox() {
    const waiting = ctx.tasks.inbox();
    const ids = new Set(waiting.map((t) => t.id));
    for (const [id, el] of gates) if (!ids.has(id)) { el.remove(); gates.delete(id); }
    for (const t of waiting) {
      if (gates.has(t.id)) continue;
      const a = annotations(t);
      const el = h('article', { class: 'gate-card', dataset: { task: t.id, addressed: t.addressed ? 'true' : 'false' } },
        h('header', {},
          h('a', { href: href(t), class: 'gate-title' }, title(t)),
          a.askChannel ? h('span', { class: 'channel' }, a.askChannel) : null,
          t.addressed ? h('span', { class: 'channel', title: "someone else's task: the gate is addressed to you" }, 'addressed to you') : null,
          h('span', { class: 'muted' }, ' waiting since ', time(t.status.timestamp))),
        gateForm(ctx, t));
      gates.set(t.id, el);
      inboxList.append(el);
    }
    if (waiting.length === 0) inboxList.replaceChildren(inboxEmpty);
    else inboxEmpty.remove();
    inboxMore.hidden = !ctx.tasks.addressedTruncated;
    if (!inboxMore.hidden) inboxList.after(inboxMore);
  }

  function renderList() {
    const all = ctx.tasks.list();
    replace(contexts, [...new Set(all.map((t) => t.contextId))].slice(0, 50).map((c) => h('option', { value: c })));
    const shown = all.filter((t) =>
      (!filters.state || t.status.state === filters.state) &&
      (!filters.kind || kindOf(t) === filters.kind) &&
      (!filters.context || (t.contextId || '').startsWith(filters.context)));
    keepFocus(tbody, () => replace(tbody, shown.map((t) => {
      const a = annotations(t);
      return h('tr', { dataset: { task: t.id, state: t.status.state } },
        h('td', { 'data-label': 'State' }, stateBadge(t.status.state)),
        h('td', { 'data-label': 'Kind' }, kindOf(t)),
        h('td', { 'data-label': 'Task' }, h('a', { href: href(t) }, title(t)), ' ', shortId(t.id)),
        h('td', { 'data-label': 'Context' }, h('button', { type: 'button', class: 'link-button', title: `show only context ${t.contextId}`, onclick: () => { ctxInput.value = filters.context = t.contextId; renderList(); } }, shortId(t.contextId))),
        h('td', { 'data-label': 'Owner' }, a.principal || ''),
        h('td', { 'data-label': 'Updated' }, time(t.status.timestamp)));
    })));
    count.textContent = `${shown.length} shown of ${ctx.tasks.byId.size} loaded (${ctx.tasks.total} visible to you)`;
    more.hidden = !ctx.tasks.nextPageToken;
    replace(listStatus, ctx.tasks.error ? notice('error', `Could not list tasks: ${ctx.tasks.error.message}`) : null);
  }

  function render() {
    renderInbox();
    renderList();
  }
  render();
  return ctx.tasks.on(render);
}
