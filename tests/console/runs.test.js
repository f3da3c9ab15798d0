// Runs and gates: start a workflow from a form built from its inputs
// schema, watch its steps as a graph, answer its gate from the inbox
// (inline errors, then the daemon's violations at their fields), watch it
// complete; cancel a run; a gate addressed to another user on someone
// else's run, found in that user's inbox and answered there.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startDaemon, launch, close, openConsole, finish, shot, until } from './harness.js';

const RELEASE = `---
spec: "1"
---
# Release agent

You prepare releases.

:::!workflow{name=release description="Record a release of a version."}
inputs:
  schema:
    type: object
    properties:
      version: {type: string, pattern: "^v[0-9]+", description: "The version, like v2"}
      copies: {type: integer, minimum: 1, multipleOf: 5, description: "How many, in fives"}
      channel: {type: string, enum: [stable, beta]}
      urgent: {type: boolean}
      notes: {type: array, items: {type: string}}
    required: [version, copies]
    additionalProperties: false
steps:
  record: {kind: assign, values: {version: "{{inputs.version}}", copies: "{{inputs.copies}}", notes: "{{inputs.notes}}"}}
  check: {kind: assign, depends_on: record, values: {ok: true}}
  done: {kind: finish, depends_on: [record, check], output: "{{steps.record.output}}"}
:::
`;

const REVIEW = `---
spec: "1"
---
# Review agent

You run reviews.

:::!workflow{name=review}
steps:
  ask:
    kind: human
    question: "Ship {{inputs.what}}?"
    schema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
    to: "@human/approver"
  done: {kind: finish, depends_on: ask, output: "{{steps.ask.output.ok}}"}
:::

::!human{name=approver role=approver channel=@channel/ops principal=user:bob}

::!channel{name=ops kind=webhook}
`;

let demo;
let release;
let review;

before(async () => {
  await launch();
  demo = await startDaemon({ script: [{ text: 'They approved: ship it.' }] });
  release = await startDaemon({ instruction: RELEASE });
  review = await startDaemon({ instruction: REVIEW, tokens: { alice: 'user:alice', bob: 'user:bob' } });
});

after(async () => {
  await demo?.cleanup();
  await release?.cleanup();
  await review?.cleanup();
  await close();
});

const fieldError = (scope, path) => scope.locator(`.field[data-path="${path}"] .field-error`);

test('the demo run: start it, answer its gate in the inbox, watch it complete', async () => {
  const page = await openConsole(demo, { path: '#/runs' });
  await page.locator('#workflows a[data-workflow="demo"]').click();
  await page.locator('#starter', { hasText: 'takes no inputs' }).waitFor();
  await page.locator('#starter button[type=submit]').click();
  const runId = await until('the run page', async () => /#\/run\/(.+)$/.exec(page.url())?.[1]);
  await page.locator('#graph [data-step="approve"][data-status="waiting"]').waitFor();
  assert.equal(await page.locator('#graph [data-step="summarize"]').getAttribute('data-status'), 'pending');
  assert.equal(await page.locator('#graph path.edge').count(), 2, 'approve → summarize → done');
  await shot(page, 'run-waiting');

  await page.locator('nav a[href="#/"]').click();
  const gate = page.locator(`#inbox .gate-card[data-task="${runId}"]`);
  await gate.waitFor();
  assert.match(await gate.locator('.question').textContent(), /Approve the demo run\?/);
  await shot(page, 'inbox');

  // Nothing chosen: the form says so at the field, and sends nothing.
  await gate.locator('button[type=submit]').click();
  assert.equal(await fieldError(gate, 'approve').textContent(), 'is required');
  // A wrong type, written as JSON: the daemon's violation, at its field.
  await gate.locator('button', { hasText: 'Edit as JSON' }).click();
  await gate.locator('textarea.json-edit').fill('{"approve": "yes"}');
  await gate.locator('button[type=submit]').click();
  await until('the daemon\'s violation', async () => (await gate.locator('.json-box .field-error').textContent()).includes('answer.approve: must be of type boolean'));
  const still = await demo.rpc('GetTask', { id: runId });
  assert.equal(still.status.state, 'TASK_STATE_INPUT_REQUIRED', 'the refused answer changed nothing');

  await gate.locator('button', { hasText: 'Edit as form' }).click();
  await gate.locator('.field[data-path="approve"] label', { hasText: 'Yes' }).click();
  await gate.locator('.field[data-path="note"] input').fill('ship it');
  await gate.locator('button[type=submit]').click();
  await until('the gate to leave the inbox', async () => (await page.locator(`#inbox .gate-card[data-task="${runId}"]`).count()) === 0);

  await page.goto(`${demo.url}/console/#/run/${runId}`);
  await page.locator('.task-head .badge', { hasText: 'completed' }).waitFor();
  for (const step of ['approve', 'summarize']) assert.equal(await page.locator(`#graph [data-step="${step}"]`).getAttribute('data-status'), 'done', step);
  assert.match(await page.locator('#result').textContent(), /They approved: ship it\./);
  await page.locator('#graph [data-step="approve"]').focus();
  await page.keyboard.press('Enter');
  assert.deepEqual(JSON.parse(await page.locator('#step-output').textContent()), { approve: true, note: 'ship it' });
  await shot(page, 'run');
  await finish(page);
});

test('a run is canceled from its page', async () => {
  const message = { messageId: 'start', role: 'ROLE_USER', parts: [{ data: { agentd: { op: 'workflow.run', workflow: 'demo' } } }] };
  const { task } = await demo.rpc('SendMessage', { message, configuration: { returnImmediately: true } });
  const page = await openConsole(demo, { path: `#/run/${task.id}` });
  await page.locator('#cancel-run').click();
  await page.locator('.task-head .badge', { hasText: 'canceled' }).waitFor();
  assert.equal((await demo.rpc('GetTask', { id: task.id })).status.state, 'TASK_STATE_CANCELED');
  await finish(page);
});

test('the start form is built from the inputs schema and shows every error at its field', async () => {
  const page = await openConsole(release, { path: '#/runs/release' });
  const form = page.locator('#starter form');
  await form.waitFor();
  for (const path of ['version', 'copies', 'channel', 'urgent', 'notes']) await form.locator(`[data-path="${path}"], fieldset.array`).first().waitFor();
  assert.equal(await form.locator('.field[data-path="version"] .req').count(), 1, 'required marks');
  assert.equal(await form.locator('.field[data-path="channel"] .req').count(), 0);
  assert.match(await form.locator('.field[data-path="version"] .hint').textContent(), /like v2/);
  await shot(page, 'runs');

  await form.locator('button[type=submit]').click();
  assert.equal(await fieldError(form, 'version').textContent(), 'is required');
  assert.equal(await fieldError(form, 'copies').textContent(), 'is required');

  await form.locator('[data-path="version"] input').fill('1.0');
  await form.locator('[data-path="copies"] input').fill('7');
  await form.locator('button[type=submit]').click();
  assert.equal(await fieldError(form, 'version').textContent(), 'must match ^v[0-9]+');

  // multipleOf is the daemon's to check: its violation lands at the field.
  await form.locator('[data-path="version"] input').fill('v2');
  await form.locator('button[type=submit]').click();
  await until('the daemon\'s violation at copies', async () => /multiple of 5/.test(await fieldError(form, 'copies').textContent()));
  assert.equal(await fieldError(form, 'version').textContent(), '');

  await form.locator('[data-path="copies"] input').fill('10');
  await form.locator('button', { hasText: 'Add notes' }).click();
  await form.locator('[data-path="notes[0]"] input').fill('first cut');
  await form.locator('button[type=submit]').click();
  await until('the run page', async () => /#\/run\//.test(page.url()));
  await page.locator('.task-head .badge', { hasText: 'completed' }).waitFor();
  for (const step of ['record', 'check']) await page.locator(`#graph [data-step="${step}"][data-status="done"]`).waitFor();
  assert.equal(await page.locator('#graph path.edge').count(), 3, 'record → check, record → done, check → done');
  assert.match(await page.locator('#result').textContent(), /"version": "v2"/);
  assert.match(await page.locator('#result').textContent(), /"first cut"/);
  await finish(page);
});

test("a gate addressed to another user on alice's run is in that user's inbox and answered there", async () => {
  const startReview = async (what) => {
    const message = { messageId: `start-${what}`, role: 'ROLE_USER', parts: [{ data: { agentd: { op: 'workflow.run', workflow: 'review', inputs: { what } } } }] };
    const { task } = await review.rpc('SendMessage', { message, configuration: { returnImmediately: true } }, { token: 'alice-secret' });
    await until(`the ${what} run at its gate`, async () => (await review.rpc('GetTask', { id: task.id }, { token: 'alice-secret' })).status.state === 'TASK_STATE_INPUT_REQUIRED');
    return task.id;
  };
  const first = await startReview('v1');
  const page = await openConsole(review);
  await page.locator('#token').fill('bob-secret');
  await page.keyboard.press('Enter');
  const gate = page.locator(`#inbox .gate-card[data-task="${first}"]`);
  await gate.waitFor();
  assert.equal(await gate.getAttribute('data-addressed'), 'true');
  assert.match(await gate.locator('.question').textContent(), /Ship v1\?/);
  assert.equal(await page.locator(`#task-rows tr[data-task="${first}"]`).count(), 0, "alice's run is not in bob's task list");
  await shot(page, 'inbox-addressed');

  await gate.locator('.field[data-path="ok"] label', { hasText: 'Yes' }).click();
  await gate.locator('button[type=submit]').click();
  await until('the gate to leave the inbox', async () => (await page.locator(`#inbox .gate-card[data-task="${first}"]`).count()) === 0);
  await until("alice's run to complete", async () => (await review.rpc('GetTask', { id: first }, { token: 'alice-secret' })).status.state === 'TASK_STATE_COMPLETED');

  // A gate opened while the page is open arrives without a reload: the
  // feed does not show alice's tasks to bob, the inbox reads again within 15 s.
  const second = await startReview('v2');
  await page.locator(`#inbox .gate-card[data-task="${second}"]`).waitFor({ timeout: 20000 });
  await finish(page);
});
