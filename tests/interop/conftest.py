"""Fixtures that run the real agentd binary for the interop tests.

The binary is `$AGENTD_BIN`, or `target/debug/agentd` under the repository
root (build it first: `cargo build -p agentd`). Each daemon listens on a free
loopback port (`--listen 127.0.0.1:0`) with its own temporary data directory;
the base URL is read from the stderr line containing `listening on `.
"""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import subprocess
import threading

from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_S = 30.0
LISTENING = re.compile(r'listening on (\S+)')


def agentd_bin() -> Path:
    path = Path(os.environ.get('AGENTD_BIN') or REPO_ROOT / 'target' / 'debug' / 'agentd')
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f'agentd binary not found at {path}: run `cargo build -p agentd` or set AGENTD_BIN',
                    pytrace=False)
    return path


class Daemon:
    """A running `agentd serve`; its stderr is drained into `log` in the background."""

    def __init__(self, data_dir: Path, *extra_args: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith('AGENTD_')}
        env.update(AGENTD_LOG='info', AGENTD_LOG_FORMAT='text', NO_COLOR='1')
        cmd = [str(agentd_bin()), 'serve', '--listen', '127.0.0.1:0', '--data-dir', str(data_dir), *extra_args]
        self.log: collections.deque[str] = collections.deque(maxlen=500)
        self._found = threading.Event()
        self.url: str | None = None
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, errors='replace')
        threading.Thread(target=self._drain, name='agentd-stderr', daemon=True).start()
        if not self._found.wait(STARTUP_TIMEOUT_S) or self.url is None:
            self.stop()
            raise RuntimeError(f'agentd did not report `listening on` within {STARTUP_TIMEOUT_S}s '
                               f'(exit code {self.proc.returncode}); stderr:\n' + ''.join(self.log))

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)
            if self.url is None and (m := LISTENING.search(line)):
                self.url = m.group(1).rstrip('/')
                self._found.set()
        self._found.set()  # EOF: the process is gone

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _serve(tmp_path_factory: pytest.TempPathFactory, name: str, *args: str) -> Iterator[str]:
    daemon = Daemon(tmp_path_factory.mktemp(name), *args)
    try:
        assert daemon.url is not None
        yield daemon.url
    finally:
        daemon.stop()


@pytest.fixture(scope='session')
def agentd_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of an agentd running the default (echo) agent."""
    yield from _serve(tmp_path_factory, 'agentd-default')


@pytest.fixture(scope='session')
def agentd_tck_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of an agentd running the `tck` profile (messageId-prefix scenarios).

    Webhooks may point at loopback here, so push tests need no DNS or outside host.
    """
    yield from _serve(tmp_path_factory, 'agentd-tck', '--agent', 'tck', '--push-allow-private')


@pytest.fixture
def agentd_long_reply(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(base URL, reply) of an agentd whose `scripted` model streams one long
    reply in 300 deltas; a fresh daemon per test, since a script is used up."""
    deltas = [f'token{i} ' for i in range(300)]
    script = tmp_path / 'script.json'
    script.write_text(json.dumps([{'deltas': deltas, 'delay_ms': 1}]))
    config = tmp_path / 'agentd.yaml'
    config.write_text(f'model:\n  kind: scripted\n  script: {script}\nlimits:\n  stream_flush_ms: 1\n')
    daemon = Daemon(tmp_path / 'data', '--config', str(config))
    try:
        assert daemon.url is not None
        yield daemon.url, ''.join(deltas)
    finally:
        daemon.stop()


OIDC_ISSUER = 'https://idp.example.com/realms/agents'
BEARER_TOKEN = 'interop-bearer-token-5e1d'


@pytest.fixture(scope='session')
def agentd_identity_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of an agentd taking static bearer tokens and JWTs of an
    OpenID Connect issuer (not contacted: nothing here presents a JWT)."""
    import hashlib

    tmp = tmp_path_factory.mktemp('agentd-identity')
    digest = hashlib.sha256(BEARER_TOKEN.encode()).hexdigest()
    config = tmp / 'agentd.yaml'
    config.write_text(
        'auth:\n'
        '  resource: https://agent.example.com\n'
        f'  tokens:\n    - {{id: "operator:interop", role: operator, sha256: "{digest}"}}\n'
        f'  issuers:\n    - issuer: "{OIDC_ISSUER}"\n')
    yield from _serve(tmp_path_factory, 'agentd-identity-data', '--config', str(config))
