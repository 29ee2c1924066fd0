import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

/** Debian's chromium package (`.ci/run` installs it). */
const CHROMIUM = process.env.IMAGEGATE_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Flags for a headless Chromium on a machine with no network beyond loopback: without the
 * background-networking ones it keeps trying Google's hosts.
 */
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Every wait on a page: generous, as the 2-core machine may be busy with other tests. */
export const PAGE_TIMEOUT_MS = 60_000;

export interface ConsoleBrowser {
  context: BrowserContext;
  /** A new tab, with what its console printed and the CSP violations it reported. */
  newPage(): Promise<{ page: Page; messages: string[] }>;
  close(): Promise<void>;
}

/** A real headless Chromium on a fresh profile. */
export async function launchConsoleBrowser(): Promise<ConsoleBrowser> {
  const profile = await mkdtemp(path.join(tmpdir(), 'imagegate-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1360, height: 900 },
  });
  context.setDefaultTimeout(PAGE_TIMEOUT_MS);
  return {
    context,
    newPage: async () => {
      const page = await context.newPage();
      const messages: string[] = [];
      page.on('console', (message) => messages.push(`${message.type()}: ${message.text()}`));
      page.on('pageerror', (error) => messages.push(`pageerror: ${error.message}`));
      return { page, messages };
    },
    close: async () => {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** What a page's console said about the Content-Security-Policy refusing something. */
export function cspViolations(messages: readonly string[]): string[] {
  return messages.filter((message) => /Content Security Policy|Refused to/i.test(message));
}

export type { Browser, Page };
