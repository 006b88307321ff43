import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { codeBlocks } from '../docs/blocks.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { unusedPort } from '../helpers/ports.js';
import { tempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';
import { buildWheel } from '../helpers/wheels.js';
import { dockerEngine, type Engine, sh, shBoth, stopEngine } from './docker.js';

/**
 * The container image and compose.yaml, with a real Docker engine: the base images the Dockerfile and
 * compose.yaml name are built from Debian's packages (test/deploy/bases/build.sh; kept once built), then
 * the image, then each profile is started and driven over HTTP. The containers are on the project's own
 * network; the mock upstream runs in this process, reached through the engine's bridge address. On an
 * engine without a bridge (or with EVALGATE_TEST_COMPOSE_HOST_NETWORK=1), compose.host-network.yaml puts
 * them on the host's network instead. The backups are taken and restored by docs/deploy.md's own blocks.
 * It has databases of its own (SQLite in a volume, PostgreSQL in a container), so it runs in the
 * postgres project only. Code evaluators run in the `sandbox` service (the Dockerfile's stage `sandbox`);
 * the wheels their requirements install come from an index this process serves where the containers
 * reach it (the bridge's address, or loopback on the host's network). EVALGATE_TEST_IMAGE: the image's
 * tag (default evalgate:deploy-test); the sandbox runner's is the same name with `-sandbox` (default
 * evalgate-sandbox:deploy-test), or EVALGATE_TEST_SANDBOX_IMAGE.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const IMAGE = process.env.EVALGATE_TEST_IMAGE ?? 'evalgate:deploy-test';
const SANDBOX_IMAGE =
  process.env.EVALGATE_TEST_SANDBOX_IMAGE ??
  IMAGE.replace(/^(.*?)(:[^:/]*)?$/, (_, name, tag) => `${name}-sandbox${tag ?? ''}`);
const ITEMS = 40;
const IMAGE_LIMIT = 250e6;
const run = testDbKind() === 'postgres';
const engine: Engine = run ? await dockerEngine() : { ok: false, reason: 'runs in the postgres project' };
const hostNetwork = engine.ok && (!engine.bridge || process.env.EVALGATE_TEST_COMPOSE_HOST_NETWORK === '1');
const FILES = hostNetwork ? ['compose.yaml', 'compose.host-network.yaml'] : ['compose.yaml'];
const temp = tempDirs('evalgate-deploy-');

/**
 * The address the containers reach this process at: the engine's bridge on the host (docker0), or
 * loopback on the host's network.
 */
let bridgeAddress: string | undefined;
function upstreamHost(): string {
  if (hostNetwork) return '127.0.0.1';
  if (bridgeAddress) return bridgeAddress;
  // `ip`, not os.networkInterfaces(): that leaves out a bridge without containers (no carrier).
  const address = /inet (\d+\.\d+\.\d+\.\d+)/.exec(
    execFileSync('ip', ['-4', '-o', 'addr', 'show', 'dev', 'docker0'], { encoding: 'utf8' }),
  )?.[1];
  if (!address) throw new Error('the engine has a bridge, but the host has no docker0 address');
  bridgeAddress = address;
  return address;
}

/** Forwards connections on `host` to the mock upstream on loopback; resolves to the port. */
async function forwarder(host: string, to: number): Promise<{ port: number; close(): void }> {
  const server = net.createServer((socket) => {
    const upstream = net.connect(to, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    const end = () => {
      socket.destroy();
      upstream.destroy();
    };
    socket.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { port: (server.address() as net.AddressInfo).port, close: () => server.close() };
}

/** A judge whose answers can be held back (the requests wait) and then released. */
function gatedJudge() {
  let release: (() => void) | null = null;
  let held: Promise<void> = Promise.resolve();
  return {
    hold() {
      held = new Promise<void>((r) => {
        release = r;
      });
    },
    open() {
      release?.();
    },
    async reply() {
      await held;
      return { json: { score: 0.9, reasoning: 'fine' } };
    },
  };
}

interface Profile {
  project: string;
  env: Record<string, string>;
  profile: 'embedded' | 'scale-out';
}

const flattened = new Map<string, string>();
/**
 * The files a profile's commands name. On the host's network with docker-compose 1.29, which refuses
 * published ports there (Compose v2 discards them), the merge of compose.yaml and its override without
 * the ports, written once per project with the project's variables.
 */
function composeFiles(p: Profile): string[] {
  const files = FILES.map((f) => path.join(ROOT, f));
  if (!hostNetwork || !engine.ok || engine.compose[0] === 'docker') return files;
  let file = flattened.get(`${p.project}/${p.profile}`);
  if (!file) {
    const args = [...files.flatMap((f) => ['-f', f]), '--profile', p.profile, 'config'];
    const merged = parseYaml(
      execFileSync('docker-compose', args, {
        cwd: ROOT,
        encoding: 'utf8',
        env: {
          ...process.env,
          ...p.env,
          EVALGATE_IMAGE: IMAGE,
          EVALGATE_SANDBOX_IMAGE: SANDBOX_IMAGE,
          EVALGATE_ALLOWED_UPSTREAM_HOSTS: '127.0.0.1',
        },
      }),
    ) as { services: Record<string, { ports?: unknown }> };
    for (const service of Object.values(merged.services)) delete service.ports;
    file = path.join(temp.make(), 'compose.yaml');
    // YAML 1.1, as docker-compose 1.29 reads it: `'no'` and `'yes'` stay strings.
    fs.writeFileSync(file, stringifyYaml(merged, { version: '1.1' }));
    flattened.set(`${p.project}/${p.profile}`, file);
  }
  return [file];
}

/** What every compose command of the test is given (the files, the image, the upstream's host). */
function composeEnv(p: Profile): Record<string, string> {
  return {
    EVALGATE_IMAGE: IMAGE,
    EVALGATE_SANDBOX_IMAGE: SANDBOX_IMAGE,
    EVALGATE_ALLOWED_UPSTREAM_HOSTS: upstreamHost(),
    COMPOSE_PROJECT_NAME: p.project,
    COMPOSE_FILE: composeFiles(p).join(':'),
    ...p.env,
  };
}

async function compose(p: Profile, ...args: string[]): Promise<string> {
  return (await composeBoth(p, ...args)).stdout;
}

async function composeBoth(p: Profile, ...args: string[]): Promise<{ stdout: string; stderr: string }> {
  if (!engine.ok) throw new Error('no engine');
  const [cmd, ...pre] = engine.compose;
  const files = composeFiles(p).flatMap((f) => ['-f', f]);
  return shBoth(cmd!, [...pre, ...files, '-p', p.project, '--profile', p.profile, ...args], {
    cwd: ROOT,
    env: composeEnv(p),
  });
}

async function call(
  url: string,
  key: string,
  method: string,
  route: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${url}${route}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

async function healthy(url: string, ms: number): Promise<number> {
  const start = Date.now();
  await waitFor(
    async () => {
      const res = await fetch(`${url}/healthz`).catch(() => null);
      return res?.status === 200;
    },
    ms,
    `${url}/healthz answering 200`,
  );
  return Date.now() - start;
}

/**
 * Runs the docs/deploy.md block whose skip marker says `runs it: <name>`, as a user's script would
 * (bash, errors stop it), in `cwd`, with `docker compose` as the engine's Compose is spelled here.
 */
async function docsBlock(p: Profile, name: string, cwd: string, env: Record<string, string> = {}) {
  if (!engine.ok) throw new Error('no engine');
  const blocks = codeBlocks('docs/deploy.md', ROOT).filter((b) => b.skip?.endsWith(`runs it: ${name}`));
  expect(blocks, `docs/deploy.md's block "${name}"`).toHaveLength(1);
  const script = blocks[0]!.code.replaceAll('docker compose', engine.compose.join(' '));
  return shBoth('bash', ['-euo', 'pipefail', '-c', script], {
    cwd,
    env: { ...composeEnv(p), ...env },
    timeoutMs: 300_000,
  });
}

async function containerOf(p: Profile, service: string): Promise<string> {
  const id = (await compose(p, 'ps', '-q', service)).trim();
  expect(id, `the container of ${service}`).not.toBe('');
  return id;
}

async function inspect<T>(id: string, format: string): Promise<T> {
  return JSON.parse(await sh('docker', ['inspect', '-f', `{{json ${format}}}`, id])) as T;
}

/**
 * The project's network, not the host's, and no port published but the API's, on 127.0.0.1 only:
 * PostgreSQL and Redis take no host port (before, they took the host's 5432 and 6379).
 */
async function checkNetwork(p: Profile, apis: Record<string, number>, others: string[]) {
  if (hostNetwork) return;
  for (const [service, port] of Object.entries(apis)) {
    const id = await containerOf(p, service);
    expect(await inspect<string>(id, '.HostConfig.NetworkMode')).toBe(`${p.project}_default`);
    const published = await inspect<Record<string, { HostIp: string; HostPort: string }[] | null>>(
      id,
      '.HostConfig.PortBindings',
    );
    expect(published).toEqual({ [`${port}/tcp`]: [{ HostIp: '127.0.0.1', HostPort: String(port) }] });
  }
  for (const service of others) {
    const id = await containerOf(p, service);
    expect(await inspect<string>(id, '.HostConfig.NetworkMode')).toBe(`${p.project}_default`);
    const bindings = await inspect<Record<string, unknown> | null>(id, '.HostConfig.PortBindings');
    expect(bindings ?? {}, `${service} publishes no port`).toEqual({});
  }
}

/** Every volume mounted is one of the project's named volumes (the image declares none: no anonymous one). */
async function checkVolumes(p: Profile, services: string[], named: string[]) {
  for (const service of services) {
    const mounts = await inspect<{ Type: string; Name?: string; Destination: string }[]>(
      await containerOf(p, service),
      '.Mounts',
    );
    for (const m of mounts.filter((m) => m.Type === 'volume')) {
      expect(
        named.map((n) => `${p.project}_${n}`),
        `${service}'s volume at ${m.Destination}`,
      ).toContain(m.Name);
    }
  }
}

/**
 * `docker logs` of the Evalgate containers: JSON lines only (EVALGATE_LOG_FORMAT=json in the image and
 * compose.yaml), and neither the first key nor a sign-in token in them.
 */
async function checkLogs(p: Profile, services: string[], key: string) {
  for (const service of services) {
    const id = (await compose(p, 'ps', '-a', '-q', service)).trim();
    const { stdout, stderr } = await shBoth('docker', ['logs', id]);
    const all = `${stdout}${stderr}`;
    expect(all, `${service}'s logs`).not.toContain(key);
    expect(all, `${service}'s logs`).not.toMatch(/eg_[0-9A-Za-z]{20}|token=/);
    for (const line of stdout.split('\n').filter((l) => l.trim() !== '')) {
      expect(() => JSON.parse(line), `${service}: ${line}`).not.toThrow();
    }
  }
}

/**
 * The first key, from the file the container that created it wrote in its data directory (mode 600,
 * the command docs/deploy.md gives).
 */
async function firstKey(p: Profile, services: string[]): Promise<string> {
  let key = '';
  await waitFor(
    async () => {
      for (const service of services) {
        const out = await compose(
          p,
          'exec',
          '-T',
          service,
          'sh',
          '-c',
          'stat -c %a /data/first-api-key && cat /data/first-api-key',
        ).catch(() => '');
        const [mode, value] = out.trim().split('\n');
        if (value?.startsWith('eg_')) {
          expect(mode).toBe('600');
          key = value;
        }
      }
      return key !== '';
    },
    30_000,
    'the first key in /data/first-api-key',
  );
  return key;
}

/** A model on the mock, a container, a dataset of ITEMS rows and a judge: what a run needs. */
async function setUp(url: string, key: string, upstream: string) {
  const steps = [
    await call(url, key, 'POST', '/v1/models', {
      label: 'mock',
      provider: 'openai-compatible',
      base_url: upstream,
      upstream_model: 'mock-model',
      input_price_per_mtok: 1,
      output_price_per_mtok: 2,
    }),
    await call(url, key, 'POST', '/v1/containers', { label: 'app' }),
    await call(url, key, 'POST', '/v1/datasets', {
      label: 'qa',
      items: Array.from({ length: ITEMS }, (_, i) => ({
        input: `q${i}`,
        output: `a${i}`,
        expected: `a${i}`,
      })),
    }),
    await call(url, key, 'POST', '/v1/evaluators', {
      type: 'judge',
      name: 'j',
      model: 'mock',
      prompt: 'Rate {{output}}',
    }),
  ];
  for (const s of steps) expect(s.status, JSON.stringify(s.body)).toBe(201);
}

const RUN = {
  container: 'app',
  evaluators: ['j'],
  sample: { type: 'dataset', dataset: 'qa', range: `0:${ITEMS}` },
  ground_truth: { type: 'dataset', dataset: 'qa', range: `0:${ITEMS}` },
};

async function finished(url: string, key: string, id: string, ms: number) {
  await waitFor(
    async () =>
      ['completed', 'error', 'cancelled'].includes(
        (await call(url, key, 'GET', `/v1/evaluation/runs/${id}`)).body.status,
      ),
    ms,
    `run ${id} to finish`,
  );
  return (await call(url, key, 'GET', `/v1/evaluation/runs/${id}`)).body;
}

/** Positions the run's one evaluator scored. */
function scored(run: { results: { per_model: { per_eval: Record<string, { num_scored: number }> }[] } }) {
  return Object.values(run.results.per_model[0]!.per_eval)[0]!.num_scored;
}

/** A call through the gateway, recorded as a task log of the container, then listed. */
async function recordedCall(gateway: string, reader: string, key: string) {
  const answer = await call(
    gateway,
    key,
    'POST',
    '/v1/chat/completions',
    { model: 'mock', messages: [{ role: 'user', content: 'How do I reset my password?' }] },
    { 'x-evalgate-container': 'app' },
  );
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.body.choices[0].message.content).toContain('fine');
  const logId = answer.headers.get('x-evalgate-log-id');
  expect(logId).toBeTruthy();
  await waitFor(
    async () => {
      const logs = await call(reader, key, 'GET', '/v1/containers/app/logs');
      return logs.status === 200 && logs.body.data.some((l: { id: string }) => l.id === logId);
    },
    20_000,
    'the recorded call among the task logs',
  );
}

/** A run's page, a container's task logs and a dataset's items, as the API answers them. */
async function snapshot(url: string, key: string, runId: string) {
  const parts = [
    await call(url, key, 'GET', `/v1/evaluation/runs/${runId}`),
    await call(url, key, 'GET', '/v1/containers/app/logs'),
    await call(url, key, 'GET', '/v1/datasets/qa/items?limit=100'),
  ];
  for (const part of parts) expect(part.status, JSON.stringify(part.body)).toBe(200);
  return parts.map((part) => part.body);
}

/** A custom-format dump's data as plain SQL (pg_restore in the project's PostgreSQL container). */
async function dumpAsSql(p: Profile, file: string): Promise<string> {
  if (!engine.ok) throw new Error('no engine');
  const command = `${engine.compose.join(' ')} exec -T postgres pg_restore --data-only -f - <"$DUMP"`;
  return (await shBoth('bash', ['-c', command], { cwd: ROOT, env: { ...composeEnv(p), DUMP: file } })).stdout;
}

/**
 * A plain SQL dump's data: each table's rows (in order of the table's name, each table's rows sorted)
 * and the sequences' values. pg_dump and pg_restore order the tables differently, and each prints its
 * own random \restrict key and its versions in comments, which are no data.
 */
function tableData(sql: string): Record<string, string[]> {
  const tables: Record<string, string[]> = {};
  let rows: string[] | null = null;
  for (const line of sql.split('\n')) {
    if (rows) {
      if (line === '\\.') rows = null;
      else rows.push(line);
    } else if (line.startsWith('COPY ')) {
      rows = [];
      tables[line] = rows;
    } else if (line.includes('pg_catalog.setval(')) {
      tables[line] = [];
    }
  }
  return Object.fromEntries(
    Object.keys(tables)
      .sort()
      .map((table) => [table, [...(tables[table] ?? [])].sort()]),
  );
}

interface WheelIndex {
  /** Where the sandbox runner's pip finds it: loopback (pip trusts plain HTTP there only). */
  url: string;
  host: string;
  port: number;
  close(): Promise<void>;
}

/**
 * A package index of one wheel for the sandbox runner's pip: a find-links page and the file, on `host`
 * (where the containers reach this process: upstreamHost()). pip ignores a plain-HTTP find-links page
 * on any host but loopback (without --trusted-host, which the runner does not pass), so the runner is
 * given `http://127.0.0.1:<port>/`: this process's own loopback on the host's network, else a relay in
 * the sandbox container (relayIndex).
 */
async function wheelIndex(dir: string, host: string): Promise<WheelIndex> {
  buildWheel(dir, 'evalgate_probe', '1.0');
  const files = fs.readdirSync(dir);
  const server = http.createServer((req, res) => {
    const name = decodeURIComponent((req.url ?? '/').slice(1));
    if (files.includes(name)) {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(fs.readFileSync(path.join(dir, name)));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(files.map((f) => `<a href="/${f}">${f}</a>`).join('\n'));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/`,
    host,
    port,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/**
 * On the project's network: a relay in the sandbox container (a process of the container itself, not
 * of the sandbox, whose evaluators have no network) from its loopback to the index on the bridge.
 */
async function relayIndex(p: Profile, index: WheelIndex) {
  if (hostNetwork) return;
  const sandbox = await containerOf(p, 'sandbox');
  const relay = `const net = require('node:net');
net.createServer((s) => {
  const u = net.connect(Number(process.env.PORT), process.env.TO);
  s.pipe(u).pipe(s);
  s.on('error', () => u.destroy());
  u.on('error', () => s.destroy());
}).listen(Number(process.env.PORT), '127.0.0.1');`;
  const env = ['-e', `PORT=${index.port}`, '-e', `TO=${index.host}`];
  await sh('docker', ['exec', '-d', ...env, sandbox, 'node', '-e', relay]);
  await waitFor(
    () =>
      sh('docker', [
        'exec',
        sandbox,
        'node',
        '-e',
        `fetch('${index.url}').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))`,
      ]).then(
        () => true,
        () => false,
      ),
    30_000,
    'the wheel index through the relay in the sandbox container',
  );
}

/**
 * The hostile-code checks of test/scoring/code-escapes.test.ts as one code evaluator: each sample's
 * output names an attack; an attack that works scores with reason ESCAPED, a contained one errors.
 */
const ATTACKS = `import os, socket, signal

def attack(name, api_port):
    if name == "network-api":
        return socket.create_connection(("127.0.0.1", api_port), timeout=1).recv(10)
    if name == "network-outside":
        return socket.create_connection(("1.1.1.1", 80), timeout=1) and "connected"
    if name == "files-token":
        return open("/sandbox-token/token").read()
    if name == "files-shadow":
        return open("/etc/shadow").read()
    if name == "files-data":
        return os.listdir("/data")
    if name == "files-write":
        wrote = []
        for target in ["/evil", "/usr/evil", "/opt/evalgate/runner.py", "/app/evil"]:
            try:
                open(target, "w").write("x")
                wrote.append(target)
            except OSError:
                pass
        if wrote:
            return wrote
        raise PermissionError("nothing outside /tmp is writable")
    if name == "environment":
        found = [k for k in os.environ if k.startswith("EVALGATE")]
        if found:
            return found
        raise LookupError("no EVALGATE variable")
    if name == "kill":
        for target in (os.getppid(), 1, -1):
            try:
                os.kill(target, signal.SIGKILL)
            except OSError:
                pass
        raise ProcessLookupError("still here")
    if name == "fork-bomb":
        while True:
            os.fork()
    if name == "memory":
        return len(bytearray(4 * 1024 ** 3))
    if name == "time":
        while True:
            pass
    return None

def evaluate(sample, ground_truth, baseline):
    name, port = sample["output"], sample["metadata"]["api_port"]
    if name == "fine":
        return 1
    return {"score": 0, "reason": "ESCAPED: " + repr(attack(name, port))[:200]}
`;

/** What each attack must end as: the error code of its sample, and what the message says. */
const CONTAINED: Record<string, [string[], RegExp]> = {
  'network-api': [['evaluator_exception'], /ConnectionRefusedError|Network is unreachable|OSError/],
  'network-outside': [['evaluator_exception'], /Network is unreachable|OSError/],
  'files-token': [['evaluator_exception'], /FileNotFoundError/],
  'files-shadow': [['evaluator_exception'], /FileNotFoundError|PermissionError/],
  'files-data': [['evaluator_exception'], /FileNotFoundError/],
  'files-write': [['evaluator_exception'], /nothing outside \/tmp is writable/],
  environment: [['evaluator_exception'], /LookupError: no EVALGATE variable/],
  // Either refused (the evaluator raises) or only the sandbox goes down.
  kill: [['evaluator_exception', 'worker_crashed'], /still here|the worker died/],
  'fork-bomb': [['evaluator_exception'], /BlockingIOError/],
  memory: [['evaluator_exception'], /MemoryError/],
  time: [['timeout'], /did not return within 10000 ms/],
};

/**
 * What the sandbox service must show in a stack that is up, after setUp (`clients`: the services that
 * run code evaluators, the first of them serving `url`): only it has Python, bubblewrap and the relaxed
 * profile, and no database credentials or secrets; a code evaluator with requirements from the test's
 * index runs over a run, a python grader grades, and every attack of ATTACKS is contained.
 */
async function sandboxChecks(
  p: Profile,
  url: string,
  key: string,
  apiPort: number,
  clients: string[],
  index: WheelIndex,
) {
  // Only the sandbox container holds Python and bubblewrap, and only it has the relaxed profile.
  // The security options, added capabilities (each in order of name: the merged configuration that
  // docker-compose 1.29 is given on the host's network lists them sorted) and user of a container.
  const security = async (id: string) => {
    const sorted = (list: string[] | null) => (list ? [...list].sort() : null);
    return {
      securityOpt: sorted(await inspect<string[] | null>(id, '.HostConfig.SecurityOpt')),
      capAdd: sorted(await inspect<string[] | null>(id, '.HostConfig.CapAdd')),
      user: await inspect<string>(id, '.Config.User'),
    };
  };
  const [api, sandbox] = [await containerOf(p, clients[0]!), await containerOf(p, 'sandbox')];
  await expect(
    sh('docker', ['exec', api, 'sh', '-c', 'command -v python3 || command -v bwrap']),
  ).rejects.toThrow();
  for (const client of clients) {
    expect(await security(await containerOf(p, client)), client).toEqual({
      securityOpt: null,
      capAdd: null,
      user: 'node',
    });
  }
  expect(await security(sandbox)).toEqual({
    securityOpt: ['apparmor=unconfined', 'seccomp=unconfined'],
    capAdd: ['NET_ADMIN', 'SYS_ADMIN'],
    user: 'root',
  });
  expect(
    (await compose(p, 'exec', '-T', 'sandbox', 'env')).match(
      /^EVALGATE_(DATABASE|KEY_PEPPER|SECRET_KEY|REDIS)/m,
    ),
  ).toBeNull();
  // Only its own volumes: no bind mount (the secrets folder).
  const mounts = await inspect<{ Type: string; Source: string }[]>(sandbox, '.Mounts');
  expect(mounts.filter((m) => m.Type !== 'volume')).toEqual([]);
  // The token is in the shared volume, never in the runner's logs.
  const token = (await compose(p, 'exec', '-T', 'sandbox', 'cat', '/sandbox-token/token')).trim();
  expect(token.length).toBeGreaterThan(20);
  const logs = await shBoth('docker', ['logs', sandbox]);
  expect(`${logs.stdout}${logs.stderr}`).not.toContain(token);

  // The stack's container `app` (setUp) gets a dataset and a code evaluator with a requirement.
  await relayIndex(p, index);
  const steps = [
    await call(url, key, 'POST', '/v1/datasets', {
      label: 'capitals',
      items: [
        { input: 'France', output: 'Paris', expected: 'paris' },
        { input: 'Italy', output: 'Milan', expected: 'rome' },
      ],
    }),
    await call(url, key, 'POST', '/v1/evaluators', {
      type: 'code',
      name: 'probe',
      source:
        'from evalgate_probe import similarity\n\ndef evaluate(sample, ground_truth, baseline):\n    return similarity(sample["output"], ground_truth["expected"])\n',
      requirements: ['evalgate_probe==1.0'],
    }),
  ];
  for (const step of steps) expect(step.status, JSON.stringify(step.body)).toBe(201);
  const src = { type: 'dataset', dataset: 'capitals' };
  const created = await call(url, key, 'POST', '/v1/evaluation/runs', {
    container: 'app',
    evaluators: ['probe'],
    sample: src,
    ground_truth: src,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const done = await finished(url, key, created.body.id, 120_000);
  expect(done.status, JSON.stringify(done)).toBe('completed');
  expect(Object.values(done.results.per_model[0].per_eval)[0]).toMatchObject({
    num_scored: 2,
    num_errors: 0,
    avg_score: 0.5,
  });

  const graded = await call(url, key, 'POST', '/v1/fine_tuning/alpha/graders/run', {
    grader: {
      type: 'python',
      name: 'py',
      source:
        'def grade(sample, item):\n    return 1.0 if sample["output_text"] == item["answer"] else 0.0\n',
    },
    model_sample: '42',
    item: { answer: '42' },
  });
  expect(graded.status, JSON.stringify(graded.body)).toBe(200);
  expect(graded.body.reward).toBe(1);

  // The attacks, each between two harmless samples.
  const names = Object.keys(CONTAINED);
  const items = ['fine', ...names.flatMap((n) => [n, 'fine'])].map((output) => ({
    input: output,
    output,
    metadata: { api_port: apiPort },
  }));
  expect((await call(url, key, 'POST', '/v1/datasets', { label: 'attacks', items })).status).toBe(201);
  expect(
    (await call(url, key, 'POST', '/v1/evaluators', { type: 'code', name: 'attacks', source: ATTACKS }))
      .status,
  ).toBe(201);
  const attacked = await call(url, key, 'POST', '/v1/evaluation/runs', {
    container: 'app',
    evaluators: ['attacks'],
    sample: { type: 'dataset', dataset: 'attacks' },
  });
  expect(attacked.status, JSON.stringify(attacked.body)).toBe(201);
  expect((await finished(url, key, attacked.body.id, 300_000)).status).toBe('completed');
  const rows = (await call(url, key, 'GET', `/v1/evaluation/runs/${attacked.body.id}/samples?limit=100`)).body
    .data as Array<{
    position: number;
    score: number | null;
    reasoning: string | null;
    error: { code: string; message: string } | null;
  }>;
  expect(rows).toHaveLength(items.length);
  for (const row of rows) {
    const name = items[row.position]!.output;
    expect(row.reasoning ?? '', name).not.toContain('ESCAPED');
    if (name === 'fine') {
      expect(row, name).toMatchObject({ score: 1, error: null });
      continue;
    }
    const [codes, message] = CONTAINED[name]!;
    expect(codes, `${name}: ${JSON.stringify(row)}`).toContain(row.error?.code);
    expect(row.error?.message, name).toMatch(message);
  }
}

describe.skipIf(!engine.ok)(
  `the container image and compose.yaml${engine.ok ? '' : ` (skipped: ${engine.reason})`}`,
  () => {
    const gate = gatedJudge();
    let mock: MockUpstream;
    let relay: { port: number; close(): void };
    let upstream = '';
    let index: WheelIndex;
    const profiles: Profile[] = [];

    /** What every stack is given: the wheel index, and on the host's network the runner's own port. */
    async function sandboxEnv(): Promise<Record<string, string>> {
      const env: Record<string, string> = { EVALGATE_PIP_FIND_LINKS: index.url };
      if (hostNetwork) env.EVALGATE_SANDBOX_PORT = String(await unusedPort());
      return env;
    }

    beforeAll(async () => {
      mock = await startMockUpstream({ reply: () => gate.reply(), record: false });
      relay = await forwarder(upstreamHost(), Number(new URL(mock.url).port));
      upstream = `http://${upstreamHost()}:${relay.port}/v1`;
      index = await wheelIndex(temp.make(), upstreamHost());
      // CI builds the images in the background while the suite runs (.ci/run): wait for that build rather
      // than run the same steps a second time at once.
      const pending = process.env.EVALGATE_TEST_IMAGES_PENDING;
      const waited = Date.now();
      while (pending && fs.existsSync(pending) && Date.now() - waited < 1_200_000) {
        await new Promise((r) => setTimeout(r, 2_000));
      }
      const bases = Date.now();
      await sh('bash', [path.join(ROOT, 'test/deploy/bases/build.sh')], { timeoutMs: 1_200_000 });
      const build = Date.now();
      // The build reaches Debian's mirror and the npm registry through the host (no NAT on an engine
      // without iptables rules).
      await sh('docker', ['build', '--network', 'host', '-q', '-t', IMAGE, '.'], {
        cwd: ROOT,
        timeoutMs: 1_200_000,
      });
      // The sandbox runner's image: the Dockerfile's stage `sandbox` (the same plus Python and bubblewrap).
      await sh(
        'docker',
        ['build', '--network', 'host', '-q', '--target', 'sandbox', '-t', SANDBOX_IMAGE, '.'],
        {
          cwd: ROOT,
          timeoutMs: 1_200_000,
        },
      );
      const sizeOf = async (image: string) =>
        Number((await sh('docker', ['image', 'inspect', '-f', '{{.Size}}', image])).trim()) / 1e6;
      console.log(
        `deploy: waited ${((bases - waited) / 1000).toFixed(0)} s for CI's build, base images ${((build - bases) / 1000).toFixed(0)} s, image builds ${((Date.now() - build) / 1000).toFixed(0)} s, ` +
          `image size ${(await sizeOf(IMAGE)).toFixed(1)} MB (limit ${IMAGE_LIMIT / 1e6} MB), sandbox image ${(await sizeOf(SANDBOX_IMAGE)).toFixed(1)} MB, ` +
          `${hostNetwork ? "the host's network (compose.host-network.yaml)" : "the project's network"}`,
      );
    }, 2_400_000);

    afterAll(async () => {
      gate.open();
      for (const p of profiles) await compose(p, 'down', '-v', '--remove-orphans').catch(() => {});
      relay?.close();
      await index?.close();
      await mock?.close();
      temp.removeAll();
      await stopEngine(engine);
    }, 300_000);

    it('the image: production files only (within the size limit), no VOLUME; one build per profile and the sandbox stage', async () => {
      const size = Number((await sh('docker', ['image', 'inspect', '-f', '{{.Size}}', IMAGE])).trim());
      expect(size).toBeLessThanOrEqual(IMAGE_LIMIT);
      // A VOLUME in the image leaves an anonymous volume per container that has none mounted there.
      expect(await inspect<unknown>(IMAGE, '.Config.Volumes')).toBeNull();
      expect(await inspect<string[] | null>(IMAGE, '.Config.Env')).toContain('EVALGATE_LOG_FORMAT=json');
      // No development dependency in node_modules (the bundle has the rest).
      const modules = await sh('docker', [
        'run',
        '--rm',
        '--network',
        'none',
        '--entrypoint',
        'ls',
        IMAGE,
        '/app/node_modules',
      ]);
      for (const dev of ['typescript', 'vitest', 'esbuild', 'vite', 'fastify', 'kysely']) {
        expect(modules.split('\n')).not.toContain(dev);
      }
      // Python and bubblewrap are in the sandbox stage only.
      const shell = (image: string, script: string) =>
        sh('docker', ['run', '--rm', '--network', 'none', '--entrypoint', 'sh', image, '-c', script]);
      await expect(shell(IMAGE, 'command -v python3 || command -v bwrap')).rejects.toThrow();
      expect(
        (await shell(SANDBOX_IMAGE, 'command -v python3 && command -v bwrap')).trim().split('\n'),
      ).toEqual(['/usr/bin/python3', '/usr/bin/bwrap']);
      // `build` builds the one image once: a single Evalgate service of each profile has a build section,
      // the others name its image; the sandbox service builds the same Dockerfile's stage `sandbox`.
      for (const profile of ['embedded', 'scale-out'] as const) {
        const p: Profile = { project: 'egcompose-config', profile, env: {} };
        const config = parseYaml(await compose(p, 'config')) as {
          services: Record<
            string,
            { build?: { context: string; target?: string }; image: string; profiles?: string[] }
          >;
        };
        const services = Object.entries(config.services).filter(([, svc]) => svc.profiles?.includes(profile));
        const evalgate = services.filter(([name]) => !['postgres', 'redis', 'sandbox'].includes(name));
        expect(evalgate.filter(([, svc]) => svc.build).length, profile).toBe(1);
        for (const [name, svc] of evalgate) expect(svc.image, name).toBe(IMAGE);
        const sandbox = config.services.sandbox;
        expect(sandbox?.profiles, profile).toContain(profile);
        expect(sandbox?.image).toBe(SANDBOX_IMAGE);
        expect(sandbox?.build?.target).toBe('sandbox');
        expect(sandbox?.build?.context).toBe(evalgate.find(([, svc]) => svc.build)?.[1].build?.context);
      }
    });

    it('embedded: one container on SQLite — a key, a recorded call, a run; backed up and restored into a fresh stack', async () => {
      const port = await unusedPort();
      const p: Profile = {
        project: `egcompose${randomBytes(3).toString('hex')}`,
        profile: 'embedded',
        env: { EVALGATE_PORT: String(port), ...(await sandboxEnv()) },
      };
      profiles.push(p);
      const url = `http://127.0.0.1:${port}`;
      const up = Date.now();
      const started = await composeBoth(p, 'up', '-d', '--no-build');
      // The scale-out profile's secrets are not looked for (there are none here).
      expect(started.stderr).not.toMatch(/secret/i);
      const ms = await healthy(url, 120_000);
      console.log(
        `deploy: embedded container answering /healthz ${((Date.now() - up) / 1000).toFixed(1)} s after up -d (${ms} ms of polling)`,
      );
      await checkNetwork(p, { evalgate: port }, ['sandbox']);
      await checkVolumes(p, ['evalgate', 'sandbox'], ['evalgate-data', 'sandbox-data', 'sandbox-token']);
      if (engine.ok && engine.compose[0] === 'docker') {
        // Compose v2 creates only the volumes the profile's services use (1.29 creates every one declared).
        const volumes = await sh('docker', [
          'volume',
          'ls',
          '-q',
          '--filter',
          `label=com.docker.compose.project=${p.project}`,
        ]);
        expect(volumes.trim().split('\n').sort()).toEqual(
          ['evalgate-data', 'sandbox-data', 'sandbox-token'].map((v) => `${p.project}_${v}`),
        );
      }
      const key = await firstKey(p, ['evalgate']);
      const link = (await compose(p, 'exec', '-T', 'evalgate', 'cat', '/data/sign-in-link')).trim();
      expect(link).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/dashboard/api/auth/local\\?token=`));
      // A new link whenever one is needed, printed to the command's own output (docs/deploy.md).
      const another = await compose(p, 'exec', '-T', 'evalgate', 'evalgate', 'dashboard', 'link');
      expect(another).toMatch(new RegExp(`http://127\\.0\\.0\\.1:${port}/dashboard/api/auth/local\\?token=`));
      expect(another).not.toContain(link);
      // The image's own health check (GET /healthz) and its non-root user.
      const container = await containerOf(p, 'evalgate');
      await waitFor(
        async () => {
          const status = (
            await sh('docker', ['inspect', '-f', '{{.State.Health.Status}}', container])
          ).trim();
          if (status !== 'healthy') await new Promise((r) => setTimeout(r, 500));
          return status === 'healthy';
        },
        90_000,
        'the container reported healthy by its HEALTHCHECK',
      );
      expect((await sh('docker', ['exec', container, 'id', '-u'])).trim()).toBe('1000');
      await setUp(url, key, upstream);
      await recordedCall(url, url, key);

      const created = await call(url, key, 'POST', '/v1/evaluation/runs', RUN);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const done = await finished(url, key, created.body.id, 60_000);
      expect(done.status).toBe('completed');
      expect(scored(done)).toBe(ITEMS);

      // Code evaluators and python graders: the sandbox service runs them (neither python3 nor bubblewrap
      // in the API's image) and contains the attacks.
      await sandboxChecks(p, url, key, port, ['evalgate'], index);
      await checkLogs(p, ['evalgate'], key);

      // The documented backup, from a script: the database's copy in the volume is its owner's only.
      const before = await snapshot(url, key, created.body.id);
      const dir = temp.make();
      const backup = path.join(dir, 'evalgate.tar');
      await docsBlock(p, 'backup embedded', dir, { BACKUP: backup });
      expect((await compose(p, 'exec', '-T', 'evalgate', 'stat', '-c', '%a', '/data/backup.db')).trim()).toBe(
        '600',
      );
      expect(fs.statSync(backup).size).toBeGreaterThan(4096);

      // down keeps the volume: the run, its key and the task log are there after up.
      await compose(p, 'down');
      await compose(p, 'up', '-d', '--no-build');
      await healthy(url, 120_000);
      expect(await snapshot(url, key, created.body.id)).toEqual(before);
      await compose(p, 'down');

      // Restored into a fresh stack (a project of its own, new volume): the same data, the same key.
      const fresh: Profile = { ...p, project: `${p.project}r` };
      profiles.push(fresh);
      await docsBlock(fresh, 'restore embedded', dir, { BACKUP: backup });
      await healthy(url, 120_000);
      expect(await snapshot(url, key, created.body.id)).toEqual(before);
      await checkLogs(fresh, ['evalgate'], key);
    }, 900_000);

    it('scale-out: PostgreSQL, Redis, two replicas, two workers — a worker killed mid-run; backed up and restored into a fresh stack', async () => {
      const secrets = temp.make();
      const [api1, api2] = [await unusedPort(), await unusedPort()];
      const files: Record<string, string> = {
        postgres_password: randomBytes(12).toString('hex'),
        key_pepper: randomBytes(24).toString('hex'),
        secret_key: randomBytes(32).toString('base64'),
      };
      // As docs/deploy.md makes it: a folder PostgreSQL's user and uid 1000 can read (mounted as it is).
      fs.chmodSync(secrets, 0o755);
      for (const [name, value] of Object.entries(files)) {
        fs.writeFileSync(path.join(secrets, name), `${value}\n`, { mode: 0o644 });
      }
      const env: Record<string, string> = {
        ...(await sandboxEnv()),
        EVALGATE_SECRETS_DIR: secrets,
        EVALGATE_API_1_PORT: String(api1),
        EVALGATE_API_2_PORT: String(api2),
        // A killed worker's jobs go to another once their lock expires (30 s by default).
        EVALGATE_RUN_LEASE_MS: '4000',
      };
      if (hostNetwork) {
        // On the host's network PostgreSQL and Redis take host ports: free ones, not the host's own.
        env.EVALGATE_POSTGRES_PORT = String(await unusedPort());
        env.EVALGATE_REDIS_PORT = String(await unusedPort());
      }
      const p: Profile = { project: `egcompose${randomBytes(3).toString('hex')}`, profile: 'scale-out', env };
      profiles.push(p);
      const [url1, url2] = [`http://127.0.0.1:${api1}`, `http://127.0.0.1:${api2}`];
      const up = Date.now();
      await compose(p, 'up', '-d', '--no-build');
      await Promise.all([healthy(url1, 180_000), healthy(url2, 180_000)]);
      console.log(
        `deploy: scale-out replicas answering /healthz ${((Date.now() - up) / 1000).toFixed(1)} s after up -d`,
      );
      await checkNetwork(p, { 'api-1': api1, 'api-2': api2 }, [
        'postgres',
        'redis',
        'worker-1',
        'worker-2',
        'sandbox',
      ]);
      const evalgate = ['migrate', 'api-1', 'api-2', 'worker-1', 'worker-2'];
      await checkVolumes(
        p,
        ['postgres', 'redis', 'sandbox', ...evalgate],
        ['postgres-data', 'redis-data', 'sandbox-data', 'sandbox-token'],
      );
      expect(await compose(p, 'logs', '--no-color', 'migrate')).toMatch(/Applied: |Database is up to date/);
      const key = await firstKey(p, ['api-1', 'api-2']);
      await setUp(url1, key, upstream);
      // The replicas share the database: a call through one is listed by the other.
      await recordedCall(url2, url1, key);
      // The replicas check code evaluators and the workers run them, all on the sandbox service.
      await sandboxChecks(p, url1, key, api1, ['api-1', 'api-2', 'worker-1', 'worker-2'], index);

      // Only worker-1 runs when the run starts; it is killed while its judge calls are held.
      await compose(p, 'stop', 'worker-2');
      gate.hold();
      mock.reset();
      const created = await call(url2, key, 'POST', '/v1/evaluation/runs', RUN);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      await mock.until(() => mock.stats.requests > 0, 60_000);
      const worker1 = await containerOf(p, 'worker-1');
      await sh('docker', ['kill', worker1]);
      await compose(p, 'stop', 'worker-1');
      const before = (await call(url1, key, 'GET', `/v1/evaluation/runs/${created.body.id}`)).body;
      expect(before.status).not.toBe('completed');
      gate.open();
      await compose(p, 'start', 'worker-2');
      const done = await finished(url1, key, created.body.id, 120_000);
      expect(done.status).toBe('completed');
      expect(scored(done)).toBe(ITEMS);
      await checkLogs(p, evalgate, key);

      // The documented dump, from a script.
      const data = await snapshot(url2, key, created.body.id);
      const dir = temp.make();
      const backup = path.join(dir, 'evalgate.dump');
      await docsBlock(p, 'backup scale-out', dir, { BACKUP: backup });
      expect(fs.readFileSync(backup).subarray(0, 5).toString()).toBe('PGDMP');

      // down keeps the volumes: PostgreSQL's data (the run, the key) is there after up.
      await compose(p, 'down');
      await compose(p, 'up', '-d', '--no-build');
      await Promise.all([healthy(url1, 180_000), healthy(url2, 180_000)]);
      expect(await snapshot(url2, key, created.body.id)).toEqual(data);
      await compose(p, 'down');

      // Restored into a fresh stack with the same secrets: every row as in the dump, before Evalgate
      // starts there; then the same answers and the same key.
      const fresh: Profile = { ...p, project: `${p.project}r` };
      profiles.push(fresh);
      await docsBlock(fresh, 'restore scale-out', dir, { BACKUP: backup });
      const restored = await compose(
        fresh,
        'exec',
        '-T',
        'postgres',
        'pg_dump',
        '-U',
        'evalgate',
        '--data-only',
        'evalgate',
      );
      const dumped = await dumpAsSql(fresh, backup);
      const tables = tableData(dumped);
      expect(Object.values(tables).flat().length).toBeGreaterThan(ITEMS);
      expect(tableData(restored)).toEqual(tables);
      await docsBlock(fresh, 'start scale-out', dir);
      await Promise.all([healthy(url1, 180_000), healthy(url2, 180_000)]);
      expect(await snapshot(url1, key, created.body.id)).toEqual(data);
    }, 1_200_000);
  },
);
