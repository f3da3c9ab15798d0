// The sign-in box: a bearer token for a daemon that declares the bearer
// scheme on its card. The token is kept in this tab's sessionStorage only.

import { h, replace, notice } from '../lib/dom.js';

export function mount(main, { error, onToken }) {
  const input = h('input', { id: 'token', type: 'password', autocomplete: 'current-password', required: true, 'aria-describedby': 'token-hint' });
  const form = h('form', { class: 'signin', 'aria-label': 'Sign in' },
    h('h1', {}, 'Sign in'),
    h('p', { id: 'token-hint', class: 'hint' }, 'This daemon requires a bearer token (auth.tokens). The console acts as the principal the token belongs to and sees only what it may.'),
    error ? notice('error', error) : null,
    h('div', { class: 'field' }, h('label', { for: 'token' }, 'Token'), input),
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Sign in')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (input.value.trim()) onToken(input.value.trim());
  });
  replace(main, form);
  input.focus();
}
