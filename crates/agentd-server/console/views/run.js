// A run page: its steps as a graph (the plan of the pinned definition from
// `workflow.status`) with each step's live status and output, the open
// gate with its form, the result, and cancel. It refreshes on the run's
// `run`, `step`, `gate` and `task` events from the feed.

import { h, svg, replace, section, stateBadge, notice, renderParts } from '../lib/dom.js';
import { isTerminal } from '../lib/tasks.js';
import { gateForm } from './gate.js';

const W = 150;
const H = 46;
const GX = 28;
const GY = 46;

/** Layers by longest path from the roots; within a layer, parents' order. */
export function layout(plan) {
  const deps = new Map(plan.map((s) => [s.id, (s.dependsOn || []).filter((d) => plan.some((p) => p.id === d))]));
  const layer = new Map();
  const depth = (id, seen) => {
    if (layer.has(id)) return layer.get(id);
    if (seen.has(id)) return 0;
    seen.add(id);
    const d = Math.max(-1, ...deps.get(id).map((x) => depth(x, seen))) + 1;
    layer.set(id, d);
    return d;
  };
  for (const s of plan) depth(s.id, new Set());
  const layers = [];
  for (const s of plan) (layers[layer.get(s.id)] ||= []).push(s.id);
  const pos = new Map();
  layers.forEach((ids, li) => {
    if (li > 0) {
      const center = (id) => {
        const ps = deps.get(id).map((p) => pos.get(p).i);
        return ps.length ? ps.reduce((a, b) => a + b, 0) / ps.length : 0;
      };
      ids.sort((a, b) => center(a) - center(b));
    }
    ids.forEach((id, i) => pos.set(id, { i, layer: li }));
  });
  const widest = Math.max(1, ...layers.map((l) => l.length));
  const width = widest * (W + GX) - GX + 8;
  for (const [id, p] of pos) {
    const n = layers[p.layer].length;
    const offset = ((widest - n) * (W + GX)) / 2;
    pos.set(id, { ...p, x: 4 + offset + p.i * (W + GX), y: 4 + p.layer * (H + GY) });
  }
  return { pos, deps, width, height: layers.length * (H + GY) - GY + 8 };
}

export function mount(main, ctx, id) {
  const offs = [];
  let status = null;
  let task = null;
  let chosen = null;

  const head = h('div', { class: 'task-head' });
  const note = h('div', { 'aria-live': 'polite' });
  const actions = h('div', { class: 'actions' });
  const graph = h('div', { class: 'graph-wrap', id: 'graph' });
  const detail = h('div', { class: 'step-detail', id: 'step-detail', 'aria-live': 'polite' });
  const gate = h('div', { id: 'gate' });
  const result = h('div', { id: 'result' });
  replace(main, h('div', { class: 'run-page' }, head, note, actions, gate,
    section('Steps', graph, detail), result));

  function nodeStatus(stepId) {
    const s = status.steps[stepId];
    if (status.gate && status.gate.step === stepId) return 'waiting';
    return (s && s.status) || 'pending';
  }

  function renderGraph() {
    const plan = status.plan && status.plan.length ? status.plan
      : Object.keys(status.steps || {}).map((k) => ({ id: k, kind: '', dependsOn: [] }));
    const { pos, deps, width, height } = layout(plan);
    const edges = [];
    for (const [to, from] of deps) {
      for (const f of from) {
        const a = pos.get(f);
        const b = pos.get(to);
        const x1 = a.x + W / 2;
        const y1 = a.y + H;
        const x2 = b.x + W / 2;
        const y2 = b.y;
        const my = (y1 + y2) / 2;
        edges.push(svg('path', { class: 'edge', d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2 - 4}`, 'marker-end': 'url(#arrow)' }));
      }
    }
    const nodes = plan.map((s) => {
      const p = pos.get(s.id);
      const st = nodeStatus(s.id);
      const g = svg('g', { class: `node status-${st}${chosen === s.id ? ' chosen' : ''}`, transform: `translate(${p.x},${p.y})`, tabindex: '0', role: 'button',
        'aria-label': `step ${s.id}${s.kind ? ` (${s.kind})` : ''}: ${st}`, 'data-step': s.id, 'data-status': st },
      svg('rect', { width: W, height: H, rx: 8 }),
      svg('text', { x: 10, y: 19, class: 'node-id' }, s.id.length > 18 ? `${s.id.slice(0, 17)}…` : s.id),
      svg('text', { x: 10, y: 36, class: 'node-meta' }, `${s.kind || 'step'} · ${st}`));
      const choose = () => { chosen = s.id; renderGraph(); renderDetail(); graph.querySelector(`[data-step="${CSS.escape(s.id)}"]`)?.focus(); };
      g.addEventListener('click', choose);
      g.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); choose(); } });
      return g;
    });
    const defs = svg('defs', {}, svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 8, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrow' })));
    // A live update must not take the keyboard focus off a step.
    const focused = graph.contains(document.activeElement) ? document.activeElement.getAttribute('data-step') : null;
    replace(graph, svg('svg', { class: 'graph', viewBox: `0 0 ${width} ${height}`, width, height, role: 'group', 'aria-label': `steps of ${status.workflow}` }, defs, edges, nodes));
    if (focused) graph.querySelector(`[data-step="${CSS.escape(focused)}"]`)?.focus();
  }

  function renderDetail() {
    if (!chosen) {
      replace(detail, h('p', { class: 'hint' }, 'Choose a step to see its output.'));
      return;
    }
    const s = status.steps[chosen] || {};
    replace(detail, h('h3', {}, `Step ${chosen}`),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Status'), h('dd', {}, nodeStatus(chosen)),
        h('dt', {}, 'Attempts'), h('dd', {}, String(s.attempts || 0)),
        s.error ? [h('dt', {}, 'Error'), h('dd', { class: 'error-text' }, s.error)] : null),
      h('h4', {}, 'Output'), h('pre', { class: 'part-data', id: 'step-output' }, s.output === undefined || s.output === null ? '(none yet)' : JSON.stringify(s.output, null, 2)));
  }

  function render() {
    replace(head, h('h1', {}, `${status.workflow || 'workflow'} run`), ' ', stateBadge(status.state), ' ', h('code', {}, status.runId || id));
    const cancel = h('button', { type: 'button', class: 'danger', id: 'cancel-run', onclick: () => doCancel(cancel) }, 'Cancel run');
    replace(actions, isTerminal(status.state) ? null : cancel, h('a', { href: `#/task/${id}`, class: 'button' }, 'Task page'));
    renderGraph();
    renderDetail();
    if (status.gate && task && task.status.state === 'TASK_STATE_INPUT_REQUIRED') {
      if (gate.dataset.step !== status.gate.step) {
        gate.dataset.step = status.gate.step;
        replace(gate, section(`Gate: ${status.gate.step}`, gateForm(ctx, task, () => refresh())));
      }
    } else {
      delete gate.dataset.step;
      replace(gate);
    }
    const arts = (task && task.artifacts) || [];
    replace(result, arts.length ? section('Result', arts.map((a) => h('article', { class: 'artifact', id: `artifact-${a.name || a.artifactId}` }, h('h3', {}, a.name || a.artifactId), renderParts(a.parts))))
      : status.state === 'TASK_STATE_FAILED' && status.lastMessage ? notice('error', renderParts(status.lastMessage.parts).map((e) => e.textContent).join(' ')) : null);
  }

  async function doCancel(button) {
    button.disabled = true;
    try {
      await ctx.client.command('workflow.cancel', { run: id });
      await refresh();
    } catch (e) {
      replace(note, notice('error', `Cancel refused: ${e.message}`));
      button.disabled = false;
    }
  }

  let inFlight = null;
  let again = false;
  /** Reads the run again; calls during a read run once more after it. */
  function refresh() {
    if (inFlight) {
      again = true;
      return inFlight;
    }
    inFlight = (async () => {
      do {
        again = false;
        try {
          [status, task] = await Promise.all([ctx.client.command('workflow.status', { run: id }), ctx.client.call('GetTask', { id })]);
          replace(note);
          render();
        } catch (e) {
          replace(note, notice('error', e.code === -32001 ? `No run ${id} is visible to you.` : e.message));
        }
      } while (again);
      inFlight = null;
    })();
    return inFlight;
  }

  offs.push(ctx.feed.on((e) => {
    const d = e.data || {};
    if ((['run', 'step', 'gate'].includes(e.kind) && d.taskId === id) || (e.kind === 'task' && d.id === id)) refresh();
  }));
  refresh();
  return () => offs.forEach((off) => off());
}
