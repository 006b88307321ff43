/**
 * One "ask until it parses" loop for every model that must answer in a shape (judges, score_model and
 * label_model graders): the call is made again while its reply does not parse, `attempts` times at most.
 */
export interface Ask<R, T> {
  /** One call to the model. */
  call(): Promise<R>;
  /** The reply's value, or null when it does not parse. */
  parse(reply: R): T | null;
  /** Sees every reply (to count its tokens and cost); answering true stops asking (a refusal). */
  seen?(reply: R): boolean | undefined;
  /** How many calls at most (default 2: one retry). */
  attempts?: number;
}

/** The first reply's value that parses, or null when none did (or `seen` stopped the loop). */
export async function askUntilParsed<R, T>(ask: Ask<R, T>): Promise<T | null> {
  const attempts = ask.attempts ?? 2;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const reply = await ask.call();
    if (ask.seen?.(reply)) return null;
    const parsed = ask.parse(reply);
    if (parsed !== null) return parsed;
  }
  return null;
}
