import type { AdmissionTicket } from '../admission/admission.js';
import type { EngineImage } from '../engine/engine.js';
import type { ResultStore } from '../storage/result-store.js';

export interface IncrementalDeliveryOptions {
  ticket: AdmissionTicket;
  results: ResultStore;
  maxImages: number;
  callerPresent: () => boolean;
  deliver: (url: string, index: number) => void;
}

/**
 * Delivers a request's images one by one as the engine produces them: each is stored, billed and
 * only then handed on, strictly in order. The first failure (lease lost, caller gone, storage)
 * stops it: nothing after it is billed or delivered, and `stopped` fires so the engine can stop.
 */
export class IncrementalDelivery {
  private readonly urls: string[] = [];
  private readonly seen = new Set<number>();
  private chain: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | undefined;
  private readonly stop = new AbortController();

  constructor(private readonly options: IncrementalDeliveryOptions) {}

  /** Aborted at the first failure. */
  get stopped(): AbortSignal {
    return this.stop.signal;
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
      const url = image.kind === 'png' ? await this.options.results.save(image.bytes) : image.url;
      await this.options.ticket.billDelivered(1, this.options.callerPresent);
      this.options.deliver(url, this.urls.length);
      this.urls.push(url);
    } catch (error) {
      this.failure = { error };
      this.stop.abort(error);
    }
  }
}
