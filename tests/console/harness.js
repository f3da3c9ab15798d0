// The console's browser tests: a real daemon (target/debug/agentd serve,
// its own data directory, the `scripted` model where replies must be
// predictable) and headless Chromium from the system package, driven by
// playwright-core. Each page records console errors, uncaught exceptions
// and every request that leaves the daemon's origin; `finish` fails the
// test on any of them.

import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
export const BIN = process.env.AGENTD_BIN || join(root, 'target/debug/agentd');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARTIFACTS = process.env.CONSOLE_ARTIFACTS || join(here, 'artifacts');
const DOC_SHOTS = process.env.CONSOLE_DOC_SHOTS ? join(root, 'docs/console') : null;

export const EXT = {
  annotations: 'https://agentd.dev/a2a/ext/task-annotations',
  events: 'https://agentd.dev/a2a/ext/events',
};

/** Polls `check` until it returns a truthy value or `ms` pass. */
export async function until(what, check, ms = 10000) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await check();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${last})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A daemon. `tokens`: {name: principal id with role prefix, …} e.g.
 * {alice: 'user:alice'}; the token of `alice` is `alice-secret`.
 * `script`: the scripted model's steps. `instruction`: a document's text.
 */
export async function startDaemon({ tokens, script, instruction, yaml = '' } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'agentd-console-'));
  const env = { ...process.env, AGENTD_LOG: 'info' };
  let config = yaml;
  if (tokens) {
    config += 'auth:\n  tokens:\n';
    for (const [name, id] of Object.entries(tokens)) {
      const role = id.split(':')[0];
      const v = `TOKEN_${name.toUpperCase()}`;
      env[v] = `${name}-secret`;
      config += `    - {id: "${id}", role: ${role}, token: "env:${v}"}\n`;
    }
  }
  if (script) {
    writeFileSync(join(dir, 'script.json'), JSON.stringify(script));
    config += `model:\n  kind: scripted\n  script: ${JSON.stringify(join(dir, 'script.json'))}\n`;
  }
  writeFileSync(join(dir, 'config.yaml'), config);
  const args = ['serve', '--data-dir', join(dir, 'data'), '--config', join(dir, 'config.yaml')];
  if (instruction) {
    writeFileSync(join(dir, 'agent.md'), instruction);
    args.push('--instruction', join(dir, 'agent.md'));
  }
  const d = { dir, log: '', url: null, child: null };
  d.start = async (listen = '127.0.0.1:0') => {
    d.child = spawn(BIN, [...args, '--listen', listen], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    const exited = new Promise((r) => d.child.once('exit', r));
    d.exited = exited;
    d.url = await new Promise((ok, fail) => {
      d.child.stderr.setEncoding('utf8');
      d.child.stderr.on('data', (s) => {
        d.log += s;
        const m = /listening on (\S+)/.exec(d.log);
        if (m) ok(m[1].replace(/\/$/, ''));
      });
      exited.then((code) => fail(new Error(`agentd exited (${code}) before listening:\n${d.log}`)));
    });
    await until('healthz', async () => (await fetch(`${d.url}/healthz`)).ok);
    return d;
  };
  /** SIGTERM, and wait for the exit. */
  d.stop = async () => {
    if (!d.child || d.child.exitCode !== null) return;
    d.child.kill('SIGTERM');
    await d.exited;
  };
  d.restart = async () => {
    const { host } = new URL(d.url);
    await d.stop();
    await d.start(host);
  };
  d.cleanup = async () => {
    await d.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  /** A JSON-RPC call as another client would make it; the `result`. */
  d.rpc = async (method, params, { token, extensions = [] } = {}) => {
    const headers = { 'content-type': 'application/json', 'A2A-Version': '1.0' };
    if (token) headers.authorization = `Bearer ${token}`;
    if (extensions.length) headers['A2A-Extensions'] = extensions.join(', ');
    const r = await fetch(`${d.url}/a2a/jsonrpc`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
    const doc = await r.json();
    if (doc.error) throw new Error(`${method}: ${JSON.stringify(doc.error)}`);
    return doc.result;
  };
  /** Starts a turn with `text` and returns its task at once. */
  d.send = async (text, opts = {}) => {
    const message = { messageId: `m-${Math.random().toString(36).slice(2)}`, role: 'ROLE_USER', parts: [{ text }] };
    const r = await d.rpc('SendMessage', { message, configuration: { returnImmediately: true } }, opts);
    return r.task;
  };
  await d.start();
  return d;
}

let browser = null;

/** One Chromium per test file (Debian's package; no browser download). */
export async function launch() {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  return browser;
}

export async function close() {
  if (browser) await browser.close();
}

/**
 * A fresh browser context and page on the daemon's console. `allow`:
 * patterns of console messages a test expects (a refused token's 401).
 */
export async function openConsole(d, { viewport = { width: 1280, height: 800 }, path = '', allow = [] } = {}) {
  const context = await browser.newContext({ viewport, reducedMotion: 'reduce' });
  const page = await context.newPage();
  const problems = [];
  const origin = new URL(d.url).origin;
  page.on('console', (m) => {
    if ((m.type() === 'error' || m.type() === 'warning') && !allow.some((a) => a.test(m.text()))) problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`));
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(`${origin}/`) && !u.startsWith('data:')) problems.push(`request outside the daemon: ${u}`);
  });
  page.problems = problems;
  page.setDefaultTimeout(10000);
  await page.goto(`${d.url}/console/${path}`);
  return page;
}

/** Fails on any console error, uncaught exception or outside request. */
export async function finish(page) {
  const problems = [...page.problems];
  await page.context().close();
  assert.deepEqual(problems, [], 'the page ran clean');
}

/** A screenshot into the artifacts directory (and docs/console with CONSOLE_DOC_SHOTS=1). */
export async function shot(page, name, { fullPage = false } = {}) {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage });
  if (DOC_SHOTS) {
    mkdirSync(DOC_SHOTS, { recursive: true });
    await page.screenshot({ path: join(DOC_SHOTS, `${name}.png`), fullPage });
  }
}

/** The text of every element matching `selector`. */
export async function texts(page, selector) {
  return page.locator(selector).allTextContents();
}
