import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { unusedPort } from '../helpers/ports.js';
import { tempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';
import { buildWheel } from '../helpers/wheels.js';
import { dockerEngine, type Engine, sh, stopEngine } from './docker.js';

/**
 * The container image and compose.yaml, with a real Docker engine: the base images the Dockerfile and
 * compose.yaml name are built from Debian's packages (test/deploy/bases/build.sh; kept once built), then
 * the image, then each profile is started and driven over HTTP. The mock upstream runs in this process;
 * the containers share the host's network, so they reach it on 127.0.0.1. It has databases of its own
 * (SQLite in a volume, PostgreSQL in a container), so it runs in the postgres project only.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
// EVALGATE_DEPLOY_TEST_TAG: another name for the images, so that two people can share an engine.
const TAG = process.env.EVALGATE_DEPLOY_TEST_TAG ?? 'evalgate';
const IMAGE = `${TAG}:deploy-test`;
const SANDBOX_IMAGE = `${TAG}-sandbox:deploy-test`;
const ITEMS = 40;
const run = testDbKind() === 'postgres';
const engine: Engine = run ? await dockerEngine() : { ok: false, reason: 'runs in the postgres project' };
const temp = tempDirs('evalgate-deploy-');

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

/** Each project's sandbox runner on a port of its own (the stacks of this file are up at once). */
const sandboxPorts = new Map<string, string>();

async function compose(p: Profile, ...args: string[]): Promise<string> {
  if (!engine.ok) throw new Error('no engine');
  const [cmd, ...pre] = engine.compose;
  if (!sandboxPorts.has(p.project)) sandboxPorts.set(p.project, String(await unusedPort()));
  return sh(cmd!, [...pre, '-f', 'compose.yaml', '-p', p.project, '--profile', p.profile, ...args], {
    cwd: ROOT,
    env: {
      EVALGATE_IMAGE: IMAGE,
      EVALGATE_SANDBOX_IMAGE: SANDBOX_IMAGE,
      EVALGATE_SANDBOX_PORT: sandboxPorts.get(p.project)!,
      EVALGATE_ALLOWED_UPSTREAM_HOSTS: '127.0.0.1',
      ...p.env,
    },
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

/** The first key, from the banner of the container that created it. */
async function firstKey(p: Profile, services: string[]): Promise<string> {
  let key = '';
  await waitFor(
    async () => {
      const logs = await compose(p, 'logs', '--no-color', ...services);
      key = /It is shown only once; keep it:[\s\S]*?\b(eg_[0-9A-Za-z]+)/.exec(logs)?.[1] ?? '';
      return key !== '';
    },
    30_000,
    'the first key in the logs',
  );
  return key;
}

/** A model on the mock, a container, a dataset of ITEMS rows and a judge: what a run needs. */
async function setUp(url: string, key: string, mock: MockUpstream) {
  const steps = [
    await call(url, key, 'POST', '/v1/models', {
      label: 'mock',
      provider: 'openai-compatible',
      base_url: mock.baseUrl,
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

/** A package index of one wheel for the sandbox runner's pip: a find-links page and the file, on loopback. */
async function wheelIndex(dir: string): Promise<{ url: string; close(): Promise<void> }> {
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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((r) => server.close(() => r())) };
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
 * What the sandbox service must show in a stack that is up (`clients`: the services that run code
 * evaluators, the first of them serving `url`): only it has Python, bubblewrap and the relaxed profile;
 * a code evaluator with requirements from the test's index runs over a run, a python grader grades, and
 * every attack of ATTACKS is contained.
 */
async function sandboxChecks(p: Profile, url: string, key: string, apiPort: number, clients: string[]) {
  // Only the sandbox container holds Python and bubblewrap, and only it has the relaxed profile.
  const security = (name: string) =>
    sh('docker', [
      'inspect',
      '-f',
      '{{json .HostConfig.SecurityOpt}} {{json .HostConfig.CapAdd}} {{.Config.User}}',
      name,
    ]);
  const [api, sandbox] = [
    (await compose(p, 'ps', '-q', clients[0]!)).trim(),
    (await compose(p, 'ps', '-q', 'sandbox')).trim(),
  ];
  await expect(
    sh('docker', ['exec', api, 'sh', '-c', 'command -v python3 || command -v bwrap']),
  ).rejects.toThrow();
  for (const client of clients) {
    const id = (await compose(p, 'ps', '-q', client)).trim();
    expect((await security(id)).trim(), client).toBe('null null node');
  }
  expect((await security(sandbox)).trim()).toBe(
    '["seccomp=unconfined","apparmor=unconfined"] ["SYS_ADMIN","NET_ADMIN"] root',
  );
  expect(
    (await compose(p, 'exec', '-T', 'sandbox', 'env')).match(/^EVALGATE_DATABASE_URL|^EVALGATE_KEY_PEPPER/m),
  ).toBeNull();

  const steps = [
    await call(url, key, 'POST', '/v1/containers', { label: 'app' }),
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
    const profiles: Profile[] = [];

    beforeAll(async () => {
      mock = await startMockUpstream({ reply: () => gate.reply(), record: false });
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
      await sh('docker', ['build', '--network', 'host', '-q', '-t', IMAGE, '.'], {
        cwd: ROOT,
        timeoutMs: 1_200_000,
      });
      // The sandbox runner's image: the same plus Python and bubblewrap (sandbox.Dockerfile).
      await sh(
        'docker',
        [
          'build',
          '--network',
          'host',
          '-q',
          '-f',
          'sandbox.Dockerfile',
          '--build-arg',
          `EVALGATE_IMAGE=${IMAGE}`,
          '-t',
          SANDBOX_IMAGE,
          '.',
        ],
        { cwd: ROOT, timeoutMs: 1_200_000 },
      );
      const size = Number((await sh('docker', ['image', 'inspect', '-f', '{{.Size}}', IMAGE])).trim());
      console.log(
        `deploy: waited ${((bases - waited) / 1000).toFixed(0)} s for CI's build, base images ${((build - bases) / 1000).toFixed(0)} s, image build ${((Date.now() - build) / 1000).toFixed(0)} s, ` +
          `image size ${(size / 1e6).toFixed(0)} MB`,
      );
    }, 2_400_000);

    afterAll(async () => {
      gate.open();
      for (const p of profiles) await compose(p, 'down', '-v', '--remove-orphans').catch(() => {});
      await mock?.close();
      temp.removeAll();
      await stopEngine(engine);
    }, 300_000);

    it('embedded: one container on SQLite — a key, a recorded call, a run; data kept across down/up', async () => {
      const port = await unusedPort();
      const p: Profile = {
        project: `egemb${randomBytes(3).toString('hex')}`,
        profile: 'embedded',
        env: { EVALGATE_PORT: String(port) },
      };
      profiles.push(p);
      const url = `http://127.0.0.1:${port}`;
      const up = Date.now();
      await compose(p, 'up', '-d', '--no-build');
      const ms = await healthy(url, 120_000);
      console.log(
        `deploy: embedded container answering /healthz ${((Date.now() - up) / 1000).toFixed(1)} s after up -d (${ms} ms of polling)`,
      );
      const key = await firstKey(p, ['evalgate']);
      // The image's own health check (GET /healthz) and its non-root user.
      const container = (await compose(p, 'ps', '-q', 'evalgate')).trim();
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
      await setUp(url, key, mock);
      await recordedCall(url, url, key);

      const created = await call(url, key, 'POST', '/v1/evaluation/runs', RUN);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const done = await finished(url, key, created.body.id, 60_000);
      expect(done.status).toBe('completed');
      expect(scored(done)).toBe(ITEMS);

      // down keeps the volume: the run, its key and the task log are there after up.
      await compose(p, 'down');
      await compose(p, 'up', '-d', '--no-build');
      await healthy(url, 120_000);
      const again = await call(url, key, 'GET', `/v1/evaluation/runs/${created.body.id}`);
      expect(again.status).toBe(200);
      expect(again.body.status).toBe('completed');
      expect(scored(again.body)).toBe(ITEMS);
      const logs = await call(url, key, 'GET', '/v1/containers/app/logs');
      expect(logs.body.data.length).toBe(1);
    }, 600_000);

    it('scale-out: PostgreSQL, Redis, two replicas, two workers — a worker killed mid-run, then down/up', async () => {
      const secrets = temp.make();
      const [pgPort, redisPort, api1, api2] = [
        await unusedPort(),
        await unusedPort(),
        await unusedPort(),
        await unusedPort(),
      ];
      const password = randomBytes(12).toString('hex');
      const files: Record<string, string> = {
        postgres_password: password,
        database_url: `postgres://evalgate:${password}@127.0.0.1:${pgPort}/evalgate`,
        key_pepper: randomBytes(24).toString('hex'),
        secret_key: randomBytes(32).toString('base64'),
      };
      for (const [name, value] of Object.entries(files)) {
        fs.writeFileSync(path.join(secrets, name), `${value}\n`, { mode: 0o644 });
      }
      const p: Profile = {
        project: `egso${randomBytes(3).toString('hex')}`,
        profile: 'scale-out',
        env: {
          EVALGATE_SECRETS_DIR: secrets,
          EVALGATE_POSTGRES_PORT: String(pgPort),
          EVALGATE_REDIS_PORT: String(redisPort),
          EVALGATE_API_1_PORT: String(api1),
          EVALGATE_API_2_PORT: String(api2),
          // A killed worker's jobs go to another once their lock expires (30 s by default).
          EVALGATE_RUN_LEASE_MS: '4000',
        },
      };
      profiles.push(p);
      const [url1, url2] = [`http://127.0.0.1:${api1}`, `http://127.0.0.1:${api2}`];
      const up = Date.now();
      await compose(p, 'up', '-d', '--no-build');
      await Promise.all([healthy(url1, 180_000), healthy(url2, 180_000)]);
      console.log(
        `deploy: scale-out replicas answering /healthz ${((Date.now() - up) / 1000).toFixed(1)} s after up -d`,
      );
      expect(await compose(p, 'logs', '--no-color', 'migrate')).toMatch(/Applied: |Database is up to date/);
      const key = await firstKey(p, ['api-1', 'api-2']);
      await setUp(url1, key, mock);
      // The replicas share the database: a call through one is listed by the other.
      await recordedCall(url2, url1, key);

      // Only worker-1 runs when the run starts; it is killed while its judge calls are held.
      await compose(p, 'stop', 'worker-2');
      gate.hold();
      mock.reset();
      const created = await call(url2, key, 'POST', '/v1/evaluation/runs', RUN);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      await mock.until(() => mock.stats.requests > 0, 60_000);
      const worker1 = (await compose(p, 'ps', '-q', 'worker-1')).trim();
      await sh('docker', ['kill', worker1]);
      await compose(p, 'stop', 'worker-1');
      const before = (await call(url1, key, 'GET', `/v1/evaluation/runs/${created.body.id}`)).body;
      expect(before.status).not.toBe('completed');
      gate.open();
      await compose(p, 'start', 'worker-2');
      const done = await finished(url1, key, created.body.id, 120_000);
      expect(done.status).toBe('completed');
      expect(scored(done)).toBe(ITEMS);

      // down keeps the volumes: PostgreSQL's data (the run, the key) is there after up.
      await compose(p, 'down');
      await compose(p, 'up', '-d', '--no-build');
      await Promise.all([healthy(url1, 180_000), healthy(url2, 180_000)]);
      const again = await call(url2, key, 'GET', `/v1/evaluation/runs/${created.body.id}`);
      expect(again.status).toBe(200);
      expect(again.body.status).toBe('completed');
      expect(scored(again.body)).toBe(ITEMS);
    }, 900_000);

    it('code evaluators, embedded: the sandbox service runs them (requirements, python graders) and contains attacks', async () => {
      const port = await unusedPort();
      const index = await wheelIndex(temp.make());
      const p: Profile = {
        project: `evalgate-sandbox-${randomBytes(3).toString('hex')}`,
        profile: 'embedded',
        env: { EVALGATE_PORT: String(port), EVALGATE_PIP_FIND_LINKS: index.url },
      };
      profiles.push(p);
      const url = `http://127.0.0.1:${port}`;
      try {
        await compose(p, 'up', '-d', '--no-build');
        await healthy(url, 120_000);
        await sandboxChecks(p, url, await firstKey(p, ['evalgate']), port, ['evalgate']);
      } finally {
        await index.close();
      }
    }, 900_000);

    it('code evaluators, scale-out: the replicas check them and the workers run them on the sandbox service', async () => {
      const secrets = temp.make();
      const [pgPort, redisPort, api1, api2] = [
        await unusedPort(),
        await unusedPort(),
        await unusedPort(),
        await unusedPort(),
      ];
      const password = randomBytes(12).toString('hex');
      const files: Record<string, string> = {
        postgres_password: password,
        database_url: `postgres://evalgate:${password}@127.0.0.1:${pgPort}/evalgate`,
        key_pepper: randomBytes(24).toString('hex'),
        secret_key: randomBytes(32).toString('base64'),
      };
      for (const [name, value] of Object.entries(files)) {
        fs.writeFileSync(path.join(secrets, name), `${value}\n`, { mode: 0o644 });
      }
      const index = await wheelIndex(temp.make());
      const p: Profile = {
        project: `evalgate-sandbox-${randomBytes(3).toString('hex')}`,
        profile: 'scale-out',
        env: {
          EVALGATE_SECRETS_DIR: secrets,
          EVALGATE_POSTGRES_PORT: String(pgPort),
          EVALGATE_REDIS_PORT: String(redisPort),
          EVALGATE_API_1_PORT: String(api1),
          EVALGATE_API_2_PORT: String(api2),
          EVALGATE_PIP_FIND_LINKS: index.url,
        },
      };
      profiles.push(p);
      const url = `http://127.0.0.1:${api1}`;
      try {
        await compose(p, 'up', '-d', '--no-build');
        await Promise.all([healthy(url, 180_000), healthy(`http://127.0.0.1:${api2}`, 180_000)]);
        const key = await firstKey(p, ['api-1', 'api-2']);
        await sandboxChecks(p, url, key, api1, ['api-1', 'api-2', 'worker-1', 'worker-2']);
      } finally {
        await index.close();
      }
    }, 900_000);
  },
);
