import { VERSION } from '../bootstrap/version.js';
import type { GatewayTarget } from '../client/gateway-client.js';
import { UsageError } from './usage-error.js';

/** Where `npm start` listens with no settings (HOST and PORT defaults, docs/configuration.md). */
export const DEFAULT_GATEWAY_URL = 'http://127.0.0.1:8080';

export const CONNECTION_USAGE = `  --url URL      the gateway (default $IMAGEGATE_URL, else ${DEFAULT_GATEWAY_URL})
  --token TOKEN  a gateway token (default $IMAGEGATE_TOKEN; required)`;

/** parseArgs options every client command takes. */
export const CONNECTION_OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
} as const;

/**
 * The one place the client commands read their settings: flags first, then IMAGEGATE_URL and
 * IMAGEGATE_TOKEN. They never read the server's configuration or database.
 */
export function readGatewayTarget(
  flags: { url?: unknown; token?: unknown },
  env: Readonly<Record<string, string | undefined>>,
  usage: string,
): GatewayTarget {
  const url = stringOf(flags.url) ?? stringOf(env.IMAGEGATE_URL) ?? DEFAULT_GATEWAY_URL;
  if (!/^https?:\/\/[^/]/i.test(url))
    throw new UsageError(
      `the gateway URL must start with http:// or https://, got "${url}"`,
      usage,
    );
  const token = (stringOf(flags.token) ?? stringOf(env.IMAGEGATE_TOKEN))?.replace(
    /^Bearer\s+/i,
    '',
  );
  if (token === undefined || token === '')
    throw new UsageError(
      'no token: set IMAGEGATE_TOKEN or pass --token (an operator makes one with: npx imagegate token create --name NAME)',
      usage,
    );
  return { url, token, userAgent: `imagegate-cli/${VERSION}` };
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}
