import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';

const SOURCE = 'src';

/** The layers of docs/architecture.md's `layers` block, highest first: folder -> rank. */
async function documentedLayers(): Promise<Map<string, number>> {
  const text = await readFile('docs/architecture.md', 'utf8');
  const block = /```layers\n([\s\S]*?)```/.exec(text)?.[1];
  assert.ok(block !== undefined, 'docs/architecture.md has a ```layers block');
  const lines = block.split('\n').filter((line) => line.trim() !== '');
  const ranks = new Map<string, number>();
  lines.forEach((line, index) => {
    for (const folder of line.trim().split(/\s+/)) ranks.set(folder, lines.length - index);
  });
  return ranks;
}

async function sourceFiles(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((entry) => {
      const full = path.join(directory, entry.name);
      if (entry.isDirectory()) return sourceFiles(full);
      return entry.name.endsWith('.ts') ? [full] : [];
    }),
  );
  return nested.flat();
}

/** `src/a/b.ts` -> `a`; `src/main.ts` -> `(root)`. */
function folderOf(file: string): string {
  const parts = path.relative(SOURCE, file).split(path.sep);
  return parts.length > 1 ? (parts[0] as string) : '(root)';
}

const IMPORT = /(?:from\s+|import\s*\(\s*)'(\.{1,2}\/[^']+)'/g;

describe('layering of src/', () => {
  it('names every folder of src/ in exactly one layer', async () => {
    const ranks = await documentedLayers();
    const folders = new Set((await sourceFiles(SOURCE)).map(folderOf));
    for (const folder of folders)
      assert.ok(ranks.has(folder), `src/${folder} is not in docs/architecture.md's layers`);
    for (const folder of ranks.keys())
      assert.ok(folders.has(folder), `docs/architecture.md names ${folder}, which src/ lacks`);
  });

  it('has no import that runs upward or sideways between folders', async () => {
    const ranks = await documentedLayers();
    const files = await sourceFiles(SOURCE);
    const sources = await Promise.all(
      files.map(async (file) => ({ file, text: await readFile(file, 'utf8') })),
    );
    assert.deepEqual(violationsIn(sources, ranks), [], 'imports must point to lower layers only');
  });

  it('reports an upward and a sideways import, and passes a downward one', async () => {
    const ranks = await documentedLayers();
    const found = violationsIn(
      [
        { file: 'src/domain/x.ts', text: "import { a } from '../http/app.js';" },
        { file: 'src/auth/y.ts', text: "import type { B } from '../inputs/b.js';" },
        { file: 'src/http/z.ts', text: "import { c } from '../domain/c.js';" },
      ],
      ranks,
    );
    assert.equal(found.length, 2);
    assert.match(found[0] as string, /domain -> http/);
    assert.match(found[1] as string, /auth -> inputs/);
  });
});

function violationsIn(
  sources: readonly { file: string; text: string }[],
  ranks: ReadonlyMap<string, number>,
): string[] {
  const violations: string[] = [];
  for (const { file, text } of sources) {
    const from = folderOf(file);
    for (const match of text.matchAll(IMPORT)) {
      const to = folderOf(path.join(path.dirname(file), match[1] as string));
      if (to === from) continue;
      if ((ranks.get(to) ?? Infinity) >= (ranks.get(from) ?? -Infinity))
        violations.push(`${file} imports ${match[1]} (${from} -> ${to})`);
    }
  }
  return violations;
}
