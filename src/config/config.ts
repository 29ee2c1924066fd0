/** The gateway's configuration, read and checked once at start by `loadConfig`. */
export interface Config {
  host: string;
  port: number;
  dataDir: string;
  routePrefix: string;
  maxBodyBytes: number;
  database: { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string };
  /** Undefined: generated into the data dir on first start. */
  secret: string | undefined;
  externalTokens: {
    publicKeyFiles: string[];
    jwksUrl: string | undefined;
    issuer: string | undefined;
    audience: string | undefined;
  };
  tokenCacheMs: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  publicBaseUrl: string;
  allowPrivateImageUrls: boolean;
}
