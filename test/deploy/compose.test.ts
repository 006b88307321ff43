import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
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
import { dockerEngine, type Engine, sh, shBoth, stopEngine } from './docker.js';

/**
 * The container image and compose.yaml, with a real Docker engine: the base images the Dockerfile and
 * compose.yaml name are built from Debian's packages (test/deploy/bases/build.sh; kept once built), then
 * the image, then each profile is started and driven over HTTP. The containers are on the project's own
 * network; the mock upstream runs in this process, reached through the engine's bridge address. On an
 * engine without a bridge (or with EVALGATE_TEST_COMPOSE_HOST_NETWORK=1), compose.host-network.yaml puts
 * them on the host's network instead. The backups are taken and restored by docs/deploy.md's own blocks.
 * It has databases of its own (SQLite in a volume, PostgreSQL in a container), so it runs in the
 * postgres project only. EVALGATE_TEST_IMAGE: the image's tag (default evalgate:deploy-test).
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const IMAGE = process.env.EVALGATE_TEST_IMAGE ?? 'evalgate:deploy-test';
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

describe.skipIf(!engine.ok)(
  `the container image and compose.yaml${engine.ok ? '' : ` (skipped: ${engine.reason})`}`,
  () => {
    const gate = gatedJudge();
    let mock: MockUpstream;
    let relay: { port: number; close(): void };
    let upstream = '';
    const profiles: Profile[] = [];

    beforeAll(async () => {
      mock = await startMockUpstream({ reply: () => gate.reply(), record: false });
      relay = await forwarder(upstreamHost(), Number(new URL(mock.url).port));
      upstream = `http://${upstreamHost()}:${relay.port}/v1`;
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
      const size = Number((await sh('docker', ['image', 'inspect', '-f', '{{.Size}}', IMAGE])).trim());
      console.log(
        `deploy: waited ${((bases - waited) / 1000).toFixed(0)} s for CI's build, base images ${((build - bases) / 1000).toFixed(0)} s, image build ${((Date.now() - build) / 1000).toFixed(0)} s, ` +
          `image size ${(size / 1e6).toFixed(1)} MB (limit ${IMAGE_LIMIT / 1e6} MB), ${hostNetwork ? "the host's network (compose.host-network.yaml)" : "the project's network"}`,
      );
    }, 2_400_000);

    afterAll(async () => {
      gate.open();
      for (const p of profiles) await compose(p, 'down', '-v', '--remove-orphans').catch(() => {});
      relay?.close();
      await mock?.close();
      temp.removeAll();
      await stopEngine(engine);
    }, 300_000);

    it('the image: production files only (within the size limit), no VOLUME; one build per profile', async () => {
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
      // `build` builds the one image once: a single service of each profile has a build section, the
      // other Evalgate services name its image.
      for (const profile of ['embedded', 'scale-out'] as const) {
        const p: Profile = { project: 'egcompose-config', profile, env: {} };
        const config = parseYaml(await compose(p, 'config')) as {
          services: Record<string, { build?: unknown; image: string; profiles?: string[] }>;
        };
        const services = Object.entries(config.services).filter(([, svc]) => svc.profiles?.includes(profile));
        expect(services.filter(([, svc]) => svc.build).length, profile).toBe(1);
        const evalgate = services.filter(([name]) => !['postgres', 'redis'].includes(name));
        for (const [name, svc] of evalgate) expect(svc.image, name).toBe(IMAGE);
      }
    });

    it('embedded: one container on SQLite — a key, a recorded call, a run; backed up and restored into a fresh stack', async () => {
      const port = await unusedPort();
      const p: Profile = {
        project: `egcompose${randomBytes(3).toString('hex')}`,
        profile: 'embedded',
        env: { EVALGATE_PORT: String(port) },
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
      await checkNetwork(p, { evalgate: port }, []);
      await checkVolumes(p, ['evalgate'], ['evalgate-data']);
      if (engine.ok && engine.compose[0] === 'docker') {
        // Compose v2 creates only the volumes the profile's services use (1.29 creates every one declared).
        const volumes = await sh('docker', [
          'volume',
          'ls',
          '-q',
          '--filter',
          `label=com.docker.compose.project=${p.project}`,
        ]);
        expect(volumes.trim().split('\n')).toEqual([`${p.project}_evalgate-data`]);
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

      // Code evaluators are off in the image (neither python3 nor bubblewrap in it): a clear 501.
      const code = await call(url, key, 'POST', '/v1/evaluators', {
        type: 'code',
        name: 'exact',
        source: 'def evaluate(sample, ground_truth, baseline):\n    return True\n',
      });
      expect(code.status, JSON.stringify(code.body)).toBe(501);
      expect(code.body.error.message).toMatch(/Python 3/);
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
      await checkNetwork(p, { 'api-1': api1, 'api-2': api2 }, ['postgres', 'redis', 'worker-1', 'worker-2']);
      const evalgate = ['migrate', 'api-1', 'api-2', 'worker-1', 'worker-2'];
      await checkVolumes(p, ['postgres', 'redis', ...evalgate], ['postgres-data', 'redis-data']);
      expect(await compose(p, 'logs', '--no-color', 'migrate')).toMatch(/Applied: |Database is up to date/);
      const key = await firstKey(p, ['api-1', 'api-2']);
      await setUp(url1, key, upstream);
      // The replicas share the database: a call through one is listed by the other.
      await recordedCall(url2, url1, key);

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
