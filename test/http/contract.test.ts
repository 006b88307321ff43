import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../../src/shared/errors.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { documentedRoutes, openApiDocument } from '../helpers/routes.js';

/**
 * Statuses the contract (section 7.3) and the design (section 5: 405, 413, 415) allow; 508: a gateway
 * loop; 408: a request whose headers or body did not arrive in time (answered before any route's work,
 * so no route documents it).
 */
const ALLOWED_STATUSES = [400, 401, 403, 404, 405, 408, 409, 413, 415, 422, 429, 500, 501, 502, 503, 508];
/** The gateway's routes in its clients' dialects. */
const GATEWAY_ROUTES =
  /^\/v1\/(chat\/completions|responses|embeddings|messages)(\/|$)|^\/v1(beta)?\/models\/\{\*\}$/;
/** Gemini's call (`models/{model}:generateContent`): the model and method are the path, not a parameter to check. */
const GEMINI_ROUTES = /^\/v1(beta)?\/models\/\{\*\}$/;
/** The gateway's routes in OpenAI's dialects, whose errors carry OpenAI's `type` and `param`. */
const OPENAI_DIALECT = /^(POST \/v1\/(chat\/completions|embeddings|responses)|[A-Z]+ \/v1\/responses\/.+)$/;
/** Every authenticated route can answer these. */
const GUARDED = ['400', '401', '403', '429', '500', '503'];

let h: Harness;
let doc: any;
beforeAll(async () => {
  h = await startHarness();
  doc = await openApiDocument(h);
});
afterAll(async () => {
  await h.close();
});

const jsonSchema = (response: any) => response?.content?.['application/json']?.schema;

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 with API version 1.0.0 and describes /healthz', async () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.info.version).toBe('1.0.0');
    const health = doc.paths['/healthz'].get;
    expect(Object.keys(health.responses).sort()).toEqual(['200', '503']);
    expect(jsonSchema(health.responses['200'])).toMatchObject({
      required: ['ok'],
      additionalProperties: false,
    });
    expect((await h.call('GET', '/docs', { key: null, unchecked: true })).status).toBeLessThan(400);
  });

  it('documents every error response of every route, each as the envelope or the 422 shape', async () => {
    const routes = await documentedRoutes(h);
    expect(routes.length).toBeGreaterThanOrEqual(13);
    for (const r of routes) {
      const where = `${r.method} ${r.template}`;
      const statuses = Object.keys(r.operation.responses);
      const expected = [...GUARDED];
      const hasInput = r.hasBody || (r.operation.parameters ?? []).length > 0;
      // The gateway's dialect routes answer validation failures 400, as their clients' SDKs expect.
      const gateway = GATEWAY_ROUTES.test(r.template);
      // (A path parameter past the router's length limit is refused before any route: 422 there too.)
      // OpenAI-compatible evals routes answer an invalid request with 400, as OpenAI's SDKs expect.
      const openAiShaped = (r.operation.tags ?? []).includes('openai-evals');
      const gemini = GEMINI_ROUTES.test(r.template);
      if (hasInput && !openAiShaped && (!gateway || (r.params.length > 0 && !gemini))) expected.push('422');
      if (r.params.length) expected.push('404');
      // Fastify reads a body on these methods whether or not the route declares one.
      if (['POST', 'PUT', 'PATCH', 'DELETE'].includes(r.method)) expected.push('413', '415');
      expect(statuses, where).toEqual(expect.arrayContaining(expected));
      expect(
        statuses.some((s) => s.startsWith('2')),
        where,
      ).toBe(true);
      for (const status of statuses.filter((s) => Number(s) >= 400)) {
        expect(ALLOWED_STATUSES, `${where} ${status}`).toContain(Number(status));
        const schema = jsonSchema(r.operation.responses[status]);
        if (
          (where === 'POST /v1/traces' || where === 'POST /v1/logs') &&
          (status === '400' || status === '413')
        ) {
          // OTLP/HTTP answers an unreadable body with google.rpc.Status, as its exporters expect.
          expect(schema, `${where} ${status}`).toMatchObject({ required: ['code', 'message'] });
        } else if ((where === 'POST /v1/traces' || where === 'POST /v1/logs') && status === '429') {
          // The key's rate limit (the envelope), or the export bytes in flight at their bound (OTLP's Status).
          expect(schema, `${where} ${status}`).toMatchObject({
            anyOf: [{ required: ['error'] }, { required: ['code', 'message'] }],
          });
        } else if (r.template.startsWith('/v1/messages')) {
          // Anthropic's error shape, so that its SDK raises its own error classes.
          expect(schema, `${where} ${status}`).toMatchObject({
            required: ['type', 'error'],
            additionalProperties: false,
            properties: { error: { required: ['type', 'message'], additionalProperties: false } },
          });
        } else if (gemini) {
          // Google's error shape, so that its SDK raises its ApiError with the status.
          expect(schema, `${where} ${status}`).toMatchObject({
            required: ['error'],
            properties: { error: { required: ['code', 'message', 'status', 'details'] } },
          });
        } else if (OPENAI_DIALECT.test(where) && status !== '422') {
          // The envelope with OpenAI's type and param, so that its SDKs fill err.type and err.param.
          expect(schema, `${where} ${status}`).toMatchObject({
            required: ['error'],
            additionalProperties: false,
            properties: {
              error: { required: ['code', 'message', 'type', 'param'], additionalProperties: false },
            },
          });
        } else if (status === '422') {
          expect(schema, where).toMatchObject({ required: ['detail'], additionalProperties: false });
          expect(schema.properties.detail.items.required.sort()).toEqual(['loc', 'msg', 'type']);
        } else {
          expect(schema, `${where} ${status}`).toMatchObject({
            required: ['error'],
            additionalProperties: false,
            properties: { error: { required: ['code', 'message'], additionalProperties: false } },
          });
          // Every code the envelope admits for this status exists in the server's table.
          const codes: string[] = schema.properties.error.properties.code.enum;
          expect(codes.some((c) => ERROR_STATUS[c as keyof typeof ERROR_STATUS] === Number(status))).toBe(
            true,
          );
        }
      }
    }
  });

  it("agrees with ERROR_STATUS: the envelope's codes are exactly the server's, with allowed statuses", () => {
    const envelope = jsonSchema(doc.paths['/v1/evaluators'].get.responses['401']);
    const codes: string[] = envelope.properties.error.properties.code.enum;
    expect([...codes].sort()).toEqual(Object.keys(ERROR_STATUS).sort());
    for (const [code, status] of Object.entries(ERROR_STATUS))
      expect(ALLOWED_STATUSES, code).toContain(status);
    expect(ERROR_STATUS).toMatchObject({
      invalid_json: 400,
      invalid_api_key: 401,
      permission_denied: 403,
      not_found: 404,
      conflict: 409,
      payload_too_large: 413,
      unsupported_media_type: 415,
      validation_error: 422,
      rate_limit_exceeded: 429,
      internal_error: 500,
      not_implemented: 501,
      upstream_unavailable: 503,
    });
  });
});

describe('errors outside the routes', () => {
  it('answers 400 invalid_json for malformed, empty, prototype-polluting or too deep JSON', async () => {
    for (const raw of [
      '{"label":',
      '{"label": "a",}',
      '',
      '{"__proto__": {"x": 1}, "label": "a"}',
      '['.repeat(100),
    ]) {
      const res = await h.call('POST', '/v1/containers', {
        raw,
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status, raw.slice(0, 20)).toBe(400);
      expect(res.body.error.code).toBe('invalid_json');
    }
  });

  it('reads an empty body labelled JSON as no body where the route takes none (DELETE, a cancel)', async () => {
    const empty = { raw: '', headers: { 'content-type': 'application/json' } };
    const cancel = await h.call('POST', '/v1/evaluation/runs/run_nope/cancel', empty);
    expect(cancel.status, cancel.text).toBe(404);
    const created = await h.call('POST', '/v1/containers', { body: { label: 'bodiless' } });
    const removed = await h.call('DELETE', `/v1/containers/${created.body.id}`, empty);
    expect(removed.status, removed.text).toBe(200);
  });

  it('answers 415 unsupported_media_type for bodies that are not JSON', async () => {
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
    ]) {
      const res = await h.call('POST', '/v1/evaluators', {
        raw: 'label=a',
        headers: { 'content-type': type },
      });
      expect(res.status, type).toBe(415);
      expect(res.body.error.code).toBe('unsupported_media_type');
    }
    // application/*+json is JSON too.
    const vendor = await h.call('POST', '/v1/containers', {
      raw: '{"label":"vendor"}',
      headers: { 'content-type': 'application/vnd.api+json; charset=utf-8' },
    });
    expect(vendor.status).toBe(201);
  });

  it('answers 404 not_found for unknown routes and 405 method_not_allowed for known paths', async () => {
    for (const [method, path] of [
      ['GET', '/nope'],
      ['GET', '/v1/nope'],
      ['GET', '/v1/containers/a/b'],
      ['PUT', '/v1/nope'],
    ] as const) {
      const res = await h.call(method, path, { key: null });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    for (const [method, path] of [
      ['PUT', '/v1/evaluators'],
      ['POST', '/v1/evaluators/x'],
    ] as const) {
      const res = await h.call(method, path, { key: null, unchecked: true });
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.body.error.code).toBe('method_not_allowed');
      expect(res.headers.get('allow')).toBeTruthy();
    }
    // Whatever the body: a method the path does not take is a 405, not a complaint about the body.
    for (const [raw, type] of [
      ['{"broken": ', 'application/json'],
      ['plain', 'text/plain'],
    ]) {
      const res = await h.call('PUT', '/v1/evaluators', {
        raw,
        headers: { 'content-type': type! },
        unchecked: true,
      });
      expect(res.status, type).toBe(405);
      expect(res.body.error.code).toBe('method_not_allowed');
    }
  });

  it('answers the envelope for paths the router cannot decode and 422 for overlong path parameters', async () => {
    const bad = await h.call('GET', '/v1/containers/%E0%A4%A');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('bad_request');
    const long = await h.call('GET', `/v1/evaluators/${'a'.repeat(600)}`);
    expect(long.status).toBe(422);
    expect(long.body.detail[0].loc[0]).toBe('path');
  });

  it('refuses NUL characters and non-finite numbers with 422 on both databases', async () => {
    const nul = await h.call('POST', '/v1/containers', { body: { label: 'nul', description: 'a\u0000b' } });
    expect(nul.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'description'], type: 'string_nul' }),
    ]);
    expect((await h.call('GET', '/v1/containers/a%00b')).body.detail[0].loc).toEqual(['path', 'container']);
    const inf = await h.call('POST', '/v1/evaluators', {
      raw: '{"type":"judge","model":"m","prompt":"p","pass_threshold":1e400}',
      headers: { 'content-type': 'application/json' },
    });
    expect(inf.body.detail[0].loc).toEqual(['body', 'pass_threshold']);
    expect((await h.call('GET', '/v1/evaluators?limit=1e400')).body.detail[0].loc).toEqual([
      'query',
      'limit',
    ]);
    // Nothing was stored: listing still works.
    expect((await h.call('GET', '/v1/evaluators')).status).toBe(200);
  });
});

describe('limits and failures (own app instances)', () => {
  it('answers 413 payload_too_large above EVALGATE_BODY_LIMIT', async () => {
    const small = await startHarness({ env: { EVALGATE_BODY_LIMIT: '2048' } });
    try {
      const fits = await small.call('POST', '/v1/containers', {
        body: { label: 'fits', description: 'x'.repeat(1900) },
      });
      expect(fits.status).toBe(201);
      const big = await small.call('POST', '/v1/containers', {
        body: { label: 'big', description: 'x'.repeat(3000) },
      });
      expect(big.status).toBe(413);
      expect(big.body.error.code).toBe('payload_too_large');
    } finally {
      await small.close();
    }
  });

  it('leaks nothing when the database fails: only the envelope, with the request id', async () => {
    const broken = await startHarness();
    try {
      const fresh = await broken.key(['*']);
      expect((await broken.call('GET', '/v1/containers')).status).toBe(200);
      await broken.app.services.database.close();
      // The admin key is cached, so the request reaches the route and fails there.
      const res = await broken.call('GET', '/v1/containers', { headers: { 'x-request-id': 'trace-me-42' } });
      expect([500, 503]).toContain(res.status);
      expect(Object.keys(res.body.error).sort()).toEqual(['code', 'details', 'message']);
      // A database that is gone is a dependency outage (503, naming it); anything else stays a 500.
      expect(res.body.error.details).toEqual(
        res.status === 503
          ? { dependency: 'database', request_id: 'trace-me-42' }
          : { request_id: 'trace-me-42' },
      );
      const uncached = await broken.call('GET', '/v1/evaluators', { key: fresh.key });
      expect(uncached.status).toBe(503);
      expect(uncached.body.error.code).toBe('upstream_unavailable');
      for (const text of [res.text, uncached.text]) {
        expect(text).not.toMatch(
          /select|from|sqlite|postgres|kysely|destroyed|driver|stack|\.ts\b|\.js\b|\bat /i,
        );
      }
    } finally {
      await broken.close();
    }
  });
});
