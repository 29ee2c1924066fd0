import { mkdir, open } from 'node:fs/promises';
import path from 'node:path';

/**
 * Flushes a folder, so that the names created or renamed in it so far survive a crash: a file's
 * own flush keeps its bytes, not its name.
 */
export async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * `mkdir -p`, durable: the parent of every folder it made is flushed, so that a crash takes
 * neither a new folder (a new hour's) nor what is later written and flushed in it away.
 */
export async function makeDirectoryDurably(directory: string): Promise<void> {
  const made = await mkdir(directory, { recursive: true });
  if (made === undefined) return;
  for (let folder = directory; ; folder = path.dirname(folder)) {
    const parent = path.dirname(folder);
    await syncDirectory(parent);
    if (folder === made || parent === folder) return;
  }
}
