/**
 * One kind of OTLP bomb sent by `concurrency` attackers at once, in a process of its own (forked by
 * `bench/otlp-bombs.ts`, so that building and sending bombs never delays the bench's gateway timer).
 *
 * Messages from the parent: `{ type: 'arm', url, key, kind, concurrency }` (the body is built, then
 * `{ type: 'ready', bytes }`), `{ type: 'go' }`, `{ type: 'stop' }` (each attacker ends after its request in
 * flight); the answers are sent back as `{ type: 'answers', answers }`, also once every attacker of a
 * kind sent only once is done.
 */
import { bombKinds } from './otlp-bomb-kinds.js';

interface Arm {
  type: 'arm';
  url: string;
  key: string;
  kind: string;
  concurrency: number;
}

export interface Answer {
  status: number;
  ms: number;
  reason: string;
}

let armed: {
  url: string;
  key: string;
  concurrency: number;
  once: boolean;
  body: Uint8Array | string;
  headers: Record<string, string>;
} | null = null;
let stop = false;

async function send(): Promise<Answer> {
  const a = armed!;
  const t0 = performance.now();
  try {
    const res = await fetch(`${a.url}/v1/traces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.key}`, 'x-evalgate-container': 'bombs', ...a.headers },
      body: a.body,
    });
    const text = Buffer.from(await res.arrayBuffer()).toString('latin1');
    // Printable ASCII up to a double quote: the message ends there in an OTLP/JSON body (`"}` follows).
    const reason = /(The [ !#-~]{10,200})/.exec(text)?.[1] ?? '';
    return { status: res.status, ms: performance.now() - t0, reason };
  } catch (err) {
    return { status: 0, ms: performance.now() - t0, reason: (err as Error).message };
  }
}

async function attack(): Promise<void> {
  const answers: Answer[] = [];
  const attacker = async () => {
    do answers.push(await send());
    while (!stop && !armed!.once);
  };
  await Promise.all(Array.from({ length: armed!.concurrency }, attacker));
  // The channel is closed once the answers are written to it (closed at once, a large message could be lost).
  await new Promise<void>((resolve) =>
    process.send!({ type: 'answers', answers }, undefined, {}, () => resolve()),
  );
}

process.on('message', (m: Arm | { type: 'go' | 'stop' }) => {
  if (m.type === 'arm') {
    const kind = bombKinds(m.kind)[0];
    if (!kind) throw new Error(`no bomb kind ${m.kind}`);
    armed = { url: m.url, key: m.key, concurrency: m.concurrency, once: kind.once ?? false, ...kind.build() };
    const { body } = armed;
    process.send!({ type: 'ready', bytes: typeof body === 'string' ? Buffer.byteLength(body) : body.length });
  } else if (m.type === 'go') void attack().then(() => process.disconnect());
  else stop = true;
});
