/** The proxy bench's setups by name: its tables' rows, and what the targets summary reads. */
export const SETUP = {
  direct: 'fake upstream, direct',
  nginx: 'nginx proxy_pass (1 worker)',
  bareNode: 'bare Node.js proxy (node:http + undici)',
  bareFastify: 'bare Fastify proxy (Fastify + undici)',
  bareBilling: 'bare Fastify proxy + a bill committed per answer (SQLite)',
  passThrough: 'imagegate, pass_through_urls',
  openAiRoute: 'imagegate, pass_through_urls, OpenAI route',
  randomRequestIds: "imagegate, pass_through_urls, callers' random X-Request-Id",
  rehost: 'imagegate default (re-hosts a small PNG)',
  rehostLogInfo: 'imagegate default, log level info',
  rehostOnServices: 'imagegate default, quota token on PostgreSQL + Redis',
  passThroughOnServices: 'imagegate pass_through_urls, quota token on PostgreSQL + Redis',
  manyTokensOnServices: (tokens: number) =>
    `imagegate pass_through_urls, ${tokens} quota tokens on PostgreSQL + Redis`,
} as const;
