// Database-independent: the OpenAPI document is generated from the routes' schemas.
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';
import { openApiDocument } from '../helpers/routes.js';

/** The published document, exact: valid OpenAPI 3.1, data sources as oneOf, defaults, headers, statuses. */
let h: Harness;
let doc: any;
beforeAll(async () => {
  h = await startHarness();
  doc = await openApiDocument(h);
});
afterAll(async () => {
  await h.close();
});

const json = (response: any) => response?.content?.['application/json']?.schema;
const body = (op: any) => op.requestBody.content['application/json'].schema;
/** The non-null branch of a nullable schema. */
const nonNull = (schema: any) => schema.anyOf?.find((s: any) => s.type !== 'null') ?? schema;

describe('the published OpenAPI document', () => {
  it('is valid against the OpenAPI 3.1 meta-schema', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it("documents a file's content as the JSON lines it serves", () => {
    const ok = doc.paths['/v1/files/{file_id}/content'].get.responses['200'];
    expect(Object.keys(ok.content)).toEqual(['application/jsonl']);
    expect(ok.content['application/jsonl'].schema.type).toBe('string');
  });

  it('names every resource in info.description', () => {
    for (const word of [
      'evaluators',
      'runs',
      'containers',
      'task logs',
      'datasets',
      'models',
      'API keys',
      'chat completions',
      'metrics',
      'health',
    ])
      expect(doc.info.description).toContain(word);
  });

  it('publishes data sources as a oneOf of exact variants', () => {
    const create = body(doc.paths['/v1/evaluation/runs'].post);
    for (const side of ['sample', 'ground_truth', 'baseline']) {
      const source = nonNull(create.properties[side]);
      expect(source.oneOf).toHaveLength(7);
      const byType = Object.fromEntries(source.oneOf.map((v: any) => [v.properties.type.const, v]));
      expect(byType.dataset).toMatchObject({ required: ['type', 'dataset'], additionalProperties: false });
      expect(byType.container).toMatchObject({
        required: ['type', 'container'],
        additionalProperties: false,
      });
      // An experiment's generate side names models, prompt versions, or both.
      expect(byType.generate).toMatchObject({
        required: [],
        anyOf: [{ required: ['models'] }, { required: ['prompts'] }],
        additionalProperties: false,
      });
      expect(Object.keys(byType.generate.properties)).toEqual([
        'type',
        'models',
        'range',
        'prompts',
        'parameters',
      ]);
      expect(byType.generate.properties.type.default).toBe('generate');
      expect(byType.sessions).toMatchObject({ required: ['type', 'container'], additionalProperties: false });
      expect(Object.keys(byType.sessions.properties)).toEqual(['type', 'container', 'range', 'filter']);
      expect(byType.traces).toMatchObject({ required: ['type', 'container'], additionalProperties: false });
      expect(Object.keys(byType.traces.properties)).toEqual(['type', 'container', 'range', 'filter']);
      expect(byType.tool_steps).toMatchObject({
        required: ['type', 'container'],
        additionalProperties: false,
      });
      expect(Object.keys(byType.tool_steps.properties)).toEqual(['type', 'container', 'range', 'filter']);
      expect(byType.simulate).toMatchObject({
        required: ['type', 'models', 'user_model'],
        additionalProperties: false,
      });
      expect(Object.keys(byType.simulate.properties)).toEqual([
        'type',
        'models',
        'range',
        'user_model',
        'max_turns',
        'tools',
      ]);
      for (const v of source.oneOf) expect(v.properties.range.default).toBe('0:100');
      expect(JSON.stringify(source)).not.toContain('x-data-source');
    }
    const run = json(doc.paths['/v1/evaluation/runs/{run_id}'].get.responses['200']);
    for (const side of ['sample', 'ground_truth', 'baseline']) {
      const source = nonNull(run.properties[side]);
      expect(source.oneOf.map((v: any) => v.required)).toEqual([
        ['type', 'dataset', 'range'],
        ['type', 'container', 'range'],
        ['type', 'models', 'range'],
        ['type', 'container', 'range'],
        ['type', 'container', 'range'],
        ['type', 'container', 'range'],
        ['type', 'models', 'range'],
      ]);
    }
  });

  it('declares the defaults', () => {
    expect(body(doc.paths['/v1/evaluators'].post).properties.mode.default).toBe('pointwise');
    expect(body(doc.paths['/v1/evaluation/runs'].post).properties.environment.default).toBe('main');
    expect(JSON.stringify(doc)).not.toContain('x-default');
  });

  it('declares the rate-limit headers on every response of keyed routes', () => {
    for (const [path, methods] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(methods)) {
        for (const [status, response] of Object.entries<any>(op.responses)) {
          const names = Object.keys(response.headers ?? {});
          if (path === '/healthz' || status === '401') {
            expect(names, `${method} ${path} ${status}`).toEqual([]);
            continue;
          }
          expect(names, `${method} ${path} ${status}`).toEqual(
            expect.arrayContaining(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']),
          );
          expect(names.includes('Retry-After')).toBe(status === '429');
          expect(response.headers['X-RateLimit-Limit'].description).toMatch(/burst/);
        }
      }
    }
  });

  it('lists the statuses of contract 4.3 and the ones the server adds', () => {
    const statuses = (op: any) => Object.keys(op.responses).sort();
    const runs = doc.paths['/v1/evaluation/runs'];
    const run = doc.paths['/v1/evaluation/runs/{run_id}'];
    expect(statuses(runs.get)).toEqual(['200', '400', '401', '403', '422', '429', '500', '501', '503']);
    expect(statuses(runs.post)).toEqual(
      ['201', '400', '401', '403', '404', '409', '413', '415', '422', '429', '500', '501', '503'].sort(),
    );
    expect(statuses(run.get)).toEqual(
      ['200', '400', '401', '403', '404', '409', '422', '429', '500', '501', '503'].sort(),
    );
    for (const methods of Object.values<any>(doc.paths))
      for (const op of Object.values<any>(methods))
        for (const [status, response] of Object.entries<any>(op.responses))
          if (status !== '204') expect(response.content, status).toBeDefined();
  });

  it('documents the events stream and metrics as text', () => {
    const events = doc.paths['/v1/evaluation/runs/{run_id}/events'].get.responses['200'];
    expect(Object.keys(events.content)).toEqual(['text/event-stream']);
    expect(Object.keys(doc.paths['/metrics'].get.responses['200'].content)).toEqual(['text/plain']);
  });
});
