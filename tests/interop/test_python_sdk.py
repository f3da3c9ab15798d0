"""agentd against the official A2A Python SDK client (a2a-sdk 1.3.x).

Every scenario runs on both HTTP bindings; the binding is chosen the way an
SDK user chooses it: `ClientConfig.supported_protocol_bindings` in the client
factory, which then picks the matching interface from the agent card.
The default daemon runs the echo agent; `agentd_tck_url` runs the `tck`
profile, whose behaviour is selected by the messageId prefix.
"""

from __future__ import annotations

import asyncio
import uuid

from collections.abc import AsyncIterator, AsyncIterable

import httpx
import pytest

from google.protobuf import json_format, struct_pb2

from a2a.client import A2ACardResolver, Client, ClientConfig, create_client
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.client.transports.rest import RestTransport
from a2a.types import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    InvalidParamsError,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskNotCancelableError,
    TaskNotFoundError,
    TaskPushNotificationConfig,
    TaskState,
    UnsupportedOperationError,
)

TIMEOUT_S = 20.0
TRANSPORTS = {'JSONRPC': JsonRpcTransport, 'HTTP+JSON': RestTransport}

S = TaskState
COMPLETED, CANCELED, INPUT_REQUIRED = S.TASK_STATE_COMPLETED, S.TASK_STATE_CANCELED, S.TASK_STATE_INPUT_REQUIRED


# --------------------------------------------------------------------------- helpers

def user_message(text: str, message_id: str | None = None, **kw) -> Message:
    return Message(role=Role.ROLE_USER, message_id=message_id or f'interop-{uuid.uuid4()}',
                   parts=[Part(text=text)], **kw)


def tck_id(scenario: str) -> str:
    """A messageId selecting a `tck` profile scenario, e.g. `tck-input-required-1a2b3c4d`."""
    return f'tck-{scenario}-{uuid.uuid4().hex[:8]}'


def text_of(parts) -> str:
    return ''.join(p.text for p in parts if p.WhichOneof('content') == 'text')


def kind(ev: StreamResponse) -> str:
    return ev.WhichOneof('payload')


async def bounded(coro):
    return await asyncio.wait_for(coro, TIMEOUT_S)


async def collect(stream: AsyncIterable[StreamResponse]) -> list[StreamResponse]:
    async def run() -> list[StreamResponse]:
        return [ev async for ev in stream]
    return await bounded(run())


async def send(client: Client, message: Message) -> StreamResponse:
    """SendMessage that yields exactly one response (a Task or a Message)."""
    events = await collect(client.send_message(SendMessageRequest(message=message)))
    assert len(events) == 1, events
    return events[0]


async def send_task(client: Client, message: Message) -> Task:
    ev = await send(client, message)
    assert kind(ev) == 'task', ev
    return ev.task


async def open_client(url: str, binding: str, *, streaming: bool, polling: bool = False) -> Client:
    client = await create_client(url, client_config=ClientConfig(
        streaming=streaming, polling=polling, supported_protocol_bindings=[binding]))
    # The factory must have picked the binding under test from our card.
    assert isinstance(client._transport, TRANSPORTS[binding])  # noqa: SLF001
    return client


# --------------------------------------------------------------------------- fixtures

@pytest.fixture(params=list(TRANSPORTS))
def binding(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
async def client(agentd_url: str, binding: str) -> AsyncIterator[Client]:
    """A non-streaming (blocking SendMessage) client of the echo agent."""
    async with await open_client(agentd_url, binding, streaming=False) as c:
        yield c


@pytest.fixture
async def streaming_client(agentd_url: str, binding: str) -> AsyncIterator[Client]:
    async with await open_client(agentd_url, binding, streaming=True) as c:
        yield c


@pytest.fixture
async def tck_client(agentd_tck_url: str, binding: str) -> AsyncIterator[Client]:
    async with await open_client(agentd_tck_url, binding, streaming=False) as c:
        yield c


@pytest.fixture
async def tck_streaming_client(agentd_tck_url: str, binding: str) -> AsyncIterator[Client]:
    async with await open_client(agentd_tck_url, binding, streaming=True) as c:
        yield c


# --------------------------------------------------------------------------- card

async def test_card_resolves(agentd_url: str) -> None:
    async with httpx.AsyncClient() as http:
        card = await bounded(A2ACardResolver(http, agentd_url).get_agent_card())
    assert card.name == 'agentd'
    assert card.version and card.description
    assert card.capabilities.streaming
    assert card.skills and all(s.id and s.name and s.tags for s in card.skills)
    assert card.default_input_modes and card.default_output_modes
    by_binding = {i.protocol_binding: i for i in card.supported_interfaces}
    assert set(TRANSPORTS) <= set(by_binding)
    for iface in by_binding.values():
        assert iface.protocol_version == '1.0'
        if iface.protocol_binding == 'GRPC':  # dialed as host:port, no scheme
            assert iface.url == agentd_url.removeprefix('http://')
        else:
            assert iface.url.startswith(agentd_url + '/')


async def test_card_security_schemes_read_by_the_sdk(agentd_identity_url: str) -> None:
    from conftest import BEARER_TOKEN, OIDC_ISSUER

    async with httpx.AsyncClient() as http:
        card = await bounded(A2ACardResolver(http, agentd_identity_url).get_agent_card())
        schemes = card.security_schemes
        assert schemes['oidc'].open_id_connect_security_scheme.open_id_connect_url == (
            OIDC_ISSUER + '/.well-known/openid-configuration')
        bearer = schemes['bearer'].http_auth_security_scheme
        assert bearer.scheme.lower() == 'bearer' and bearer.bearer_format == 'JWT'
        assert sorted(name for r in card.security_requirements for name in r.schemes) == ['bearer', 'oidc']
        # The 401 points at the RFC 9728 metadata, which names the issuer.
        r = await http.post(agentd_identity_url + '/a2a/jsonrpc', json={})
        assert r.status_code == 401
        assert 'resource_metadata="' in r.headers['www-authenticate']
        meta = (await http.get(agentd_identity_url + '/.well-known/oauth-protected-resource')).json()
        assert meta['authorization_servers'] == [OIDC_ISSUER]
    # The SDK client with the bearer token gets through.
    auth = httpx.AsyncClient(headers={'Authorization': f'Bearer {BEARER_TOKEN}'}, timeout=TIMEOUT_S)
    async with auth:
        client = await bounded(create_client(card, client_config=ClientConfig(httpx_client=auth, streaming=False)))
        listed = await bounded(client.list_tasks(ListTasksRequest()))
        assert listed.total_size == 0


# --------------------------------------------------------------------------- echo agent

async def test_send_blocking_completes_with_echo(client: Client) -> None:
    msg = user_message('hello interop')
    task = await send_task(client, msg)

    assert task.id and task.context_id
    assert task.status.state == COMPLETED
    reply = task.status.message
    assert reply.role == Role.ROLE_AGENT
    assert text_of(reply.parts) == 'echo: hello interop'
    # The reply is also the task's result artifact (streamed in chunks, merged here).
    assert len(task.artifacts) == 1
    assert text_of(task.artifacts[0].parts) == 'echo: hello interop'
    assert msg.message_id in [m.message_id for m in task.history]


async def test_polling_client_returns_immediately(agentd_url: str, binding: str) -> None:
    """`ClientConfig(polling=True)` sends returnImmediately; the task is then polled to its end."""
    async with await open_client(agentd_url, binding, streaming=False, polling=True) as c:
        task = await send_task(c, user_message('poll me'))
        assert task.id
        for _ in range(100):
            task = await bounded(c.get_task(GetTaskRequest(id=task.id)))
            if task.status.state == COMPLETED:
                break
            await asyncio.sleep(0.05)
    assert task.status.state == COMPLETED
    assert text_of(task.status.message.parts) == 'echo: poll me'


async def test_stream_events_in_order(streaming_client: Client) -> None:
    events = await collect(streaming_client.send_message(SendMessageRequest(message=user_message('stream me'))))
    kinds = [kind(e) for e in events]
    assert kinds[0] == 'task', kinds
    assert kinds[1] == 'status_update' and events[1].status_update.status.state == S.TASK_STATE_WORKING, kinds
    assert kinds[-1] == 'status_update' and events[-1].status_update.status.state == COMPLETED, kinds
    middle = kinds[2:-1]
    assert middle and set(middle) == {'artifact_update'}, kinds

    task = events[0].task
    assert task.status.state in (S.TASK_STATE_SUBMITTED, S.TASK_STATE_WORKING)
    for ev in events[1:]:
        update = getattr(ev, kind(ev))
        assert (update.task_id, update.context_id) == (task.id, task.context_id)
    chunks = [e.artifact_update for e in events[2:-1]]
    assert not chunks[0].append and chunks[-1].last_chunk
    assert len({c.artifact.artifact_id for c in chunks}) == 1
    assert ''.join(text_of(c.artifact.parts) for c in chunks) == 'echo: stream me'


@pytest.mark.parametrize('streaming', [False, True], ids=['blocking', 'streaming'])
async def test_a_streamed_reply_is_stored_as_one_part(agentd_long_reply: tuple[str, str], binding: str,
                                                      streaming: bool) -> None:
    """Streams stay incremental, but the stored artifact holds the reply as one
    part, so the common `artifacts[0].parts[0].text` reads all of it."""
    url, whole = agentd_long_reply
    async with await open_client(url, binding, streaming=streaming) as c:
        events = await collect(c.send_message(SendMessageRequest(message=user_message('a long answer'))))
        if streaming:
            chunks = [e.artifact_update for e in events if kind(e) == 'artifact_update']
            assert len(chunks) > 1, 'the reply streams in chunks'
            assert ''.join(text_of(u.artifact.parts) for u in chunks) == whole
            task_id = chunks[0].task_id
        else:
            [ev] = events
            assert kind(ev) == 'task', ev
            assert len(ev.task.artifacts[0].parts) == 1, ev.task.artifacts
            assert ev.task.artifacts[0].parts[0].text == whole
            task_id = ev.task.id
        got = await bounded(c.get_task(GetTaskRequest(id=task_id)))
    assert len(got.artifacts) == 1 and len(got.artifacts[0].parts) == 1, got.artifacts
    assert got.artifacts[0].parts[0].text == whole


async def test_get_task(client: Client) -> None:
    msg = user_message('remember me')
    sent = await send_task(client, msg)

    got = await bounded(client.get_task(GetTaskRequest(id=sent.id, history_length=10)))
    assert (got.id, got.context_id) == (sent.id, sent.context_id)
    assert got.status.state == COMPLETED
    assert text_of(got.artifacts[0].parts) == 'echo: remember me'
    assert [m.role for m in got.history][:1] == [Role.ROLE_USER]
    assert got.history[0].message_id == msg.message_id

    latest = await bounded(client.get_task(GetTaskRequest(id=sent.id, history_length=1)))
    assert len(latest.history) <= 1


async def test_list_tasks_paginates(client: Client) -> None:
    first = await send_task(client, user_message('one'))
    await asyncio.sleep(0.05)  # distinct status timestamps (ms precision)
    second = await send_task(client, user_message('two', context_id=first.context_id))
    assert second.context_id == first.context_id and second.id != first.id

    whole = await bounded(client.list_tasks(ListTasksRequest(context_id=first.context_id, page_size=10)))
    assert [t.id for t in whole.tasks] == [second.id, first.id]  # most recently updated first
    assert whole.next_page_token == ''
    assert whole.total_size == 2

    page1 = await bounded(client.list_tasks(ListTasksRequest(context_id=first.context_id, page_size=1)))
    assert [t.id for t in page1.tasks] == [second.id]
    assert page1.next_page_token, 'a further page must be announced by nextPageToken'
    page2 = await bounded(client.list_tasks(ListTasksRequest(
        context_id=first.context_id, page_size=1, page_token=page1.next_page_token)))
    assert [t.id for t in page2.tasks] == [first.id]
    assert page2.next_page_token == ''


async def test_errors_map_to_sdk_exceptions(client: Client) -> None:
    with pytest.raises(TaskNotFoundError):
        await bounded(client.get_task(GetTaskRequest(id=f'no-such-task-{uuid.uuid4()}')))

    done = await send_task(client, user_message('finish'))
    with pytest.raises(TaskNotCancelableError):
        await bounded(client.cancel_task(CancelTaskRequest(id=done.id)))
    with pytest.raises(UnsupportedOperationError):  # terminal tasks take no more messages
        await send(client, user_message('again', task_id=done.id))
    # Validation errors keep their type and our message on both bindings
    # (over HTTP+JSON the SDK maps errors by their ErrorInfo reason only).
    with pytest.raises(InvalidParamsError, match='historyLength'):
        await bounded(client.get_task(GetTaskRequest(id=done.id, history_length=-1)))


async def test_stream_errors_before_the_stream(streaming_client: Client, client: Client) -> None:
    done = await send_task(client, user_message('finish'))
    with pytest.raises(UnsupportedOperationError):
        await collect(streaming_client.subscribe(SubscribeToTaskRequest(id=done.id)))
    with pytest.raises(TaskNotFoundError):
        await collect(streaming_client.subscribe(SubscribeToTaskRequest(id=f'no-such-task-{uuid.uuid4()}')))
    with pytest.raises(TaskNotFoundError):
        await collect(streaming_client.send_message(SendMessageRequest(
            message=user_message('hello?', task_id=f'no-such-task-{uuid.uuid4()}'))))


# --------------------------------------------------------------------------- tck profile

async def test_cancel_input_required_task(tck_client: Client) -> None:
    task = await send_task(tck_client, user_message('wait', tck_id('input-required')))
    assert task.status.state == INPUT_REQUIRED
    assert text_of(task.status.message.parts) == 'Please provide more input'

    canceled = await bounded(tck_client.cancel_task(CancelTaskRequest(id=task.id)))
    assert canceled.id == task.id
    assert canceled.status.state == CANCELED
    got = await bounded(tck_client.get_task(GetTaskRequest(id=task.id)))
    assert got.status.state == CANCELED


@pytest.mark.parametrize('streaming', [False, True], ids=['blocking', 'streaming'])
async def test_direct_message_reply(agentd_tck_url: str, binding: str, streaming: bool) -> None:
    async with await open_client(agentd_tck_url, binding, streaming=streaming) as c:
        ev = await send(c, user_message('hi', tck_id('message-response')))
    assert kind(ev) == 'message', ev
    assert ev.message.role == Role.ROLE_AGENT
    assert text_of(ev.message.parts) == 'Direct message response'
    assert ev.message.message_id


async def test_multi_turn_follow_up_completes(tck_client: Client) -> None:
    task = await send_task(tck_client, user_message('start', tck_id('input-required')))
    assert task.status.state == INPUT_REQUIRED

    done = await send_task(tck_client, user_message('more', tck_id('complete-task'), task_id=task.id))
    assert (done.id, done.context_id) == (task.id, task.context_id)
    assert done.status.state == COMPLETED
    assert text_of(done.status.message.parts) == 'Hello from TCK'


async def test_subscribe_follows_task_to_completion(tck_client: Client, tck_streaming_client: Client) -> None:
    task = await send_task(tck_client, user_message('wait', tck_id('input-required')))
    assert task.status.state == INPUT_REQUIRED

    received: asyncio.Queue[StreamResponse] = asyncio.Queue()

    async def follow() -> None:
        async for ev in tck_streaming_client.subscribe(SubscribeToTaskRequest(id=task.id)):
            received.put_nowait(ev)

    subscriber = asyncio.create_task(follow())
    try:
        first = await bounded(received.get())
        assert kind(first) == 'task' and first.task.id == task.id
        assert first.task.status.state == INPUT_REQUIRED

        await send_task(tck_client, user_message('go on', tck_id('complete-task'), task_id=task.id))
        await bounded(subscriber)  # the stream ends at the terminal state
    finally:
        subscriber.cancel()
    rest = [received.get_nowait() for _ in range(received.qsize())]
    states = [e.status_update.status.state for e in rest if kind(e) == 'status_update']
    assert states and states[-1] == COMPLETED, rest


async def test_push_config_crud(tck_client: Client) -> None:
    task = await send_task(tck_client, user_message('wait', tck_id('input-required')))
    # Loopback is allowed by the fixture's --push-allow-private; nothing is delivered,
    # since the config is deleted before the task changes again.
    cfg = TaskPushNotificationConfig(task_id=task.id, url='http://127.0.0.1:9/agentd-webhook', token='t0k3n')

    created = await bounded(tck_client.create_task_push_notification_config(cfg))
    assert created.id and created.task_id == task.id and created.url == cfg.url

    got = await bounded(tck_client.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=task.id, id=created.id)))
    assert (got.id, got.url) == (created.id, cfg.url)

    listed = await bounded(tck_client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id)))
    assert [c.id for c in listed.configs] == [created.id]

    await bounded(tck_client.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=task.id, id=created.id)))
    listed = await bounded(tck_client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id)))
    assert list(listed.configs) == []
    await bounded(tck_client.cancel_task(CancelTaskRequest(id=task.id)))


# --------------------------------------------------------------------------- workflows

def data_message(data: dict, **kw) -> Message:
    value = struct_pb2.Value()
    json_format.ParseDict(data, value)
    return Message(role=Role.ROLE_USER, message_id=f'interop-{uuid.uuid4()}', parts=[Part(data=value)], **kw)


async def test_workflow_run_and_its_gate(client: Client) -> None:
    """The built-in `demo` run: started by the command op, answered at its gate."""
    task = await send_task(client, data_message({'agentd': {'op': 'workflow.run', 'workflow': 'demo'}}))
    assert task.status.state == INPUT_REQUIRED
    assert 'Approve the demo run?' in text_of(task.status.message.parts)

    with pytest.raises(InvalidParamsError, match='answer.approve'):
        await send(client, data_message({'approve': 'yes'}, task_id=task.id))
    still = await bounded(client.get_task(GetTaskRequest(id=task.id)))
    assert still.status.state == INPUT_REQUIRED

    ev = await send(client, data_message({'approve': True, 'note': 'from python'}, task_id=task.id))
    assert kind(ev) == 'task', ev
    done = ev.task
    if done.status.state != COMPLETED:
        done = await bounded(poll_until(client, task.id, COMPLETED))
    [result] = [a for a in done.artifacts if a.name == 'result']
    # The echo model repeats the agent step's prompt, which holds the typed
    # answer (a protobuf Struct: its members in any order).
    said = text_of(result.parts)
    assert '"approve":true' in said and '"note":"from python"' in said, said


async def poll_until(client: Client, task_id: str, state) -> Task:
    while True:
        t = await client.get_task(GetTaskRequest(id=task_id))
        if t.status.state == state:
            return t
        await asyncio.sleep(0.05)
