// Runs: start a workflow with a form built from its `inputs` schema (the
// command extension's card params list each workflow with it), and the
// runs this principal may see, live.

import { EXT } from '../lib/a2a.js';
import { h, replace, section, stateBadge, shortId, time, notice } from '../lib/dom.js';
import { schemaForm } from '../lib/schema-form.js';
import { kindOf } from '../lib/tasks.js';

/** The workflows the card declares: `[{name, description, inputs}]`. */
export function workflows(card) {
  const ext = ((card.capabilities || {}).extensions || []).find((e) => e.uri === EXT.command);
  const listed = ext && ext.params && ext.params.workflows;
  if (Array.isArray(listed)) return listed;
  // A daemon that lists no schemas still names its workflows as skills.
  return (card.skills || []).filter((s) => s.id.startsWith('workflow:'))
    .map((s) => ({ name: s.id.slice(9), description: s.description, inputs: {} }));
}

/** `message.parts[0].data.agentd.inputs.version` → `version`. */
function fieldOf(field) {
  const m = /agentd\.inputs(?:\.(.*)|(\[.*\].*))?$/.exec(field);
  if (!m) return null;
  return m[1] || m[2] || '';
}

const NO_INPUTS = { type: 'object', properties: {}, additionalProperties: false };

export function mount(main, ctx, selected) {
  const list = workflows(ctx.card);
  const picker = h('ul', { class: 'workflow-list', id: 'workflows' });
  const starter = h('div', { class: 'starter', id: 'starter' });
  const runs = h('tbody', { id: 'run-rows' });

  replace(main,
    h('h1', {}, 'Runs'),
    h('div', { class: 'columns' },
      section('Start a run', list.length ? picker : h('p', { class: 'empty' }, 'The instruction document declares no workflow.'), starter),
      section('Runs', h('div', { class: 'table-wrap' }, h('table', { class: 'tasks' },
        h('thead', {}, h('tr', {}, ['State', 'Run', 'Updated'].map((c) => h('th', { scope: 'col' }, c)))), runs)))));

  function pick(name) {
    selected = name;
    for (const b of picker.querySelectorAll('a')) b.setAttribute('aria-current', b.dataset.workflow === name ? 'true' : 'false');
    const w = list.find((x) => x.name === name);
    if (!w) {
      replace(starter, name ? notice('error', `No workflow named ${name}.`) : h('p', { class: 'hint' }, 'Choose a workflow.'));
      return;
    }
    const form = schemaForm(w.inputs || NO_INPUTS, {
      submitLabel: `Start ${w.name}`,
      name: `inputs of ${w.name}`,
      fieldOf,
      async onSubmit(inputs) {
        const task = await ctx.client.command('workflow.run', { workflow: w.name, inputs }, { returnImmediately: true });
        ctx.tasks.put(task);
        location.hash = `#/run/${task.id}`;
      },
    });
    replace(starter, h('h3', {}, w.name), w.description ? h('p', { class: 'hint' }, w.description) : null,
      w.inputs ? null : h('p', { class: 'hint' }, 'This workflow takes no inputs.'), form.el);
  }

  replace(picker, list.map((w) => h('li', {}, h('a', { href: `#/runs/${encodeURIComponent(w.name)}`, dataset: { workflow: w.name } }, w.name))));

  function renderRuns() {
    const rs = ctx.tasks.list().filter((t) => kindOf(t) === 'run');
    replace(runs, rs.length ? rs.map((t) => h('tr', { dataset: { task: t.id } },
      h('td', { 'data-label': 'State' }, stateBadge(t.status.state)),
      h('td', { 'data-label': 'Run' }, h('a', { href: `#/run/${t.id}` }, ((t.metadata || {})[EXT.annotations] || {}).link?.id || t.id), ' ', shortId(t.id)),
      h('td', { 'data-label': 'Updated' }, time(t.status.timestamp)))) : h('tr', {}, h('td', { colspan: 3, class: 'empty' }, 'No runs yet.')));
  }

  pick(selected || (list.length === 1 ? list[0].name : ''));
  renderRuns();
  return ctx.tasks.on(renderRuns);
}
