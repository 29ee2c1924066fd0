import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';

export interface PublicOriginsOptions {
  /** IMAGEGATE_PUBLIC_BASE_URL: when set, every answer names it, whatever the request's Host. */
  publicBaseUrl: string | undefined;
  /** `http://<host>:<port>` of the configuration (port 0 until the server listens). */
  listeningBaseUrl: string;
  /** HOST: the address or name the server listens on. */
  host: string;
  /** IMAGEGATE_PUBLIC_HOSTS; undefined: the listening addresses at the port, loopback at any. */
  hosts: readonly string[] | undefined;
}

const WILDCARD_HOSTS: ReadonlySet<string> = new Set(['0.0.0.0', '::', '[::]']);
const HTTP_DEFAULT_PORT = 80;
/** The caller's own machine, at any port: a port forward (`kubectl port-forward 9000:8080`). */
const LOOPBACK_HOST = /^(?:localhost|127\.0\.0\.1|\[::1\])(?::([1-9][0-9]{0,4}))?$/;

function isLoopbackHost(host: string): boolean {
  const match = LOOPBACK_HOST.exec(host);
  return match !== null && Number(match[1] ?? HTTP_DEFAULT_PORT) <= 65535;
}

function hostPart(address: string): string {
  return address.includes(':') && !address.startsWith('[') ? `[${address}]` : address;
}

/** What a client writes in `Host` for `address` at `port`: the port is left out only when 80. */
function hostValues(address: string, port: number): string[] {
  const host = hostPart(address.toLowerCase());
  return port === HTTP_DEFAULT_PORT ? [`${host}:${port}`, host] : [`${host}:${port}`];
}

/** Every address of this machine's interfaces: what a wildcard listener answers on. */
function interfaceAddresses(ipv6Too: boolean): string[] {
  return Object.values(networkInterfaces())
    .flatMap((entries) => entries ?? [])
    .filter((entry) => ipv6Too || entry.family === 'IPv4')
    .map((entry) => entry.address);
}

/**
 * The origin each answer names in the URLs it hands out (image URLs, upload certificates'
 * `upload_host`). With IMAGEGATE_PUBLIC_BASE_URL set, always that base. Otherwise `http://<Host>`
 * of the request itself when its `Host` is an allowed one (IMAGEGATE_PUBLIC_HOSTS, or else the
 * addresses the server listens on at its port, and the loopback names `localhost`, `127.0.0.1`
 * and `[::1]` at any port, for port forwards), so that a caller who reached the gateway as
 * `localhost` is not handed `127.0.0.1`; any other `Host`, which a caller can set to anything,
 * gets `http://<host>:<port>` of the configuration, so that no answer ever names a host other
 * than those the operator listed, the server's own addresses, or the caller's own machine.
 *
 * Images are signed and stored under that configured base; each answer names its own request's
 * origin as it is sent, so a task's result or an Idempotency-Key replay, read later by another
 * request, names that request's host, never the first one's. The signature covers the image and
 * its expiry, not the host: a URL verifies under every allowed origin.
 */
export class PublicOrigins {
  private base: string;
  private allowedHosts: ReadonlySet<string>;
  private followsLoopback = false;

  constructor(private readonly options: PublicOriginsOptions) {
    this.base = (options.publicBaseUrl ?? options.listeningBaseUrl).replace(/\/+$/, '');
    this.allowedHosts = new Set(options.publicBaseUrl === undefined ? (options.hosts ?? []) : []);
  }

  /** The base images are signed and stored under: the public base URL, or the listening one. */
  canonical(): string {
    return this.base;
  }

  /**
   * Called once the server listens: a base on port 0 takes the real port, and without a list of
   * hosts, the allowed ones become the listening addresses at that port and loopback at any.
   */
  listening(addresses: readonly AddressInfo[]): void {
    const port = addresses[0]?.port;
    if (this.options.publicBaseUrl !== undefined || port === undefined) return;
    if (this.base.endsWith(':0')) this.base = `${this.base.slice(0, -2)}:${port}`;
    if (this.options.hosts !== undefined) return;
    this.followsLoopback = true;
    const hosts = new Set<string>();
    const names = [this.options.host, ...addresses.map((entry) => entry.address)];
    for (const name of names) {
      if (!WILDCARD_HOSTS.has(name)) for (const value of hostValues(name, port)) hosts.add(value);
      else
        for (const address of interfaceAddresses(name !== '0.0.0.0'))
          for (const value of hostValues(address, port)) hosts.add(value);
    }
    this.allowedHosts = hosts;
  }

  /** The origin an answer to a request sent with this `Host` names. */
  originFor(host: string | undefined): string {
    if (host === undefined) return this.base;
    const normalised = host.toLowerCase();
    if (!this.isAllowedHost(normalised)) return this.base;
    // As URL.origin writes it, so that the URLs named here are recognised as ours when sent back.
    return `http://${normalised.endsWith(`:${HTTP_DEFAULT_PORT}`) ? normalised.slice(0, -3) : normalised}`;
  }

  /** Whether `origin` (as `URL.origin` writes it) is one an answer may have named. */
  isAllowedOrigin(origin: string): boolean {
    if (origin === this.base) return true;
    return origin.startsWith('http://') && this.isAllowedHost(origin.slice('http://'.length));
  }

  private isAllowedHost(host: string): boolean {
    return this.allowedHosts.has(host) || (this.followsLoopback && isLoopbackHost(host));
  }

  /**
   * What rewrites the URLs of our stored images to name the origin of a request sent with this
   * `Host` (other URLs, an upstream's passed through, stay as they are); undefined when that
   * origin is the base they were stored under, as for most requests.
   */
  presenterFor(host: string | undefined): ((url: string) => string) | undefined {
    const origin = this.originFor(host);
    if (origin === this.base) return undefined;
    const base = this.base;
    const prefix = `${base}/images/`;
    return (url) => (url.startsWith(prefix) ? `${origin}${url.slice(base.length)}` : url);
  }
}
