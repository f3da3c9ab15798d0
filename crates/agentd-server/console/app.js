// The console's entry: reads the public agent card, signs in when the card
// declares the bearer scheme, opens the events feed, and routes `#/…`
// addresses to pages. Every request goes to this daemon, with this
// user's token.

import { AuthError, Client } from './lib/a2a.js';
import { h, replace, notice } from './lib/dom.js';
import { Feed } from './lib/feed.js';
import { TaskStore } from './lib/tasks.js';
import * as home from './views/home.js';
import * as task from './views/task.js';
import * as chat from './views/chat.js';
import * as runs from './views/runs.js';
import * as run from './views/run.js';
import * as signin from './views/signin.js';

const TOKEN_KEY = 'agentd.console.token';
const main = document.getElementById('main');
const who = document.getElementById('who');
const conn = document.getElementById('conn');
let ctx = null;
let cleanup = null;
let card = null;

async function boot() {
  try {
    const r = await fetch(new URL('../.well-known/agent-card.json', document.baseURI));
    card = await r.json();
  } catch (e) {
    replace(main, notice('error', `Cannot read the agent card: ${e.message}`));
    return;
  }
  const needsToken = Object.keys(card.securitySchemes || {}).length > 0;
  const token = needsToken ? sessionStorage.getItem(TOKEN_KEY) || '' : '';
  if (needsToken && !token) showSignin();
  else connect(token, needsToken);
}

function showSignin(error) {
  stop();
  replace(who);
  replace(conn);
  document.title = 'Sign in · agentd';
  signin.mount(main, { error, onToken: (t) => connect(t, true) });
}

function stop() {
  if (cleanup) cleanup();
  cleanup = null;
  if (ctx) {
    ctx.feed.stop();
    ctx.tasks.stop();
  }
  ctx = null;
}

async function connect(token, needsToken) {
  stop();
  const client = new Client(token);
  try {
    await client.call('ListTasks', { pageSize: 1 });
  } catch (e) {
    if (e instanceof AuthError) {
      sessionStorage.removeItem(TOKEN_KEY);
      showSignin('The daemon did not accept this token.');
    } else {
      replace(main, notice('error', `Cannot reach the daemon: ${e.message}`));
    }
    return;
  }
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  const feed = new Feed(client);
  const tasks = new TaskStore(client, feed);
  ctx = { client, card, feed, tasks, me: null };
  feed.onAuthFailure = () => showSignin('The daemon no longer accepts this token.');
  feed.onStatus((s) => replace(conn, h('span', { class: `conn conn-${s}`, title: 'events feed' }, s)));
  renderWho(needsToken);
  client.command('status').then((s) => {
    if (ctx && ctx.client === client) {
      ctx.me = s.principal;
      renderWho(needsToken);
    }
  }).catch(() => {});
  feed.start();
  route(false);
}

function renderWho(needsToken) {
  const id = ctx.me ? ctx.me.id : '';
  const out = h('button', { type: 'button', id: 'signout', onclick: () => { sessionStorage.removeItem(TOKEN_KEY); showSignin(); } }, 'Sign out');
  replace(who, id ? h('span', { id: 'principal', title: `role: ${ctx.me.role}` }, id) : null, needsToken ? out : null);
}

const PAGES = {
  '': (arg) => home.mount(main, ctx),
  task: (arg) => task.mount(main, ctx, arg),
  chat: (arg) => chat.mount(main, ctx, arg),
  runs: (arg) => runs.mount(main, ctx, arg),
  run: (arg) => run.mount(main, ctx, arg),
};

const TITLES = { '': 'Inbox', task: 'Task', chat: 'Chat', runs: 'Runs', run: 'Run' };

function route(userNavigated) {
  if (!ctx) return;
  if (cleanup) cleanup();
  cleanup = null;
  const [, page = '', ...rest] = location.hash.split('/');
  const arg = rest.length && rest.join('/') ? decodeURIComponent(rest.join('/')) : undefined;
  const show = PAGES[page];
  for (const a of document.querySelectorAll('nav a')) {
    const target = a.getAttribute('href').split('/')[1] || '';
    const current = target === page || (target === 'runs' && page === 'run');
    if (current) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = `${TITLES[page] || 'Not found'} · agentd`;
  if (!show) {
    replace(main, h('h1', {}, 'Not found'), h('p', {}, 'No page at this address. ', h('a', { href: '#/' }, 'Go to the inbox.')));
    return;
  }
  cleanup = show(arg) || null;
  if (userNavigated && !main.contains(document.activeElement)) main.focus({ preventScroll: true });
}

window.addEventListener('hashchange', () => route(true));
boot();
