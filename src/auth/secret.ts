import { randomBytes } from 'node:crypto';
import { link, open, readFile, unlink } from 'node:fs/promises';
import path from 'node:path';
import { makeDirectoryDurably, syncDirectory } from '../support/durable-directories.js';

const SECRET_FILE = 'secret';
const MINIMUM_LENGTH = 32;

/**
 * The configured secret, or the one in `<dataDir>/secret`, generated with mode 0600 on first use.
 * Every process that starts on the same folder at the same time (the CLI and the server, several
 * workers) ends up with the same secret, and none reads it half-written.
 */
export async function loadOrCreateSecret(
  configured: string | undefined,
  dataDir: string,
): Promise<string> {
  if (configured !== undefined) return configured;
  const file = path.join(dataDir, SECRET_FILE);
  await makeDirectoryDurably(dataDir);
  let text = await readIfPresent(file);
  if (text === undefined) {
    await createSecret(file);
    text = await readFile(file, 'utf8');
  }
  const secret = text.trim();
  if (secret.length < MINIMUM_LENGTH)
    throw new Error(`${file} holds a secret shorter than ${MINIMUM_LENGTH} characters`);
  return secret;
}

/**
 * Written and flushed under a name of its own, then linked to `file`: the name appears with the
 * whole secret behind it, so a crash or a concurrent reader never finds it empty, and `link`
 * fails rather than replace a secret another process linked first.
 */
async function createSecret(file: string): Promise<void> {
  const draft = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(draft, 'wx', 0o600);
  try {
    await handle.writeFile(`${randomBytes(32).toString('base64url')}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await link(draft, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await unlink(draft);
  }
  await syncDirectory(path.dirname(file));
}

async function readIfPresent(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
