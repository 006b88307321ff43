import type { Harness } from './harness.js';

export interface DocumentedRoute {
  method: string;
  /** OpenAPI path template, e.g. `/v1/evaluators/{evaluator}`. */
  template: string;
  params: string[];
  hasBody: boolean;
  operation: Record<string, any>;
}

/** Paths that are not part of the API proper: they need no key and are not resources. */
const OUTSIDE_API = (template: string) =>
  template === '/healthz' || template === '/openapi.json' || template.startsWith('/docs');

/** The OpenAPI document the app serves. */
export async function openApiDocument(h: Harness): Promise<any> {
  const res = await h.call('GET', '/openapi.json', { key: null, unchecked: true });
  if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
  return res.body;
}

/** Every API route the served OpenAPI document describes (the auth matrix and the fuzzer run over these). */
export async function documentedRoutes(h: Harness): Promise<DocumentedRoute[]> {
  const doc = await openApiDocument(h);
  const routes: DocumentedRoute[] = [];
  for (const [template, methods] of Object.entries<Record<string, any>>(doc.paths)) {
    if (OUTSIDE_API(template)) continue;
    for (const [method, operation] of Object.entries(methods)) {
      routes.push({
        method: method.toUpperCase(),
        template,
        params: [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!),
        hasBody: operation.requestBody !== undefined,
        operation,
      });
    }
  }
  return routes;
}

/** The template with each `{param}` replaced (URL-encoded) by `value(param)`. */
export function fillPath(template: string, value: (param: string) => string): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(value(name)));
}
