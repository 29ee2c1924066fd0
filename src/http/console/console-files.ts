import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** One file of the built console, held in memory with the headers it is served with. */
export interface ConsoleFile {
  body: Buffer;
  contentType: string;
  cacheControl: string;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.woff2': 'font/woff2',
};

/** Vite names every file under assets/ by a hash of its content: it never changes under a name. */
const HASHED = 'public, max-age=31536000, immutable';
/** index.html names the current hashes, so a browser must ask again each time. */
const REVALIDATED = 'no-cache';

/**
 * The built console (`npm run build` writes it to dist/console), read once at start-up: it is a
 * few hundred KiB, and serving from memory keeps a page load off the disk. Keys are the paths
 * under /console/, e.g. `index.html`, `assets/index-3f2a.js`. Empty when the console is not built.
 */
export function readConsoleFiles(directory: string): ReadonlyMap<string, ConsoleFile> {
  const files = new Map<string, ConsoleFile>();
  if (!existsSync(path.join(directory, 'index.html'))) return files;
  for (const relative of listFiles(directory, '')) {
    const contentType = CONTENT_TYPES[path.extname(relative)] ?? 'application/octet-stream';
    files.set(relative, {
      body: readFileSync(path.join(directory, relative)),
      contentType,
      cacheControl: relative.startsWith('assets/') ? HASHED : REVALIDATED,
    });
  }
  return files;
}

function listFiles(root: string, prefix: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(path.join(root, prefix))) {
    const relative = prefix === '' ? name : `${prefix}/${name}`;
    if (statSync(path.join(root, relative)).isDirectory()) found.push(...listFiles(root, relative));
    else found.push(relative);
  }
  return found;
}

/** dist/console beside the compiled code: this file is src/http/console or dist/http/console. */
export const BUILT_CONSOLE_DIRECTORY = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../dist/console',
);
