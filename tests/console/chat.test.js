// Chat: replies stream in token by token, turns continue one context, a
// message sent while a turn works is steering input to it, a conversation
// can be closed, and a new one started.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startDaemon, launch, close, openConsole, finish, shot, until, EXT } from './harness.js';

let d;

before(async () => {
  await launch();
  d = await startDaemon({
    script: [
      { deltas: ['Durable queues ', 'keep work ', 'across crashes.'], delay_ms: 250 },
      { deltas: ['Yes: ', 'what was acknowledged ', 'is committed.'], delay_ms: 250 },
      { deltas: ['Working ', 'on it', '.'], delay_ms: 1500 },
    ],
  });
});

after(async () => {
  await d?.cleanup();
  await close();
});

/** Records every text the last agent bubble shows, as it changes. */
async function recordReplies(page) {
  await page.evaluate(() => {
    window.seen = [];
    new MutationObserver(() => {
      const b = [...document.querySelectorAll('#transcript .msg.agent .bubble-text')].pop();
      if (b && window.seen[window.seen.length - 1] !== b.textContent) window.seen.push(b.textContent);
    }).observe(document.getElementById('transcript'), { subtree: true, childList: true, characterData: true });
  });
}

async function lastReply(page) {
  return page.locator('#transcript .msg.agent .bubble-text').last().textContent();
}

async function say(page, text) {
  await page.locator('#chat-input').fill(text);
  await page.locator('#chat-input').press('Enter');
}

test('two turns on one conversation, each reply streaming in', async () => {
  const page = await openConsole(d, { path: '#/chat' });
  await page.locator('#chat-input').waitFor();
  await recordReplies(page);

  await say(page, 'What are durable queues?');
  const first = 'Durable queues keep work across crashes.';
  await until('the first reply', async () => (await lastReply(page)) === first);
  const seen = await page.evaluate(() => window.seen);
  assert.ok(seen.some((t) => t.length > 0 && t.length < first.length && first.startsWith(t)), `the reply grew in pieces: ${JSON.stringify(seen)}`);
  const context = await until('the conversation in the address', async () => /#\/chat\/(.+)$/.exec(page.url())?.[1]);

  await say(page, 'Even after kill -9?');
  const second = 'Yes: what was acknowledged is committed.';
  await until('the second reply', async () => (await lastReply(page)) === second);
  assert.deepEqual(await page.locator('#transcript .msg.user .bubble-text').allTextContents(), ['What are durable queues?', 'Even after kill -9?']);
  await shot(page, 'chat');

  const turns = await d.rpc('ListTasks', { contextId: context });
  assert.equal(turns.tasks.length, 2, 'both turns are tasks of the one context');
  assert.ok(turns.tasks.every((t) => t.status.state === 'TASK_STATE_COMPLETED'));

  await page.locator('#chat-close').click();
  await until('the closed notice', async () => (await page.locator('.chat-status').textContent()).includes('Conversation closed'));
  assert.equal(await page.locator('#chat-input').isDisabled(), true);
  const refused = await d.rpc('SendMessage', { message: { messageId: 'late', role: 'ROLE_USER', contextId: context, parts: [{ text: 'more?' }] } })
    .then(() => null, (e) => e.message);
  assert.match(refused || '', /-32004/, 'the daemon refuses turns in the closed conversation');

  await page.locator('#chat-new').click();
  await until('a new conversation', async () => (await page.locator('.chat-head h1').textContent()) === 'New conversation');
  assert.equal(await page.locator('#transcript .msg').count(), 0);
  await finish(page);
});

test('a message sent while a turn works is steering input to that turn, and a reload rejoins it', async () => {
  const page = await openConsole(d, { path: '#/chat' });
  await page.locator('#chat-input').waitFor();
  await say(page, 'Start a long job');
  await until('the first piece of the reply', async () => (await lastReply(page)).startsWith('Working'));
  assert.equal(await page.locator('#chat-send').textContent(), 'Steer');
  await say(page, 'Be brief, please.');
  await page.locator('#transcript .msg.user .badge', { hasText: 'steering (sent)' }).waitFor();
  // Reopened while the turn works, the conversation shows both messages
  // and the reply goes on where it was.
  await page.reload();
  await until('the reply', async () => (await lastReply(page)) === 'Working on it.');
  assert.deepEqual(await page.locator('#transcript .msg.user .bubble-text').allTextContents(), ['Start a long job', 'Be brief, please.']);
  const context = /#\/chat\/(.+)$/.exec(page.url())[1];
  const [turn] = (await d.rpc('ListTasks', { contextId: context }, { extensions: [EXT.annotations] })).tasks;
  const history = (turn.history || []).map((m) => m.parts.map((p) => p.text).join(''));
  assert.ok(history.includes('Be brief, please.'), `the steering input is in the turn's history: ${JSON.stringify(history)}`);
  assert.equal((await d.rpc('ListTasks', { contextId: context })).tasks.length, 1, 'steering started no new turn');
  await finish(page);
});
