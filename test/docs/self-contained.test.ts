import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, it } from 'node:test';

// The repository must stand on its own: its code, tests and docs cite only files a clone has.
// The patterns are written so that this file does not match them itself.

const SCANNED = ['src', 'test', 'bench', 'docs', 'README.md'];
const API_DOC = 'docs/api.md';

const OUTSIDE_CITATIONS: { what: string; pattern: RegExp }[] = [
  { what: 'a path outside the repository', pattern: /\.\.\/shared\//i },
  { what: 'the design notes', pattern: /\bdesign\.md\b/i },
  { what: 'a numbered section of a spec', pattern: /\bspec(?:'s)?\s+(?:sections?\s+)?§?\d/i },
];

/** Tracked files under the scanned paths; a copy without git history is read from disk. */
function scannedFiles(): string[] {
  try {
    const listed = execFileSync('git', ['ls-files', '-z', '--', ...SCANNED], { encoding: 'utf8' });
    return listed.split('\0').filter((path) => path !== '' && existsSync(path));
  } catch {
    return SCANNED.flatMap((path) =>
      statSync(path).isDirectory()
        ? readdirSync(path, { recursive: true, encoding: 'utf8' })
            .map((entry) => join(path, entry))
            .filter((entry) => statSync(entry).isFile())
        : [path],
    );
  }
}

function markdownFiles(): string[] {
  return [
    'README.md',
    ...readdirSync('docs')
      .filter((name) => name.endsWith('.md'))
      .map((name) => `docs/${name}`),
  ];
}

const CODE_BLOCK = /^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm;
const CODE_SPAN = /`[^`\n]*`/g;

/** Code blocks and code spans are examples, not links or headings. */
function withoutCode(markdown: string): string {
  return markdown.replace(CODE_BLOCK, '').replace(CODE_SPAN, '');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slugOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

function headingsOf(markdown: string): string[] {
  return [...markdown.replace(CODE_BLOCK, '').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)].map(
    ([, text]) => text as string,
  );
}

/** Anchors as GitHub numbers them: a repeated heading gets -1, -2, ... */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const heading of headingsOf(markdown)) {
    const slug = slugOf(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

describe('the repository stands on its own', () => {
  const files = scannedFiles();

  it('finds the files it scans', () => {
    assert.ok(files.includes('README.md') && files.includes(API_DOC));
    assert.ok(files.some((path) => path.startsWith('src/')));
  });

  it('cites no document outside the repository', () => {
    const found: string[] = [];
    for (const path of files) {
      const text = readFileSync(path, 'utf8');
      for (const { what, pattern } of OUTSIDE_CITATIONS) {
        const match = new RegExp(pattern.source, `${pattern.flags}g`).exec(text);
        if (match !== null) found.push(`${path}:${lineOf(text, match.index)}: ${what}`);
      }
    }
    assert.deepEqual(found, []);
  });

  it('cites only sections of docs/api.md that exist', () => {
    const sections = new Set(
      headingsOf(readFileSync(API_DOC, 'utf8'))
        .map((heading) => /^(\d+(?:\.\d+)*)\.?\s/.exec(heading)?.[1])
        .filter((number) => number !== undefined),
    );
    const missing: string[] = [];
    for (const path of files) {
      const text = readFileSync(path, 'utf8');
      // Every § in the repository numbers a section of docs/api.md, the only numbered page.
      for (const match of text.matchAll(/§(\d+(?:\.\d+)*)/g)) {
        if (!sections.has(match[1] as string)) {
          missing.push(`${path}:${lineOf(text, match.index)}: §${match[1]}`);
        }
      }
    }
    assert.deepEqual(missing, []);
  });

  it('names only docs pages that exist', () => {
    const missing: string[] = [];
    for (const path of files) {
      const text = readFileSync(path, 'utf8');
      for (const match of text.matchAll(/\bdocs\/[\w-]+\.md\b/g)) {
        if (!existsSync(match[0]))
          missing.push(`${path}:${lineOf(text, match.index)}: ${match[0]}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it('links, in README.md and docs/*.md, only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const path of markdownFiles()) {
      const markdown = readFileSync(path, 'utf8');
      for (const [, target] of withoutCode(markdown).matchAll(/\]\(\s*<?([^)\s>]+)>?[^)]*\)/g)) {
        const link = target as string;
        if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // http:, https:, mailto:
        const [file = '', encodedAnchor] = link.split('#', 2);
        const anchor = encodedAnchor === undefined ? undefined : decodeURIComponent(encodedAnchor);
        const linked = file === '' ? path : normalize(join(dirname(path), decodeURI(file)));
        if (!existsSync(linked)) {
          broken.push(`${path}: ${link} (no such file)`);
        } else if (
          anchor !== undefined &&
          linked.endsWith('.md') &&
          !anchorsOf(readFileSync(linked, 'utf8')).has(anchor)
        ) {
          broken.push(`${path}: ${link} (no such heading)`);
        }
      }
    }
    assert.deepEqual(broken, []);
  });
});
