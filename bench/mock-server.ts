/** The mock upstream as its own process (so it does not share an event loop with the load generator). */
import { startMockUpstream } from '../test/fixtures/mock-upstream.js';
import { prose } from './lib.js';

// MOCK_REPLY_JSON: answer every request with this JSON (e.g. a judge verdict) instead of plain text.
const json = process.env.MOCK_REPLY_JSON ? (JSON.parse(process.env.MOCK_REPLY_JSON) as unknown) : undefined;
// MOCK_REPLY_CHARS: answer with this many characters of prose instead of the mock's own short sentence.
const chars = Number(process.env.MOCK_REPLY_CHARS ?? 0);
const reply = json !== undefined ? () => ({ json }) : chars > 0 ? () => prose(chars) : undefined;
const mock = await startMockUpstream({
  record: false,
  latencyMs: Number(process.env.MOCK_LATENCY_MS ?? 0),
  ...(reply ? { reply } : {}),
});
process.stdout.write(`${JSON.stringify({ url: mock.url })}\n`);
process.on('SIGTERM', () => {
  void mock.close().then(() => process.exit(0));
});
