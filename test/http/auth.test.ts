import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, registerStubModel, startHarness } from '../helpers/harness.js';
import { type DocumentedRoute, documentedRoutes, fillPath } from '../helpers/routes.js';

/** The permission each foundation route needs; routes added later are covered by the generic checks. */
const PERMISSIONS: Record<string, string> = {
  'POST /v1/api-keys': 'keys:write',
  'GET /v1/api-keys': 'keys:read',
  'DELETE /v1/api-keys/{id}': 'keys:write',
  'POST /v1/containers': 'containers:write',
  'GET /v1/containers': 'containers:read',
  'GET /v1/containers/{container}': 'containers:read',
  'PATCH /v1/containers/{container}': 'containers:write',
  'DELETE /v1/containers/{id}': 'containers:write',
  'GET /v1/evaluators': 'evaluators:read',
  'POST /v1/evaluators': 'evaluators:write',
  'GET /v1/evaluators/{evaluator}': 'evaluators:read',
  'PATCH /v1/evaluators/{evaluator}': 'evaluators:write',
  'DELETE /v1/evaluators/{evaluator_id}': 'evaluators:write',
  'GET /metrics': 'metrics:read',
};

let h: Harness;
let routes: DocumentedRoute[];

beforeAll(async () => {
  h = await startHarness();
  routes = await documentedRoutes(h);
});
afterAll(async () => {
  await h.close();
});

const name = (r: DocumentedRoute) => `${r.method} ${r.template}`;

function send(r: DocumentedRoute, key: string | null, headers?: Record<string, string>) {
  return h.call(
    r.method,
    fillPath(r.template, () => 'x'),
    {
      key,
      headers,
      body: r.hasBody ? {} : undefined,
    },
  );
}

async function expectError(
  r: DocumentedRoute,
  res: { status: number; body: any },
  status: number,
  code: string,
) {
  expect(res.status, name(r)).toBe(status);
  expect(errorCode(r, res.body), name(r)).toBe(code);
}

/** Anthropic's error types on /v1/messages (whose SDK expects them), for the envelope's codes. */
const ANTHROPIC_TYPES: Record<string, string> = {
  authentication_error: 'invalid_api_key',
  permission_error: 'permission_denied',
};

function errorCode(r: DocumentedRoute, body: any): string | undefined {
  if (r.template.startsWith('/v1/messages')) return ANTHROPIC_TYPES[body?.error?.type];
  // Google's shape on the Gemini routes: the service's code is the reason of its ErrorInfo detail.
  if (r.template.endsWith('/models/{*}')) return body?.error?.details?.[0]?.reason;
  return body?.error?.code;
}

describe('authentication on every documented route', () => {
  it('covers at least the foundation routes', () => {
    expect(routes.map(name)).toEqual(expect.arrayContaining(Object.keys(PERMISSIONS)));
  });

  it('answers 401 invalid_api_key without a key', async () => {
    for (const r of routes) await expectError(r, await send(r, null), 401, 'invalid_api_key');
  });

  it('answers 401 invalid_api_key for malformed headers and unknown keys', async () => {
    const unknown = `eg_${'A'.repeat(43)}`;
    const tampered = h.admin.key.slice(0, -1) + (h.admin.key.endsWith('A') ? 'B' : 'A');
    const headers = [
      'Basic dXNlcjpwYXNz',
      'Bearer',
      'Bearer ',
      `Token ${h.admin.key}`,
      `Bearer ${h.admin.key} extra`,
      `Bearer ${h.admin.key.slice(3)}`,
      `Bearer ${unknown}`,
      `Bearer ${tampered}`,
    ];
    for (const r of routes) {
      for (const authorization of headers) {
        const res = await send(r, null, { authorization });
        expect(res.status, `${name(r)} with "${authorization}"`).toBe(401);
        expect(errorCode(r, res.body)).toBe('invalid_api_key');
      }
    }
  });

  it('answers 401 for a key revoked through DELETE /v1/api-keys/{id}, at once', async () => {
    const victim = await h.key(['*']);
    // Used first, so that the key sits in the authenticator's cache when it is revoked.
    expect((await h.call('GET', '/v1/evaluators', { key: victim.key })).status).toBe(200);
    expect((await h.call('DELETE', `/v1/api-keys/${victim.id}`)).status).toBe(200);
    for (const r of routes) await expectError(r, await send(r, victim.key), 401, 'invalid_api_key');
  });

  it('answers 403 permission_denied for a valid key without the permission', async () => {
    // Only /metrics takes metrics:read: every other route refuses that key, and /metrics refuses keys:read.
    const metrics = await h.key(['metrics:read']);
    const keysOnly = await h.key(['keys:read']);
    for (const r of routes) {
      const key = name(r) === 'GET /metrics' ? keysOnly.key : metrics.key;
      const res = await send(r, key);
      await expectError(r, res, 403, 'permission_denied');
      if (PERMISSIONS[name(r)]) expect(res.body.error.details).toEqual({ required: PERMISSIONS[name(r)] });
      if (r.template.startsWith('/v1/messages')) expect(res.body.error.message).toContain('inference:write');
    }
  });

  it('lets exactly the named permission (or a wildcard covering it) through', async () => {
    for (const [route, permission] of Object.entries(PERMISSIONS)) {
      const r = routes.find((x) => name(x) === route)!;
      const [resource, action] = permission.split(':') as [string, string];
      const other = action === 'read' ? 'write' : 'read';
      for (const granted of [[permission], [`${resource}:*`], [`*:${action}`], ['*']]) {
        const res = await send(r, (await h.key(granted)).key);
        expect([401, 403], `${route} with ${granted}`).not.toContain(res.status);
      }
      const unrelated = resource === 'metrics' ? 'keys:*' : 'metrics:*';
      for (const granted of [[`${resource}:${other}`], [`*:${other}`], [unrelated]]) {
        const res = await send(r, (await h.key(granted)).key);
        expect(res.status, `${route} with ${granted}`).toBe(403);
      }
    }
  });
});

describe('tenancy: another project sees nothing', () => {
  it('answers 404 for the resources of another project and lists only its own', async () => {
    const container = (await h.call('POST', '/v1/containers', { body: { label: 'private' } })).body;
    await registerStubModel(h, 'm');
    const evaluator = (
      await h.call('POST', '/v1/evaluators', {
        body: { type: 'judge', model: 'm', prompt: 'p', name: 'secret', container: 'private' },
      })
    ).body;
    const mine = await h.key(['*']);
    const stranger = await h.key(['*'], 'other');

    const attempts: [string, string, unknown?][] = [
      ['GET', `/v1/containers/${container.id}`],
      ['GET', '/v1/containers/private'],
      ['PATCH', `/v1/containers/${container.id}`, { description: 'mine now' }],
      ['PATCH', '/v1/containers/private', { description: 'mine now' }],
      ['DELETE', `/v1/containers/${container.id}`],
      ['GET', `/v1/evaluators/${evaluator.id}`],
      ['GET', '/v1/evaluators/secret'],
      ['PATCH', `/v1/evaluators/${evaluator.id}`, { prompt: 'mine now' }],
      ['PATCH', '/v1/evaluators/secret', { prompt: 'mine now' }],
      ['DELETE', `/v1/evaluators/${evaluator.id}`],
      ['DELETE', `/v1/api-keys/${mine.id}`],
    ];
    for (const [method, path, body] of attempts) {
      const res = await h.call(method, path, { key: stranger.key, body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    // Creating with the other project's container label fails too.
    const create = await h.call('POST', '/v1/evaluators', {
      key: stranger.key,
      body: { type: 'judge', model: 'm', prompt: 'p', container: 'private' },
    });
    expect(create.status).toBe(404);

    for (const path of [
      '/v1/containers',
      '/v1/evaluators',
      '/v1/api-keys',
      '/v1/evaluators?container=private',
    ]) {
      const res = await h.call('GET', `${path}${path.includes('?') ? '&' : '?'}limit=100`, {
        key: stranger.key,
      });
      expect(res.status, path).toBe(200);
      for (const item of res.body.data) expect(item.project_id, path).toBe(stranger.projectId);
      expect(res.text).not.toContain(container.id);
      expect(res.text).not.toContain(evaluator.id);
      expect(res.text).not.toContain(mine.id);
    }

    // Nothing changed, and the owner still sees everything.
    expect((await h.call('GET', `/v1/containers/${container.id}`)).body).toEqual(container);
    expect((await h.call('GET', `/v1/evaluators/${evaluator.id}`)).body).toEqual(evaluator);
    expect((await h.call('GET', '/v1/evaluators', { key: mine.key })).status).toBe(200);
    const own = await h.call('GET', '/v1/evaluators?limit=100');
    expect(own.body.data.map((e: { id: string }) => e.id)).toContain(evaluator.id);
  });
});
