/** Where progress goes: a terminal is redrawn in place, anything else gets plain lines. */
export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** What `imagegate generate` reports while it works. */
export interface Progress {
  /** Waiting for the gateway: the stream's next image, or the submission. */
  waiting(what: string): void;
  /** The task's state, as each poll reads it. */
  taskState(taskId: string, state: string): void;
  /** Bytes of image `index` downloaded so far, of `total` when the gateway says. */
  downloading(index: number, received: number, total: number | undefined): void;
  /** Image `index` is saved at `path`. */
  saved(index: number, path: string): void;
  /** Stops redrawing and clears the live line. */
  finish(): void;
}

/** No progress at all: `--json` keeps stdout for the JSON. */
export const SILENT_PROGRESS: Progress = {
  waiting: () => undefined,
  taskState: () => undefined,
  downloading: () => undefined,
  saved: () => undefined,
  finish: () => undefined,
};

/** Plain lines, no escape sequences: each saved path, and each task state once it changes. */
export class PlainProgress implements Progress {
  private lastState: string | undefined;

  constructor(private readonly out: ProgressStream) {}

  waiting(): void {}

  taskState(taskId: string, state: string): void {
    if (state === this.lastState) return;
    this.lastState = state;
    this.out.write(`task ${taskId}: ${state}\n`);
  }

  downloading(): void {}

  saved(_index: number, path: string): void {
    this.out.write(`${path}\n`);
  }

  finish(): void {}
}

const CLEAR_LINE = '\r\x1b[2K';
const REDRAW_MS = 200;

/**
 * A live line at the bottom of a terminal, redrawn in place with the time it has taken; finished
 * images are written above it, one line each.
 */
export class TerminalProgress implements Progress {
  private live = '';
  private since = Date.now();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly out: ProgressStream) {}

  waiting(what: string): void {
    this.show(what);
  }

  taskState(taskId: string, state: string): void {
    this.show(`task ${taskId}: ${state}`);
  }

  downloading(index: number, received: number, total: number | undefined): void {
    const amount =
      total === undefined || total === 0
        ? `${(received / 1024).toFixed(0)} KiB`
        : `${Math.floor((received * 100) / total)}%`;
    this.show(`image ${index}: downloading ${amount}`, false);
  }

  saved(index: number, path: string): void {
    this.live = '';
    this.out.write(`${CLEAR_LINE}image ${index}: ${path}\n`);
  }

  finish(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.live = '';
    this.out.write(CLEAR_LINE);
  }

  private show(text: string, restartClock = true): void {
    if (restartClock && text !== this.live) this.since = Date.now();
    this.live = text;
    this.draw();
    if (this.timer === undefined) {
      this.timer = setInterval(() => this.draw(), REDRAW_MS);
      this.timer.unref();
    }
  }

  private draw(): void {
    if (this.live === '') return;
    const seconds = ((Date.now() - this.since) / 1000).toFixed(1);
    const line = `${this.live} … ${seconds}s`;
    // A pseudo-terminal may report no width at all.
    const width = this.out.columns !== undefined && this.out.columns > 0 ? this.out.columns : 80;
    this.out.write(`${CLEAR_LINE}${line.length < width ? line : line.slice(0, width - 1)}`);
  }
}

export function progressFor(out: ProgressStream, json: boolean): Progress {
  if (json) return SILENT_PROGRESS;
  return out.isTTY === true ? new TerminalProgress(out) : new PlainProgress(out);
}
