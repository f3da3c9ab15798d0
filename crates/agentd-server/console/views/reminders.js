// Reminders (docs/reminders.md): inject one into a running task with
// InjectTaskReminder, and watch its `emitted`, `deduped` and `expired`
// events arrive on the events feed.

import { EXT, newId } from '../lib/a2a.js';
import { h, replace, section, time, notice } from '../lib/dom.js';

/** The reminders extension's card params (limits), or defaults. */
function limits(card) {
  const ext = ((card.capabilities || {}).extensions || []).find((e) => e.uri === EXT.reminders);
  return { maxTtlTurns: 16, maxBodyBytes: 8192, propagate: ['none', 'subagents'], ...((ext && ext.params) || {}) };
}

export function reminderPanel(ctx, taskId) {
  const lim = limits(ctx.card);
  const body = h('textarea', { id: 'reminder-body', rows: 3, required: true, maxlength: lim.maxBodyBytes });
  const dedupe = h('input', { id: 'reminder-dedupe', type: 'text', autocomplete: 'off' });
  const ttl = h('input', { id: 'reminder-ttl', type: 'number', min: 1, max: lim.maxTtlTurns, step: 1, value: '1' });
  const propagate = h('select', { id: 'reminder-propagate' }, lim.propagate.map((p) => h('option', { value: p }, p)));
  const result = h('div', { 'aria-live': 'polite' });
  const send = h('button', { type: 'submit', class: 'primary' }, 'Inject reminder');
  const form = h('form', { class: 'reminder-form', 'aria-label': 'Inject a reminder' },
    h('div', { class: 'field' }, h('label', { for: 'reminder-body' }, 'Body', h('abbr', { class: 'req', title: 'required' }, ' *')), body,
      h('p', { class: 'hint' }, 'Ambient context the task\'s model sees at its next model calls; never part of its history.')),
    h('div', { class: 'field-row' },
      h('div', { class: 'field' }, h('label', { for: 'reminder-dedupe' }, 'Dedupe key'), dedupe),
      h('div', { class: 'field' }, h('label', { for: 'reminder-ttl' }, `Turns (1–${lim.maxTtlTurns})`), ttl),
      h('div', { class: 'field' }, h('label', { for: 'reminder-propagate' }, 'Propagate'), propagate)),
    h('div', { class: 'form-actions' }, send), result);
  const events = h('ol', { class: 'reminder-events', id: 'reminder-events', 'aria-live': 'polite' }, h('li', { class: 'empty' }, 'No reminder events yet.'));
  const el = section('Reminders', form, h('h3', {}, 'Delivery'), events);

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    replace(result);
    if (!body.value.trim()) {
      replace(result, notice('error', 'reminder.body: must not be empty'));
      body.focus();
      return;
    }
    const reminder = { id: newId(), body: body.value, ttlTurns: Number(ttl.value || 1), propagate: propagate.value };
    if (dedupe.value.trim()) reminder.dedupeKey = dedupe.value.trim();
    send.disabled = true;
    try {
      const r = await ctx.client.call('InjectTaskReminder', { taskId, reminder }, [EXT.reminders]);
      replace(result, notice('ok', `Accepted ${r.reminderId} at ${time(r.acceptedAt)}${r.displaced && r.displaced.length ? `; displaced ${r.displaced.join(', ')}` : ''}.`));
      body.value = '';
    } catch (e) {
      const where = (e.fields || []).map((f) => `${f.field}: ${f.description}`).join('; ');
      replace(result, notice('error', where || e.message));
    } finally {
      send.disabled = false;
    }
  });

  function add(e) {
    const d = e.data;
    const empty = events.querySelector('.empty');
    if (empty) empty.remove();
    const extra = [
      d.turn !== undefined ? `turn ${d.turn}` : null,
      d.remainingTurns !== undefined ? `${d.remainingTurns} left` : null,
      d.displacedBy ? `displaced by ${d.displacedBy}` : null,
    ].filter(Boolean).join(', ');
    events.append(h('li', { dataset: { event: d.event, reminder: d.reminderId } },
      h('time', { datetime: e.ts }, time(e.ts)), ' ', h('span', { class: `badge reminder-${d.event}` }, d.event), ' ', h('code', {}, d.reminderId), extra ? ` (${extra})` : ''));
  }

  return {
    el,
    setOpen(open) {
      form.hidden = !open;
    },
    listen: () => ctx.feed.on((e) => {
      if (e.kind === 'reminder' && e.data && e.data.taskId === taskId) add(e);
    }),
  };
}
