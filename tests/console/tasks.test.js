// The live task list and the task page: the list follows the events feed
// while other clients create tasks, and resumes from its last seq after
// the daemon restarts; a task page shows its timeline, takes a reminder
// and shows it emitted, and cancels the task; the pages fit a narrow
// screen and are reachable by keyboard.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startDaemon, launch, close, openConsole, finish, shot, until } from './harness.js';

before(launch);
after(close);

const rowOf = (page, id) => page.locator(`#task-rows tr[data-task="${id}"]`);

test('the task list updates while another client creates tasks, across a daemon restart', async () => {
  const d = await startDaemon();
  try {
    const page = await openConsole(d, { allow: [/Failed to load resource: net::ERR_/] });
    await page.locator('#task-rows').waitFor({ state: 'attached' });
    await until('the feed', async () => (await page.locator('.conn').textContent()) === 'live');

    const first = await d.send('created by another client');
    await rowOf(page, first.id).waitFor();
    await until('the first task to complete', async () => (await rowOf(page, first.id).getAttribute('data-state')) === 'TASK_STATE_COMPLETED');

    // From here on, every call the console makes.
    const calls = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/a2a/jsonrpc')) calls.push(JSON.parse(r.postData() || '{}'));
    });
    await d.restart();
    await until('the feed to come back', async () => calls.filter((c) => c.method === 'agentd.events/SubscribeToEvents').length >= 1 && (await page.locator('.conn').textContent()) === 'live');
    const second = await d.send('created after the restart');
    await rowOf(page, second.id).waitFor();
    const resumed = calls.filter((c) => c.method === 'agentd.events/SubscribeToEvents');
    assert.ok(resumed.length >= 1 && resumed.every((c) => Number.isInteger(c.params.fromSeq) && c.params.fromSeq > 0),
      `the feed resumed from its last seq: ${JSON.stringify(resumed.map((c) => c.params))}`);
    assert.equal(calls.filter((c) => c.method === 'ListTasks').length, 0, 'no reload: the replay filled the gap');
    assert.equal(await rowOf(page, first.id).count(), 1, 'what was listed stays');

    // Filters: by state and by kind.
    await page.locator('#filter-state').selectOption('TASK_STATE_WORKING');
    await until('an empty list', async () => (await page.locator('#task-rows tr').count()) === 0);
    await page.locator('#filter-state').selectOption('');
    await page.locator('#filter-kind').selectOption('turn');
    await until('both turns', async () => (await page.locator('#task-rows tr').count()) === 2);
    await page.locator('#filter-kind').selectOption('run');
    await until('no runs', async () => (await page.locator('#task-rows tr').count()) === 0);
    await page.locator('#filter-kind').selectOption('');
    await finish(page);
  } finally {
    await d.cleanup();
  }
});

test('a task page: timeline, a reminder injected and emitted, cancel', async () => {
  const slow = Array.from({ length: 80 }, (_, i) => ({ tool_calls: [{ id: `c${i}`, name: 'wait_a_moment' }], delay_ms: 250 }));
  const d = await startDaemon({ script: [...slow, { text: 'done' }], yaml: 'limits:\n  max_steps: 100\n' });
  try {
    const task = await d.send('Fix the build.');
    const page = await openConsole(d, { path: `#/task/${task.id}` });
    await page.locator('#timeline li[data-state="TASK_STATE_WORKING"]').first().waitFor();
    assert.equal(await page.locator('#timeline li').first().getAttribute('data-state'), 'TASK_STATE_SUBMITTED');

    await page.locator('#reminder-body').fill('Upstream PR #1234 merged; rebase first.');
    await page.locator('#reminder-dedupe').fill('upstream');
    await page.locator('#reminder-ttl').fill('2');
    await page.locator('form.reminder-form button[type=submit]').click();
    await page.locator('.reminder-form .notice-ok', { hasText: 'Accepted' }).waitFor();
    await page.locator('#reminder-events li[data-event="emitted"]').first().waitFor();
    await page.locator('#reminder-events li[data-event="expired"]').waitFor();
    assert.match(await page.locator('#reminder-events li[data-event="emitted"]').first().textContent(), /turn \d+, 1 left/);

    // A reminder that stays active (16 turns), then a newer one with its
    // dedupe key: the first is displaced (deduped).
    await page.locator('#reminder-body').fill('CI is red.');
    await page.locator('#reminder-dedupe').fill('ci');
    await page.locator('#reminder-ttl').fill('16');
    await page.locator('form.reminder-form button[type=submit]').click();
    await page.locator('.reminder-form .notice-ok', { hasText: 'Accepted' }).waitFor();
    await page.locator('#reminder-body').fill('CI is green again.');
    await page.locator('form.reminder-form button[type=submit]').click();
    await page.locator('#reminder-events li[data-event="deduped"]').waitFor();
    await shot(page, 'task', { fullPage: true });

    await page.locator('#cancel').click();
    await page.locator('.task-head .badge', { hasText: 'canceled' }).waitFor();
    await page.locator('#timeline li[data-state="TASK_STATE_CANCELED"]').waitFor();
    assert.equal((await d.rpc('GetTask', { id: task.id })).status.state, 'TASK_STATE_CANCELED');
    assert.equal(await page.locator('form.reminder-form').isHidden(), true, 'an ended task takes no reminders');
    await finish(page);
  } finally {
    await d.cleanup();
  }
});

test('narrow screens and the keyboard', async () => {
  const d = await startDaemon();
  try {
    const task = await d.send('a task on a phone');
    const page = await openConsole(d, { viewport: { width: 390, height: 844 } });
    await rowOf(page, task.id).waitFor();
    let reached = '';
    for (let i = 0; i < 5 && reached !== 'Chat'; i += 1) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => document.activeElement.textContent.trim());
    }
    assert.equal(reached, 'Chat', 'the sections are reachable with Tab');
    await page.keyboard.press('Enter');
    await until('the chat page', async () => page.url().endsWith('#/chat'));
    await until('focus where one types', async () => (await page.evaluate(() => document.activeElement.id)) === 'chat-input');

    const overflow = async () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    for (const path of ['#/', '#/chat', '#/runs/demo', `#/task/${task.id}`]) {
      await page.goto(`${d.url}/console/${path}`);
      await page.reload();
      await page.locator('main h1').first().waitFor();
      if (path === '#/') {
        await rowOf(page, task.id).waitFor();
        await shot(page, 'narrow');
      }
      assert.ok((await overflow()) <= 0, `no sideways scrolling on ${path}`);
    }
    await finish(page);
  } finally {
    await d.cleanup();
  }
});
