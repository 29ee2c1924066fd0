import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const VITE = path.resolve('node_modules/.bin/vite');

/**
 * Builds the console into dist/console as `npm run build` does, so that the browser tests run
 * the sources as they are (a build left over from another checkout would be tested otherwise).
 * Only the browser test file calls this: two builds at once would empty each other's folder.
 */
export async function buildConsole(): Promise<void> {
  await promisify(execFile)(VITE, ['build', '--config', 'console/vite.config.ts'], {
    timeout: 180_000,
  });
}
