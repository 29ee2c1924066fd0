import type { GenerationRequest, PixelSize } from '../domain/generation-request.js';
import type { LoadedImage } from '../domain/loaded-image.js';
import type { Cancellation } from '../support/cancellation.js';

/** One generation as an engine receives it: validated, inputs loaded, output size and seed decided. */
export interface EngineJob {
  request: GenerationRequest;
  /** The request's input images, in order, bytes loaded and checked. */
  inputs: LoadedImage[];
  /** The output size the size rules give; an engine may answer with a slightly different one. */
  output: PixelSize;
  /** The caller's seed, or one drawn for this request. */
  seed: number;
  requestId: string;
  signal: Cancellation;
  /**
   * The caller reads the images' bytes back from our storage (base64 answers), so a channel that
   * passes upstream URLs through re-hosts them for this job.
   */
  storeImages?: boolean;
}

/**
 * A job whose upstream produced its images, and which failed after that (the caller left, fetching
 * or storing the images failed): what was produced is a cost all the same, which the ledger
 * records. `error` is the failure itself.
 */
export class FailedAfterProduction extends Error {
  constructor(
    readonly error: unknown,
    readonly produced: ProducedReport,
  ) {
    super('failed after the upstream produced the images', { cause: error });
    this.name = 'FailedAfterProduction';
  }
}

/** What an upstream produced for a job, for the ledger. */
export interface ProducedReport {
  channel: string;
  upstreamMs: number;
  /** What the upstream said it produced, when it said. */
  imagesReported: number | undefined;
  /** The images it handed back. */
  imagesReceived: number;
}

/** PNG bytes an engine rendered or an upstream sent inline; the results stage stores them. */
export interface PngImage {
  kind: 'png';
  bytes: Buffer;
}

/** An image at an upstream's own URL: not in our storage, and not signed by us. */
export interface UpstreamImage {
  kind: 'upstream';
  url: string;
}

/** An image already copied into our storage, behind our signed 24-hour URL. */
export interface StoredImage {
  kind: 'stored';
  url: string;
}

/** What an engine or an upstream adapter produces. */
export type ProducedImage = PngImage | UpstreamImage;

/**
 * What the results stage receives: PNG bytes to store, an image the channel router has already
 * re-hosted into our storage, or an upstream URL of a channel that passes URLs through.
 */
export type EngineImage = PngImage | UpstreamImage | StoredImage;

export interface EngineOutput<Image extends EngineImage = EngineImage> {
  images: Image[];
  width: number;
  height: number;
  /** Informational token counts (model A usage); engines that know none leave it out. */
  tokens?: { input: number; output: number };
  /** Name of the channel that served the job (set by the channel router), for the ledger. */
  channel?: string;
  /** Time the serving channel's upstream took, re-hosting excluded (set by the channel router). */
  upstreamMs?: number;
  /** Images the upstream reports it produced and charges for (its `usage.image_count`). */
  imagesReported?: number;
  /** Time the job waited for a turn in the gateway's own queues (set by the channel router). */
  queueMs?: number;
}

/** An image as soon as it is produced, with its place in the answer. */
export interface ImageAt<Image extends EngineImage = EngineImage> {
  image: Image;
  index: number;
}

/**
 * A job under way. It yields each image as soon as it is produced, so that it can be delivered
 * before the rest (an incremental stream), and returns the whole output, those images included:
 * the output is what the engine produced, the yields only say it early. An engine that renders a
 * group image by image yields once per image; one that answers at once yields nothing
 * (`answersAtOnce`), so a caller that wants only the output (`outputOf`) pays one step. A caller
 * may stop early with `return()`: the engine's own work stops and its resources are given back.
 * A run that fails over may yield an index again; the first of each index counts.
 */
export type EngineRun<Image extends EngineImage = EngineImage> = AsyncGenerator<
  ImageAt<Image>,
  EngineOutput<Image>,
  undefined
>;

/** A way of turning a job into images: the local renderer, or the channel router over adapters. */
export interface Engine<Image extends EngineImage = EngineImage> {
  generate(job: EngineJob): EngineRun<Image>;
}
