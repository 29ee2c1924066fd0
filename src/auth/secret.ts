import { randomBytes } from 'node:crypto';
import { link, open, readFile, unlink } from 'node:fs/promises';
import path from 'node:path';
import { makeDirectoryDurably, syncDirectory } from '../support/durable-directories.js';

const SECRET_FILE = 'secret';
const MINIMUM_LENGTH = 32;
/** What `link` fails with on a filesystem without hard links (vfat, some FUSE and SMB mounts). */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

/**
 * The configured secret, or the one in `<dataDir>/secret`, generated with mode 0600 on first use.
 * Every process that starts on the same folder at the same time (the CLI and the server, several
 * workers) ends up with the same secret, none reads it half-written, and its name is flushed
 * before it is returned, so nothing is signed with a secret a crash could take away.
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
  // Also when another process made it a moment ago and has not flushed its name yet.
  await syncDirectory(dataDir);
  const secret = text.trim();
  if (secret.length < MINIMUM_LENGTH)
    throw new Error(`${file} holds a secret shorter than ${MINIMUM_LENGTH} characters`);
  return secret;
}

/**
 * Written and flushed under a name of its own, then linked to `file`: the name appears with the
 * whole secret behind it, so a crash or a concurrent reader never finds it empty, and `link`
 * fails rather than replace a secret another process linked first. Without hard links, the file
 * is created exclusively and written in place, as it was before.
 */
async function createSecret(file: string): Promise<void> {
  const secret = `${randomBytes(32).toString('base64url')}\n`;
  const draft = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFlushed(draft, secret);
  } catch (error) {
    await unlink(draft).catch(() => undefined);
    throw error;
  }
  let secretIsThere: boolean;
  try {
    await link(draft, file);
    secretIsThere = true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (code !== 'EEXIST' && !NO_HARD_LINKS.has(code)) {
      await unlink(draft).catch(() => undefined);
      throw error;
    }
    // EEXIST: another process linked its secret first, and that one is everybody's.
    secretIsThere = code === 'EEXIST';
  }
  await unlink(draft);
  if (secretIsThere) return;
  try {
    await writeFlushed(file, secret);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** A new file (never an existing one) holding `text`, flushed before it is closed. */
async function writeFlushed(file: string, text: string): Promise<void> {
  const handle = await open(file, 'wx', 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function readIfPresent(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
