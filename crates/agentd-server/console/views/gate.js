// A human gate: the question of an INPUT_REQUIRED task and a form built
// from its `askSchema` (task annotations). The answer is a SendMessage
// naming the task; the daemon checks it and names each wrong field
// (`answer.approve`), which the form shows at that field.

import { annotations, userMessage } from '../lib/a2a.js';
import { h, partsText } from '../lib/dom.js';
import { schemaForm } from '../lib/schema-form.js';

/** The question a waiting task asks (its status message). */
export function question(task) {
  return partsText(task.status && task.status.message && task.status.message.parts) || '(no question)';
}

/** `answer.note` → `note`; `answer` → the whole value; others are form-level. */
function fieldOf(field) {
  if (field === 'answer') return '';
  if (field.startsWith('answer.')) return field.slice(7);
  if (field.startsWith('answer[')) return field.slice(6);
  return null;
}

/**
 * The gate form of `task`; `onAnswered(task)` gets the task the answer
 * left (WORKING, or the next gate).
 */
export function gateForm(ctx, task, onAnswered) {
  const ask = annotations(task).askSchema;
  const schema = ask || { type: 'string', title: 'Answer', description: 'This gate declares no schema: the answer is sent as text.' };
  const done = h('p', { class: 'notice notice-ok', role: 'status', hidden: true });
  const form = schemaForm(schema, {
    submitLabel: 'Answer',
    name: `answer to ${task.id}`,
    fieldOf,
    async onSubmit(value) {
      const part = typeof value === 'string' ? { text: value } : { data: value };
      const r = await ctx.client.call('SendMessage', {
        message: userMessage([part], { taskId: task.id, contextId: task.contextId }),
        configuration: { returnImmediately: true },
      });
      done.hidden = false;
      done.textContent = 'Answer accepted.';
      form.el.hidden = true;
      // Someone else's task is not in your list: its gate just leaves the inbox.
      if (task.addressed) ctx.tasks.answered(task.id);
      else if (r && r.task) ctx.tasks.put(r.task);
      if (r && r.task && onAnswered) onAnswered(r.task);
    },
  });
  return h('div', { class: 'gate' }, h('p', { class: 'question' }, question(task)), form.el, done);
}
