// Small DOM helpers: the console builds its pages with these instead of a
// framework (see ARCHITECTURE.md, "The web console").

/** An element: `h('button', {class: 'x', onclick: f}, 'text', child)`. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

/** An SVG element, same arguments as `h`. */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value' && 'value' in el && !(el instanceof SVGElement)) el.value = v;
    else if (k === 'checked') el.checked = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces an element's children. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** `12:04:05.123` in local time, or the date too when not today. */
export function time(ts) {
  if (!ts) return '';
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return String(ts);
  const pad = (n, w = 2) => String(n).padStart(w, '0');
  const t = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
  return d.toDateString() === new Date().toDateString() ? t : `${d.toISOString().slice(0, 10)} ${t}`;
}

/** `1.2 s`, `340 ms`, `3 min` between two timestamps. */
export function duration(from, to) {
  const ms = new Date(to) - new Date(from);
  if (!Number.isFinite(ms)) return '';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60000)} min`;
}

/** `TASK_STATE_INPUT_REQUIRED` → `input required`. */
export function stateName(s) {
  return String(s || 'unknown').replace(/^TASK_STATE_/, '').replace(/_/g, ' ').toLowerCase();
}

/** A badge for a task state. */
export function stateBadge(s) {
  const name = stateName(s);
  return h('span', { class: `badge state-${name.replace(/ /g, '-')}` }, name);
}

/** The first characters of an id, whole in the title. */
export function shortId(id, n = 8) {
  return h('code', { title: id }, id && id.length > n + 1 ? `${id.slice(0, n)}…` : id || '');
}

/** The text of a message's or artifact's parts (data parts as JSON). */
export function partsText(parts) {
  return (parts || [])
    .map((p) => (p.text !== undefined ? p.text : p.data !== undefined ? JSON.stringify(p.data) : p.url || p.filename || ''))
    .join('');
}

/** Renders parts: text as text, data as formatted JSON, files by name. */
export function renderParts(parts) {
  return (parts || []).map((p) => {
    if (p.text !== undefined) return h('div', { class: 'part-text' }, p.text);
    if (p.data !== undefined) return h('pre', { class: 'part-data' }, JSON.stringify(p.data, null, 2));
    return h('div', { class: 'part-file' }, p.filename || p.url || p.mediaType || '(file)');
  });
}

/** A section with a heading. */
export function section(title, ...children) {
  return h('section', { class: 'panel' }, h('h2', {}, title), ...children);
}

/** A one-line notice (`kind`: info | error | ok). */
export function notice(kind, text) {
  return h('p', { class: `notice notice-${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}

/** Focus without scrolling the page. */
export function focus(el) {
  if (el) el.focus({ preventScroll: true });
}

const FOCUSABLE = 'a[href], button, input, select, textarea, [tabindex]';

/**
 * Runs `render` (which rebuilds rows of `container`) and puts the keyboard
 * focus back on the same control of the same row (`data-task`), so live
 * updates never take the focus away.
 */
export function keepFocus(container, render) {
  const a = document.activeElement;
  const row = a && container.contains(a) ? a.closest('[data-task]') : null;
  const i = row ? [...row.querySelectorAll(FOCUSABLE)].indexOf(a) : -1;
  render();
  if (!row) return;
  const again = container.querySelector(`[data-task="${CSS.escape(row.dataset.task)}"]`);
  const el = again && again.querySelectorAll(FOCUSABLE)[i];
  if (el) focus(el);
}
