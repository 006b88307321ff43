import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

interface OpenApiDoc {
  paths: Record<
    string,
    Record<string, { responses?: Record<string, { content?: Record<string, { schema: object }> }> }>
  >;
}

const ENVELOPE = {
  type: 'object',
  required: ['error'],
  additionalProperties: false,
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      additionalProperties: false,
      properties: {
        code: { type: 'string' },
        message: { type: 'string' },
        details: { type: ['object', 'null'] },
      },
    },
  },
};
const VALIDATION = {
  type: 'object',
  required: ['detail'],
  additionalProperties: false,
  properties: {
    detail: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['loc', 'msg', 'type'],
        properties: {
          loc: { type: 'array', minItems: 1, items: { type: ['string', 'integer'] } },
          msg: { type: 'string' },
          type: { type: 'string' },
        },
      },
    },
  },
};

/**
 * Checks every response a test receives against the served OpenAPI document: the documented status,
 * the documented body, and for errors exactly the envelope (or the 422 shape).
 */
/** Exactly the envelope with OpenAI's `type` (a string) and `param` (a string or null). */
function isOpenAiError(body: unknown): boolean {
  const error = (body as { error?: Record<string, unknown> } | null)?.error;
  return (
    typeof body === 'object' &&
    body !== null &&
    Object.keys(body).join() === 'error' &&
    typeof error === 'object' &&
    error !== null &&
    Object.keys(error).every((k) => ['code', 'message', 'details', 'type', 'param'].includes(k)) &&
    typeof error.code === 'string' &&
    typeof error.message === 'string' &&
    typeof error.type === 'string' &&
    (error.param === null || typeof error.param === 'string')
  );
}

/** Exactly Anthropic's error shape: `{"type":"error","error":{"type":…,"message":…}}`. */
function isAnthropicError(body: unknown): boolean {
  const b = body as { type?: unknown; error?: Record<string, unknown> } | null;
  return (
    typeof b === 'object' &&
    b !== null &&
    Object.keys(b).sort().join() === 'error,type' &&
    b.type === 'error' &&
    typeof b.error === 'object' &&
    b.error !== null &&
    Object.keys(b.error).sort().join() === 'message,type' &&
    typeof b.error.type === 'string' &&
    typeof b.error.message === 'string'
  );
}

export class ContractChecker {
  // The document's schemas are the server's own: checking them against JSON Schema's meta-schema (which
  // every checker compiled anew) was a third of a harness start's CPU and found nothing the server's
  // own compilers would not.
  private readonly ajv = addFormats(new Ajv2020({ strict: false, allErrors: true, validateSchema: false }));
  private readonly cache = new Map<string, ValidateFunction>();
  private readonly routes: { method: string; template: string; regex: RegExp }[] = [];
  private readonly envelope = this.ajv.compile(ENVELOPE);
  private readonly validation = this.ajv.compile(VALIDATION);

  constructor(private readonly doc: OpenApiDoc) {
    for (const [template, methods] of Object.entries(doc.paths)) {
      const regex = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}/?$`);
      for (const method of Object.keys(methods))
        this.routes.push({ method: method.toUpperCase(), template, regex });
    }
  }

  check(method: string, url: string, status: number, body: unknown, contentType: string): void {
    const where = `${method} ${url} → ${status}`;
    const pathOnly = url.split('?')[0]!;
    // A path the router cannot decode (`%`, `%FF`) matches no route: the router answers it in the envelope,
    // whichever route's pattern the text would match.
    if (status === 400 && this.envelope(body) && /is not a valid url component/.test(JSON.stringify(body)))
      return;
    // Literal templates win over parameterised ones, as in the router.
    const candidates = this.routes.filter((r) => r.method === method && r.regex.test(pathOnly));
    const route = candidates.find((r) => !r.template.includes('{')) ?? candidates[0];
    const responses = route ? (this.doc.paths[route.template]?.[method.toLowerCase()]?.responses ?? {}) : {};
    const documented = responses[String(status)];
    const schema = documented?.content?.['application/json']?.schema as { properties?: object } | undefined;
    // An error answers exactly the envelope, unless the route documents another body for it (/healthz's 503,
    // Anthropic's error shape on /v1/messages, Google's on the Gemini routes, the envelope with OpenAI's type
    // and param on the gateway's OpenAI-dialect routes): that body is then checked against its schema below.
    const props = (schema?.properties ?? {}) as { error?: { properties?: object } };
    const openAiError = 'type' in (props.error?.properties ?? {});
    // Google's shape on the Gemini routes: {error: {code, message, status, details}}.
    const googleError = 'status' in (props.error?.properties ?? {});
    // Under /v1/messages every error is in Anthropic's shape, also where no route answers (404, 405).
    const anthropicPath = pathOnly === '/v1/messages' || pathOnly.startsWith('/v1/messages/');
    // Under /v1/responses every error carries OpenAI's type and param, also where no route answers.
    const openAiPath = pathOnly === '/v1/responses' || pathOnly.startsWith('/v1/responses/');
    const ownErrorBody =
      (schema !== undefined &&
        (!('error' in props) || 'type' in props || openAiError || googleError) &&
        status !== 422) ||
      (anthropicPath && !route && isAnthropicError(body)) ||
      (openAiPath && !route && isOpenAiError(body));
    if (
      status >= 400 &&
      status !== 422 &&
      contentType.includes('json') &&
      !ownErrorBody &&
      !this.envelope(body)
    ) {
      throw new Error(`${where}: error body is not exactly the envelope: ${JSON.stringify(body)}`);
    }
    if (status === 422 && !this.validation(body)) {
      throw new Error(`${where}: 422 body is not the validation shape: ${JSON.stringify(body)}`);
    }
    if (!route) {
      if (anthropicPath && !isAnthropicError(body))
        throw new Error(`${where}: error body is not in Anthropic's shape: ${JSON.stringify(body)}`);
      if (status !== 404 && status !== 405) throw new Error(`${where}: route is not in the OpenAPI document`);
      return;
    }
    if (!documented)
      throw new Error(`${where}: status ${status} is not documented for ${method} ${route.template}`);
    if (!schema || !contentType.includes('json')) return;
    const key = `${method} ${route.template} ${status}`;
    let validate = this.cache.get(key);
    if (!validate) {
      validate = this.ajv.compile(schema);
      this.cache.set(key, validate);
    }
    if (!validate(body)) {
      throw new Error(
        `${where}: body does not match the documented schema: ${this.ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 2000)}`,
      );
    }
  }
}
