/**
 * Keys and lines for `evalgate review`. From a terminal the keys are read raw (one key press answers a
 * prompt; a comment or a free number is typed and ended with Enter); from a pipe or a file each line is an
 * answer, so a script (or a test) can review by writing lines.
 */
export interface InputStream extends NodeJS.ReadableStream {
  isTTY?: boolean;
  setRawMode?: (mode: boolean) => unknown;
}

const CTRL_C = '\u0003';
const CTRL_D = '\u0004';
const BACKSPACE = ['\u007f', '\b'];

export class ReviewInput {
  readonly raw: boolean;
  readonly #stream: InputStream;
  readonly #echo: (text: string) => void;
  readonly #buffer: string[] = [];
  #partial = '';
  #ended = false;
  #wake: (() => void) | null = null;

  constructor(stream: InputStream, echo: (text: string) => void) {
    this.#stream = stream;
    this.#echo = echo;
    this.raw = stream.isTTY === true && typeof stream.setRawMode === 'function';
    if (this.raw) stream.setRawMode?.(true);
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string | Buffer) => this.#push(String(chunk)));
    stream.on('end', () => {
      if (this.#partial !== '') this.#buffer.push(this.#partial);
      this.#partial = '';
      this.#ended = true;
      this.#notify();
    });
    stream.resume();
  }

  #push(chunk: string): void {
    if (this.raw) {
      this.#buffer.push(...Array.from(chunk));
    } else {
      const lines = (this.#partial + chunk).split('\n');
      this.#partial = lines.pop() ?? '';
      this.#buffer.push(...lines.map((line) => line.replace(/\r$/, '')));
    }
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  /** The next key (raw) or line (piped); null at the end of the input or on Ctrl-C / Ctrl-D. */
  async #next(): Promise<string | null> {
    while (this.#buffer.length === 0) {
      if (this.#ended) return null;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
    const value = this.#buffer.shift() ?? null;
    if (this.raw && (value === CTRL_C || value === CTRL_D)) return null;
    return value;
  }

  /** One answer to a key prompt: a key press, or a line's first word when piped (blank lines skipped). */
  async key(): Promise<string | null> {
    for (;;) {
      const next = await this.#next();
      if (next === null) return null;
      const key = this.raw ? next : next.trim();
      if (key !== '') return key;
    }
  }

  /** A line of text, echoed and editable with Backspace in a terminal. */
  async line(): Promise<string | null> {
    if (!this.raw) return this.#next();
    let text = '';
    for (;;) {
      const key = await this.#next();
      if (key === null) return null;
      if (key === '\r' || key === '\n') {
        this.#echo('\n');
        return text;
      }
      if (BACKSPACE.includes(key)) {
        if (text.length > 0) {
          text = text.slice(0, -1);
          this.#echo('\b \b');
        }
      } else if (key >= ' ') {
        text += key;
        this.#echo(key);
      }
    }
  }

  /** Gives the terminal back and stops reading, so that the process can end. */
  close(): void {
    if (this.raw) this.#stream.setRawMode?.(false);
    this.#stream.pause();
    this.#stream.removeAllListeners('data');
    this.#stream.removeAllListeners('end');
  }
}
