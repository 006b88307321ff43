import { Ajv, type ValidateFunction } from 'ajv';
import { PASSED, type TextGuard } from './types.js';

/** One Ajv for guard schemas: every error reported, no coercion, unknown formats tolerated. */
/** Made on first use, not at start. */
let instance: Ajv | null = null;
const ajv = (): Ajv => (instance ??= new Ajv({ allErrors: true, strict: false, validateFormats: false }));

/** Compiles a schema (once, when the policy is created or first loaded), or says why it cannot be. */
export function compileSchema(schema: object): ValidateFunction | string {
  try {
    return ajv().compile(schema);
  } catch (err) {
    return err instanceof Error ? err.message : 'invalid JSON Schema';
  }
}

/** A model's JSON answer, also when fenced as a ```json block. */
function parseAnswer(text: string): { ok: true; value: unknown } | { ok: false } {
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n\s*```\s*$/.exec(text);
  try {
    return { ok: true, value: JSON.parse(fenced?.[1] ?? text) };
  } catch {
    return { ok: false };
  }
}

export function jsonSchemaGuard(config: { schema: object }): TextGuard {
  const validate = compileSchema(config.schema);
  if (typeof validate === 'string') throw new Error(validate);
  return {
    prefix: false,
    check(text) {
      const parsed = parseAnswer(text);
      if (!parsed.ok) return { triggered: true, score: 0, reason: 'the answer is not JSON' };
      if (validate(parsed.value)) return PASSED;
      const problems = (validate.errors ?? [])
        .slice(0, 3)
        .map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
      return { triggered: true, score: 0, reason: `schema: ${problems.join('; ')}` };
    },
  };
}
