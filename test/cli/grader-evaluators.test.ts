// Database-independent: the CLI's request bodies for grader evaluators; evaluators are stored on both databases in test/http and test/openai-evals.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';
import { type TempDir, tempDir } from '../helpers/temp.js';
import { evalgate, evalgateJson } from './cli-helpers.js';

let h: Harness;
let temp: TempDir;
let dir: string;

beforeAll(async () => {
  h = await startHarness();
  temp = tempDir('evalgate-cli-graders-');
  dir = temp.dir;
  await h.call('POST', '/v1/models', {
    body: {
      label: 'judge',
      provider: 'openai-compatible',
      base_url: 'http://127.0.0.1:9/v1',
      upstream_model: 'j',
    },
  });
});
afterAll(async () => {
  await h?.close();
  temp?.remove();
});

describe('evalgate evaluators create for the grader types', () => {
  it('sets each grader field from its flag', async () => {
    const sc = await evalgateJson(h, [
      ...['evaluators', 'create', '--type', 'string_check', '--name', 'exact'],
      ...['--input', '{{sample.output_text}}', '--reference', '{{item.expected}}', '--operation', 'ilike'],
    ]);
    expect(sc).toMatchObject({
      object: 'evaluator.string_check',
      input: '{{sample.output_text}}',
      reference: '{{item.expected}}',
      operation: 'ilike',
    });
    const ts = await evalgateJson(h, [
      ...['evaluators', 'create', '--type', 'text_similarity', '--name', 'rouge', '--metric', 'rouge_2'],
      ...['--input', '{{sample.output_text}}', '--reference', 'x', '--pass-threshold', '0.4'],
    ]);
    expect(ts).toMatchObject({ evaluation_metric: 'rouge_2', pass_threshold: 0.4 });
    const messages = path.join(dir, 'messages.json');
    fs.writeFileSync(messages, JSON.stringify([{ role: 'user', content: 'Rate {{sample.output_text}}' }]));
    const sm = await evalgateJson(h, [
      ...['evaluators', 'create', '--type', 'score_model', '--name', 'quality', '--model', 'judge'],
      ...['--input-file', messages, '--range', '0,10', '--sampling', 'temperature=0', '--sampling', 'seed=3'],
    ]);
    expect(sm).toMatchObject({
      model: 'judge',
      range: [0, 10],
      sampling_params: { temperature: 0, seed: 3 },
      input: [{ role: 'user', content: 'Rate {{sample.output_text}}' }],
    });
    const lm = await evalgateJson(h, [
      ...['evaluators', 'create', '--type', 'label_model', '--name', 'tone', '--model', 'judge'],
      ...['--input-file', messages, '--label', 'polite', '--label', 'rude', '--passing-label', 'polite'],
    ]);
    expect(lm).toMatchObject({ labels: ['polite', 'rude'], passing_labels: ['polite'] });
    const shown = await evalgate(h, ['evaluators', 'get', 'tone']);
    expect(shown.stdout).toMatch(/type\s*│\s*label_model/);
    expect(shown.stdout).toMatch(/passing labels\s*│\s*polite/);
    const listed = await evalgate(h, ['evaluators', 'list']);
    expect(listed.stdout).toMatch(/string_check/);
  });

  it('prints every problem of an invalid grader and exits 1', async () => {
    const res = await evalgate(h, [
      'evaluators',
      'create',
      '--type',
      'label_model',
      '--name',
      'bad',
      '--label',
      'a',
    ]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/body\.model/);
    expect(res.stderr).toMatch(/body\.input/);
    expect(res.stderr).toMatch(/body\.passing_labels/);
  });
});
