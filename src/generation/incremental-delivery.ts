import type { AdmissionTicket } from '../admission/admission.js';
import type { EngineImage } from '../engine/engine.js';
import { CallerGone } from '../errors/caller-gone.js';
import type { ResultStore } from '../storage/result-store.js';

export interface IncrementalDeliveryOptions {
  ticket: AdmissionTicket;
  results: ResultStore;
  maxImages: number;
  /** Resolves whether the image reached the caller's connection. */
  handOver: (url: string, index: number) => Promise<boolean>;
}

/**
 * Delivers a request's images one by one as the engine produces them: each is stored, handed
 * over to the caller's connection and only then billed, strictly in order (docs/admission.md).
 * The first failure (caller gone, lease lost, storage, a bill that fails) stops it: nothing after
 * it is delivered or billed, and `stopped` fires so the engine can stop.
 */
export class IncrementalDelivery {
  private readonly urls: string[] = [];
  private readonly seen = new Set<number>();
  private chain: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | undefined;
  private readonly stop = new AbortController();
  private savingMs: number | undefined;

  constructor(private readonly options: IncrementalDeliveryOptions) {}

  /** Aborted at the first failure. */
  get stopped(): AbortSignal {
    return this.stop.signal;
  }

  /** Images the engine handed over, extras and repeats excluded. */
  get received(): number {
    return this.seen.size;
  }

  /**
   * Time spent saving images to result storage, summed over the images saved; undefined when none
   * was (every image came as an upstream URL). The saves run while the engine still produces, so
   * this is the storage part of the request's time, not a stretch of it.
   */
  get storageMs(): number | undefined {
    return this.savingMs;
  }

  /** An image the engine produced; a repeat of an index (a retried attempt) is ignored. */
  readonly offer = (image: EngineImage, index: number): void => {
    if (index >= this.options.maxImages || this.seen.has(index)) return;
    this.seen.add(index);
    this.chain = this.chain.then(() => this.deliverOne(image));
  };

  /** Delivers whatever the engine produced but did not offer, then returns every URL in order. */
  async finish(images: readonly EngineImage[]): Promise<string[]> {
    images.forEach(this.offer);
    await this.chain;
    if (this.failure !== undefined) throw this.failure.error;
    return this.urls;
  }

  /** After the engine failed: waits for the images under way; their failure explains the engine's. */
  async settled(): Promise<unknown> {
    await this.chain;
    return this.failure?.error;
  }

  private async deliverOne(image: EngineImage): Promise<void> {
    if (this.failure !== undefined) return;
    try {
      const url = image.kind === 'png' ? await this.saved(image.bytes) : image.url;
      if (!(await this.options.handOver(url, this.urls.length))) throw new CallerGone();
      this.urls.push(url);
      await this.options.ticket.billDelivered(1);
    } catch (error) {
      this.failure = { error };
      this.stop.abort(error);
    }
  }

  private async saved(bytes: Buffer): Promise<string> {
    const started = performance.now();
    try {
      return await this.options.results.save(bytes);
    } finally {
      this.savingMs = (this.savingMs ?? 0) + (performance.now() - started);
    }
  }
}
