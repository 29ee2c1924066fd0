/**
 * What the metrics read of one channel at scrape time: the part of `GET /admin/channels`'s
 * channel status they show, so the router's own status can be handed over as it is.
 */
export interface ChannelSnapshot {
  name: string;
  /** `available` (breaker closed), `open`, `half-open`, or `key-rejected` (out until a reload). */
  health: ChannelHealthState;
  stats: { attempts: number; failures: number; inFlight: number };
}

export const CHANNEL_HEALTH_STATES = ['available', 'open', 'half-open', 'key-rejected'] as const;

export type ChannelHealthState = (typeof CHANNEL_HEALTH_STATES)[number];
