// Database-independent: assembling a streamed answer is a pure function.
import { describe, expect, it } from 'vitest';
import { assembleCompletion } from '../../src/llm/assemble.js';

const HEAD = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 7, model: 'gpt-x' };

/** A chunk as OpenAI-compatible servers write it: compact JSON. */
function chunk(delta: object, finish: string | null = null, index = 0): string {
  return JSON.stringify({ ...HEAD, choices: [{ index, delta, finish_reason: finish, logprobs: null }] });
}

const text = (content: string, index = 0) => chunk({ content }, null, index);
const contentOf = (payloads: string[]) =>
  assembleCompletion(payloads, 'fallback').choices.map((c) => c.message.content);

describe('stream assembly of text chunks', () => {
  it('joins hundreds of text chunks, escapes and all, and keeps what the other chunks say', () => {
    const pieces = Array.from({ length: 300 }, (_, i) => `piece ${i} "quoted" \\ é\n✓😀 `);
    const usage = { prompt_tokens: 3, completion_tokens: 300, total_tokens: 303 };
    const completion = assembleCompletion(
      [
        chunk({ role: 'assistant', content: '' }),
        ...pieces.map((p) => text(p)),
        chunk({}, 'stop'),
        JSON.stringify({ ...HEAD, choices: [], usage }),
      ],
      'fallback',
    );
    expect(completion).toMatchObject({
      id: 'chatcmpl-1',
      created: 7,
      model: 'gpt-x',
      choices: [{ index: 0, message: { content: pieces.join('') }, finish_reason: 'stop' }],
      usage,
    });
  });

  it('reads strings written with \\u escapes, as non-JavaScript servers write them', () => {
    const ascii = (p: string) =>
      text(p).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    const pieces = ['caf\u00e9 ', 'na\u00efve ', '\u2713 done', 'plain'];
    expect(contentOf(pieces.map(ascii))).toEqual([pieces.join('')]);
  });

  it('parses a chunk whose text only looks like the others around a string', () => {
    const head = text('x').split('"x"')[0]!;
    const tail = text('x').split('"x"')[1]!;
    // The same text around something that is not one string: two choices.
    const twoChoices = `${head}"b"},"finish_reason":null},{"index":1,"delta":{"content":"B"${tail}`;
    expect(JSON.parse(twoChoices).choices).toHaveLength(2);
    expect(contentOf([text('a'), text('-'), twoChoices, text('c')])).toEqual(['a-bc', 'B']);
  });

  it('skips a chunk that is not JSON even though it has the text around its string', () => {
    const broken = text('x').replace('"x"', '"raw\nnewline"');
    expect(() => JSON.parse(broken)).toThrow();
    expect(contentOf([text('a'), text('b'), broken, text('c')])).toEqual(['abc']);
  });

  it('keeps the order of text and tool-call chunks, and of several choices', () => {
    const completion = assembleCompletion(
      [
        text('one '),
        text('two '),
        chunk({
          tool_calls: [{ index: 0, id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }],
        }),
        text('three'),
        text('other', 1),
        text(' choice', 1),
        chunk({ content: '!', role: 'assistant' }),
      ],
      'fallback',
    );
    expect(completion.choices.map((c) => c.message.content)).toEqual(['one two three!', 'other choice']);
    expect(completion.choices[0]!.message.tool_calls).toEqual([
      { id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } },
    ]);
  });

  it('reads chunks written with spaces, or that differ besides their text, by parsing each', () => {
    const spaced = (p: string) => text(p).replaceAll('":', '": ').replaceAll(',"', ', "');
    expect(contentOf(['a', 'b', 'c', 'd', 'e'].map(spaced))).toEqual(['abcde']);
    const stamped = (p: string, i: number) => text(p).replace('"created":7', `"created":${7 + i}`);
    expect(contentOf(['a', 'b', 'c'].map(stamped))).toEqual(['abc']);
  });
});
