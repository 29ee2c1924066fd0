import type { ModelId } from '../domain/models.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { FailureCategory } from './attempt-result.js';
import { type ChannelCapabilities, missingFeatures, type RequiredFeature } from './capabilities.js';

/** What happened at one channel during one request, for the final message. */
export interface AttemptNote {
  channel: string;
  category: FailureCategory;
  detail: string;
  /** When this channel may be worth trying again, from now. */
  retryAfterMs?: number;
}

const DEFAULT_RETRY_AFTER_MS = 5_000;
const MAX_RETRY_AFTER_MS = 3_600_000;

export function noChannelConfigured(model: ModelId): GatewayError {
  return new GatewayError('NoAvailableChannel', `no channel is configured for model ${model}`);
}

/**
 * 503 NoAvailableChannel naming what none of the model's channels supports, or, when each
 * feature has some channel but no channel has them all, what each channel lacks.
 */
export function noCapableChannel(
  model: ModelId,
  serving: readonly { name: string; capabilities: ChannelCapabilities }[],
  features: readonly RequiredFeature[],
): GatewayError {
  const unsupported = features
    .filter((feature) => serving.every((channel) => !feature.supportedBy(channel.capabilities)))
    .map((feature) => feature.name);
  if (unsupported.length > 0)
    return new GatewayError(
      'NoAvailableChannel',
      `no channel for model ${model} supports ${unsupported.join(', ')}`,
    );
  const lacks = serving
    .map(
      (channel) =>
        `${channel.name} lacks ${missingFeatures(channel.capabilities, features).join(', ')}`,
    )
    .join('; ');
  return new GatewayError(
    'NoAvailableChannel',
    `no single channel for model ${model} supports all of ${features.map((feature) => feature.name).join(', ')} (${lacks})`,
  );
}

/**
 * The answer when no attempt succeeded: 502 UpstreamError when some upstream answered abnormally,
 * otherwise 503 ModelUnavailable with Retry-After (every channel down, open, throttled, taken out
 * or timed out). The message lists each channel and why, never a key.
 */
export function channelsExhausted(
  model: ModelId,
  notes: readonly AttemptNote[],
  notResentAfter: string | undefined,
): GatewayError {
  const tried = notes.map((note) => `${note.channel}: ${note.detail}`).join('; ');
  const stop =
    notResentAfter === undefined
      ? ''
      : `; not sent to another channel because ${notResentAfter} may have accepted it`;
  if (notes.some((note) => note.category === 'upstream-error'))
    return new GatewayError(
      'UpstreamError',
      `no channel could serve model ${model}: ${tried}${stop}`,
    );
  const hints = notes.flatMap((note) =>
    note.retryAfterMs === undefined ? [] : [note.retryAfterMs],
  );
  const waitMs = Math.min(
    MAX_RETRY_AFTER_MS,
    Math.max(1_000, hints.length === 0 ? DEFAULT_RETRY_AFTER_MS : Math.min(...hints)),
  );
  return new GatewayError('ModelUnavailable', `model ${model} is unavailable: ${tried}${stop}`, {
    'retry-after': String(Math.ceil(waitMs / 1000)),
  });
}
