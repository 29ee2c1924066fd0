import { LIMIT_USAGE } from './limit-options.js';

// The operator commands' usage, apart from their code, so that `imagegate --help` and the client
// commands print it without loading the server's modules.

export const TOKEN_USAGE = `usage:
  imagegate token create --name NAME [--account ACCOUNT] [--expires-in 30d] [--admin] [limits]
  imagegate token update ID [limits] [--expires-in 30d | --expires-at TIME | --no-expiry]
  imagegate token list [--json]
  imagegate token revoke ID
${LIMIT_USAGE}`;

export const USAGE_USAGE = `  imagegate usage [--since TIME] [--until TIME] [--token ID] [--account A]
                  [--request-id ID] [--group-by day|model|token] [--limit N] [--csv | --json]
    TIME: 2025-01-31, an ISO 8601 time, or a duration back from now such as 24h or 7d.
    Without --group-by, lists requests (oldest first, at most --limit, default 1000) and totals.`;
