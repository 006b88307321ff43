// Database-independent: the dialect registry is a constant table and functions over it.
import { describe, expect, it } from 'vitest';
import {
  ANSWER_RULES,
  DIALECTS,
  dialectNamed,
  judgeDialect,
  NATIVE_ADAPTERS,
  operationOf,
  type WireDialect,
} from '../../src/llm/dialects/registry.js';
import { WIRE_PROTOCOLS } from '../../src/shared/wire-protocol.js';

describe('the wire dialects', () => {
  it('has one object per wire protocol, named as listed', () => {
    expect(Object.keys(DIALECTS).sort()).toEqual([...WIRE_PROTOCOLS].sort());
    for (const [name, dialect] of Object.entries(DIALECTS)) expect(dialect.name).toBe(name);
  });

  it('serves each route and error prefix from one dialect only', () => {
    const paths = Object.values(DIALECTS).flatMap((d: WireDialect) => [
      d.routes.call,
      ...(d.routes.also ?? []),
    ]);
    expect(new Set(paths).size).toBe(paths.length);
    for (const d of Object.values(DIALECTS)) {
      // The call path lies under its dialect's error prefix, so its errors are written in its shape
      // (Gemini's second path, /v1/models/…, shares its prefix with the model registry's routes).
      const prefix = d.routes.prefix.replace(/\{\*\}$|\*$/, '');
      expect(d.routes.call.startsWith(prefix), `${d.name}: ${d.routes.call}`).toBe(true);
    }
  });

  it('derives the success rules and native adapters from the objects', () => {
    for (const d of Object.values(DIALECTS)) {
      expect(ANSWER_RULES[d.name]).toBe(d.answerRules);
      expect(NATIVE_ADAPTERS[d.name]).toBe(d.native?.adapter);
    }
    // A chat completion with a choice is a success; an error body is not.
    expect(
      ANSWER_RULES.chat.answerProblem({ choices: [{ message: { role: 'assistant', content: 'x' } }] }),
    ).toBeNull();
    expect(ANSWER_RULES.chat.answerProblem({ error: { message: 'no' } })).not.toBeNull();
  });

  it('names a recorded route’s dialect, a judge api’s and the span operation', () => {
    expect(dialectNamed('messages')).toBe(DIALECTS.messages);
    expect(dialectNamed('toString')).toBeUndefined();
    expect(dialectNamed(42)).toBeUndefined();
    expect(judgeDialect('chat_completions')).toBe(DIALECTS.chat);
    expect(judgeDialect('messages')).toBe(DIALECTS.messages);
    expect(judgeDialect('constructor')).toBeUndefined();
    expect(judgeDialect(null)).toBeUndefined();
    expect(operationOf('embeddings')).toBe('embeddings');
    expect(operationOf('gemini')).toBe('chat');
    expect(operationOf(undefined)).toBe('chat');
  });
});
