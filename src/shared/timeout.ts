/**
 * `promise`, or a rejection with `message` when it has not settled within `ms`. The promise itself is not
 * cancelled. `unref`: the timer does not keep the process alive on its own.
 */
export function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  message: string,
  options: { unref?: boolean } = {},
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
    if (options.unref) timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
