// Forms rendered from a JSON Schema (a gate's `askSchema`, a workflow's
// `inputs` schema): objects, booleans, strings, enums, numbers, arrays,
// with required marks, descriptions, inline validation, and the server's
// InvalidParams violations shown at the fields they name. What the form
// cannot express (oneOf, a schema-less value) is edited as JSON. The
// daemon validates every answer again; checks here only save a round trip.

import { h, replace, focus } from './dom.js';

let seq = 0;
const uid = (p) => `${p}-${++seq}`;

const typeOf = (s) => {
  const t = s && s.type;
  if (Array.isArray(t)) return t.find((x) => x !== 'null') || 'null';
  if (t) return t;
  if (s && s.properties) return 'object';
  if (s && s.items) return 'array';
  return undefined;
};

const join = (path, name) => (path ? `${path}.${name}` : name);
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** The violations of `value` against the keywords the form checks. */
export function validate(schema, value, path = '') {
  const out = [];
  const bad = (message) => out.push({ path, message });
  if (!schema || value === undefined) return out;
  if (schema.enum && !schema.enum.some((e) => same(e, value))) bad(`must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  if (schema.const !== undefined && !same(schema.const, value)) bad(`must be ${JSON.stringify(schema.const)}`);
  const t = typeOf(schema);
  const types = Array.isArray(schema.type) ? schema.type : t ? [t] : [];
  const is = {
    object: (v) => v !== null && typeof v === 'object' && !Array.isArray(v),
    array: Array.isArray,
    string: (v) => typeof v === 'string',
    number: (v) => typeof v === 'number',
    integer: Number.isInteger,
    boolean: (v) => typeof v === 'boolean',
    null: (v) => v === null,
  };
  if (types.length && !types.some((x) => is[x] && is[x](value))) {
    bad(`must be of type ${types.join(' or ')}`);
    return out;
  }
  if (typeof value === 'string') {
    const n = [...value].length;
    if (schema.minLength !== undefined && n < schema.minLength) bad(schema.minLength === 1 ? 'must not be empty' : `must be at least ${schema.minLength} characters`);
    if (schema.maxLength !== undefined && n > schema.maxLength) bad(`must be at most ${schema.maxLength} characters`);
    if (schema.pattern) {
      let re = null;
      try {
        re = new RegExp(schema.pattern, 'u');
      } catch {
        // A pattern JavaScript cannot read is left to the daemon.
      }
      if (re && !re.test(value)) bad(`must match ${schema.pattern}`);
    }
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) bad(`must be at least ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) bad(`must be at most ${schema.maximum}`);
    if (typeof schema.exclusiveMinimum === 'number' && value <= schema.exclusiveMinimum) bad(`must be greater than ${schema.exclusiveMinimum}`);
    if (typeof schema.exclusiveMaximum === 'number' && value >= schema.exclusiveMaximum) bad(`must be less than ${schema.exclusiveMaximum}`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) bad(`must have at least ${schema.minItems} item(s)`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) bad(`must have at most ${schema.maxItems} item(s)`);
    if (schema.items && typeof schema.items === 'object') value.forEach((v, i) => out.push(...validate(schema.items, v, `${path}[${i}]`)));
  }
  if (is.object(value)) {
    for (const r of schema.required || []) if (value[r] === undefined) out.push({ path: join(path, r), message: 'is required' });
    for (const [k, s] of Object.entries(schema.properties || {})) out.push(...validate(s, value[k], join(path, k)));
    if (schema.additionalProperties === false) {
      for (const k of Object.keys(value)) if (!(schema.properties || {})[k]) out.push({ path: join(path, k), message: 'is not allowed here' });
    }
  }
  return out;
}

/**
 * A form for `schema`. `onSubmit(value)` returns a promise; when it
 * rejects with an A2aError, `fieldOf(violation.field)` maps each violation
 * to a path of the form (`approve`, `items[0].name`), '' for the whole
 * value, or null to show it as a form-level error.
 */
export function schemaForm(schema, { submitLabel = 'Submit', onSubmit, fieldOf = () => null, name = 'answer' }) {
  schema = schema || {};
  const slots = new Map(); // path → {error, input}
  const root = control(schema, '', true, null, slots);
  const formError = h('div', { class: 'form-errors', 'aria-live': 'polite' });
  const json = h('textarea', { class: 'json-edit', rows: 8, spellcheck: 'false', 'aria-label': `${name} as JSON` });
  const jsonError = h('div', { class: 'field-error', role: 'alert' });
  const jsonBox = h('div', { class: 'json-box', hidden: true }, json, jsonError);
  let jsonMode = false;
  const toggle = h('button', { type: 'button', class: 'link-button', onclick: () => setMode(!jsonMode) }, 'Edit as JSON');
  const submit = h('button', { type: 'submit', class: 'primary' }, submitLabel);
  const form = h('form', { class: 'schema-form', novalidate: true, 'aria-label': name }, root.el, jsonBox, formError, h('div', { class: 'form-actions' }, submit, toggle));

  function setMode(on) {
    jsonMode = on;
    if (on) json.value = JSON.stringify(root.get() ?? {}, null, 2);
    root.el.hidden = on;
    jsonBox.hidden = !on;
    toggle.textContent = on ? 'Edit as form' : 'Edit as JSON';
    clearErrors();
    focus(on ? json : root.el.querySelector('input, select, textarea, button'));
  }

  function clearErrors() {
    for (const s of slots.values()) {
      s.error.textContent = '';
      if (s.input) s.input.removeAttribute('aria-invalid');
    }
    replace(formError);
    jsonError.textContent = '';
  }

  function show(errors) {
    let first = null;
    const loose = [];
    for (const e of errors) {
      if (jsonMode || e.path === null || e.path === undefined) {
        loose.push(e);
        continue;
      }
      let p = e.path;
      while (!slots.has(p) && p) p = p.replace(/(\.[^.[\]]*|\[\d+\])$|^[^.[\]]*$/, '');
      const slot = slots.get(p);
      if (!slot) {
        loose.push(e);
        continue;
      }
      const where = p === e.path ? '' : `${e.path.slice(p ? p.length + 1 : 0)}: `;
      slot.error.textContent = slot.error.textContent ? `${slot.error.textContent}; ${where}${e.message}` : `${where}${e.message}`;
      if (slot.input) slot.input.setAttribute('aria-invalid', 'true');
      first = first || slot.input;
    }
    const target = jsonMode ? jsonError : formError;
    for (const e of loose) target.append(h('p', {}, e.path ? `${e.path}: ${e.message}` : e.message));
    focus(first || (jsonMode ? json : null));
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors();
    let value;
    if (jsonMode) {
      try {
        value = JSON.parse(json.value);
      } catch (e) {
        show([{ path: '', message: `not JSON: ${e.message}` }]);
        return;
      }
    } else {
      const local = root.problems();
      value = root.get();
      if (value === undefined) value = {};
      const errors = [...local, ...validate(schema, value)];
      if (errors.length) {
        show(dedupe(errors));
        return;
      }
    }
    submit.disabled = true;
    try {
      await onSubmit(value);
    } catch (e) {
      const fields = (e && e.fields) || [];
      if (fields.length) show(fields.map((f) => ({ path: jsonMode ? f.field : fieldOf(f.field), message: f.description })));
      else show([{ path: null, message: (e && e.message) || String(e) }]);
    } finally {
      submit.disabled = false;
    }
  });

  return { el: form, clearErrors };
}

function dedupe(errors) {
  const seen = new Set();
  return errors.filter((e) => {
    const k = `${e.path}\u0000${e.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

function labelFor(id, name, schema, required) {
  return h('label', { for: id }, schema.title || name, required ? h('abbr', { class: 'req', title: 'required' }, ' *') : null);
}

function hint(schema) {
  return schema.description ? h('p', { class: 'hint', id: uid('hint') }, schema.description) : null;
}

/** One control for `schema` at `path`: `{el, get(), problems()}`. */
function control(schema, path, required, name, slots) {
  const t = typeOf(schema);
  if (schema.enum) return enumControl(schema, path, required, name, slots);
  if (t === 'object') return objectControl(schema, path, required, name, slots);
  if (t === 'array' && schema.items && typeof schema.items === 'object') return arrayControl(schema, path, required, name, slots);
  if (t === 'boolean') return booleanControl(schema, path, required, name, slots);
  if (t === 'string' || t === 'number' || t === 'integer') return inputControl(schema, t, path, required, name, slots);
  return jsonControl(schema, path, required, name, slots);
}

function field(path, name, schema, required, input, slots, body) {
  const error = h('p', { class: 'field-error', id: uid('err') });
  const help = hint(schema);
  const described = [help && help.id, error.id].filter(Boolean).join(' ');
  if (input) input.setAttribute('aria-describedby', described);
  slots.set(path, { error, input });
  return h('div', { class: 'field', dataset: { path } }, body, help, error);
}

function inputControl(schema, t, path, required, name, slots) {
  const id = uid('f');
  const long = schema.format === 'textarea' || (schema.maxLength || 0) > 200;
  const attrs = { id, name: path || name, 'aria-required': required ? 'true' : null };
  let input;
  if (t === 'string' && long) input = h('textarea', { ...attrs, rows: 4 });
  else if (t === 'string') input = h('input', { ...attrs, type: 'text', autocomplete: 'off' });
  else input = h('input', { ...attrs, type: 'number', step: t === 'integer' ? '1' : 'any', inputmode: t === 'integer' ? 'numeric' : 'decimal' });
  if (schema.default !== undefined) input.value = String(schema.default);
  const el = field(path, name, schema, required, input, slots, [labelFor(id, name || 'value', schema, required), input]);
  return {
    el,
    get() {
      if (t === 'string') return input.value === '' ? undefined : input.value;
      if (input.value === '') return undefined;
      return Number(input.value);
    },
    problems() {
      if (t !== 'string' && input.validity.badInput) return [{ path, message: 'is not a number' }];
      return [];
    },
  };
}

function enumControl(schema, path, required, name, slots) {
  const id = uid('f');
  const select = h('select', { id, name: path || name, 'aria-required': required ? 'true' : null },
    h('option', { value: '' }, required ? '— choose —' : '(none)'),
    schema.enum.map((v, i) => h('option', { value: String(i) }, typeof v === 'string' ? v : JSON.stringify(v))));
  if (schema.default !== undefined) {
    const i = schema.enum.findIndex((v) => same(v, schema.default));
    if (i >= 0) select.value = String(i);
  }
  const el = field(path, name, schema, required, select, slots, [labelFor(id, name || 'value', schema, required), select]);
  return { el, get: () => (select.value === '' ? undefined : schema.enum[Number(select.value)]), problems: () => [] };
}

function booleanControl(schema, path, required, name, slots) {
  const group = uid('b');
  const choices = [['true', 'Yes'], ['false', 'No']];
  if (!required) choices.push(['', 'Not set']);
  const inputs = choices.map(([value, text]) => {
    const id = uid('r');
    const checked = schema.default !== undefined ? String(schema.default) === value : value === '';
    return [h('input', { type: 'radio', id, name: group, value, checked }), h('label', { for: id }, text)];
  });
  const legend = h('legend', {}, schema.title || name || 'value', required ? h('abbr', { class: 'req', title: 'required' }, ' *') : null);
  const set = h('fieldset', { class: 'choices', role: 'radiogroup', 'aria-required': required ? 'true' : null }, legend, inputs.map(([i, l]) => h('span', { class: 'choice' }, i, l)));
  const el = field(path, name, schema, required, set, slots, set);
  slots.get(path).input = inputs[0][0]; // focus lands on the first choice
  return {
    el,
    get() {
      const on = inputs.find(([i]) => i.checked);
      if (!on || on[0].value === '') return undefined;
      return on[0].value === 'true';
    },
    problems: () => [],
  };
}

function jsonControl(schema, path, required, name, slots) {
  const id = uid('f');
  const area = h('textarea', { id, rows: 3, class: 'json-edit', spellcheck: 'false', name: path || name, 'aria-required': required ? 'true' : null });
  if (schema.default !== undefined) area.value = JSON.stringify(schema.default);
  const el = field(path, name, schema, required, area, slots, [labelFor(id, `${name || 'value'} (JSON)`, schema, required), area]);
  return {
    el,
    get() {
      if (area.value.trim() === '') return undefined;
      try {
        return JSON.parse(area.value);
      } catch {
        return area.value;
      }
    },
    problems() {
      if (area.value.trim() === '') return [];
      try {
        JSON.parse(area.value);
        return [];
      } catch (e) {
        return [{ path, message: `is not JSON: ${e.message}` }];
      }
    },
  };
}

function objectControl(schema, path, required, name, slots) {
  const req = new Set(schema.required || []);
  const props = Object.entries(schema.properties || {});
  const children = props.map(([k, s]) => [k, control(s || {}, join(path, k), req.has(k), k, slots)]);
  const extra = props.length === 0 && schema.additionalProperties !== false ? jsonControl({}, path, required, name || 'value', slots) : null;
  const error = h('p', { class: 'field-error', id: uid('err') });
  if (!slots.has(path)) slots.set(path, { error, input: null });
  const body = [schema.description && path ? h('p', { class: 'hint' }, schema.description) : null, children.map(([, c]) => c.el), extra && extra.el, error];
  const el = path
    ? h('fieldset', { class: 'object' }, h('legend', {}, schema.title || name, required ? h('abbr', { class: 'req', title: 'required' }, ' *') : null), body)
    : h('div', { class: 'object root' }, schema.description ? h('p', { class: 'hint' }, schema.description) : null, body);
  return {
    el,
    get() {
      if (extra) return extra.get();
      const out = {};
      for (const [k, c] of children) {
        const v = c.get();
        if (v !== undefined) out[k] = v;
      }
      return Object.keys(out).length || required ? out : undefined;
    },
    problems: () => (extra ? extra.problems() : children.flatMap(([, c]) => c.problems())),
  };
}

function arrayControl(schema, path, required, name, slots) {
  const items = [];
  const list = h('ol', { class: 'array-items' });
  const error = h('p', { class: 'field-error', id: uid('err') });
  const add = h('button', { type: 'button', onclick: () => { addItem(); focus(items[items.length - 1].el.querySelector('input, select, textarea')); } }, `Add ${name || 'item'}`);
  add.setAttribute('aria-describedby', error.id);
  slots.set(path, { error, input: add });

  function render() {
    // Item paths carry their index, so items are rebuilt after a removal.
    const values = items.map((c) => c.get());
    for (let i = 0; i < items.length; i += 1) for (const k of [...slots.keys()]) if (k.startsWith(`${path}[${i}]`)) slots.delete(k);
    items.length = 0;
    replace(list);
    for (const v of values) addItem(v);
  }

  function addItem(value) {
    const i = items.length;
    const c = control(schema.items, `${path}[${i}]`, true, `${name || 'item'} ${i + 1}`, slots);
    if (value !== undefined) setValue(c.el, value);
    const remove = h('button', { type: 'button', class: 'link-button', onclick: () => { items.splice(items.indexOf(c), 1); render(); focus(add); } }, 'Remove');
    c.row = h('li', {}, c.el, remove);
    items.push(c);
    list.append(c.row);
  }

  const legend = h('legend', {}, schema.title || name || 'items', required ? h('abbr', { class: 'req', title: 'required' }, ' *') : null);
  const el = h('fieldset', { class: 'array' }, legend, hint(schema), list, add, error);
  return {
    el,
    get() {
      const v = items.map((c) => c.get());
      return v.length || required ? v : undefined;
    },
    problems: () => items.flatMap((c) => c.problems()),
  };
}

/** Puts a scalar back into a rebuilt item (strings, numbers, booleans). */
function setValue(el, value) {
  if (value === null || typeof value === 'object') return;
  const input = el.querySelector('input:not([type=radio]), textarea');
  if (input) {
    input.value = String(value);
    return;
  }
  const radio = el.querySelector(`input[type=radio][value="${String(value)}"]`);
  if (radio) radio.checked = true;
}
