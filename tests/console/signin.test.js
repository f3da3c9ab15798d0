// Signing in with a bearer token: the console acts as that principal and
// shows only its tasks; another user cannot see them, by list or by link.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startDaemon, launch, close, openConsole, finish, shot, until, texts } from './harness.js';

let d;
let alicesTask;
let bobsTask;

before(async () => {
  await launch();
  d = await startDaemon({ tokens: { alice: 'user:alice', bob: 'user:bob' } });
  alicesTask = await d.send('alice asks about durable queues', { token: 'alice-secret' });
  bobsTask = await d.send('bob asks about gardening', { token: 'bob-secret' });
});

after(async () => {
  await d?.cleanup();
  await close();
});

async function signIn(page, token) {
  await page.locator('#token').fill(token);
  await page.keyboard.press('Enter');
}

test('a user signs in with a token and sees only their own tasks', async () => {
  const page = await openConsole(d);
  await page.locator('#token').waitFor();
  await shot(page, 'signin');
  await signIn(page, 'alice-secret');
  await until('the signed-in principal', async () => (await page.locator('#principal').textContent()) === 'user:alice');
  const row = page.locator(`#task-rows tr[data-task="${alicesTask.id}"]`);
  await row.waitFor();
  assert.match(await row.textContent(), /alice asks about durable queues/);
  const rows = await page.locator('#task-rows tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.task));
  assert.ok(!rows.includes(bobsTask.id), "bob's task is not listed for alice");
  assert.match(await page.locator('.conn').textContent(), /live/);
  await shot(page, 'tasks');
  await finish(page);
});

test("a second user cannot see the first user's tasks, even by their address", async () => {
  const page = await openConsole(d);
  await signIn(page, 'bob-secret');
  await page.locator(`#task-rows tr[data-task="${bobsTask.id}"]`).waitFor();
  const rows = await page.locator('#task-rows tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.task));
  assert.deepEqual(rows, [bobsTask.id], 'bob sees his task only');

  await page.goto(`${d.url}/console/#/task/${alicesTask.id}`);
  await until('the not-found notice', async () => (await texts(page, '.notice-error')).some((t) => t.includes(`No task ${alicesTask.id} is visible to you`)));
  assert.equal(await page.locator('#messages').count(), 0, "nothing of alice's task is shown");
  await finish(page);
});

test('a wrong token is refused with a message and the sign-in box stays', async () => {
  // Chromium itself logs the refused request (HTTP 401).
  const page = await openConsole(d, { allow: [/status of 401/] });
  await signIn(page, 'not-a-token');
  await until('the refusal', async () => (await texts(page, '.notice-error')).some((t) => t.includes('did not accept this token')));
  assert.equal(await page.locator('#token').count(), 1);
  assert.equal(await page.locator('#task-rows').count(), 0);
  await finish(page);
});

test('signing out forgets the token', async () => {
  const page = await openConsole(d);
  await signIn(page, 'alice-secret');
  await page.locator('#signout').click();
  await page.locator('#token').waitFor();
  await page.reload();
  await page.locator('#token').waitFor();
  assert.equal(await page.locator('#principal').count(), 0);
  await finish(page);
});
