// Bent requests for the robustness test: valid bodies and headers, each with ONE thing changed.
// Everything is derived from the valid requests and a seeded generator, so a failing case is the
// same case on every run and can be named by its label alone.
import { GENERATION_URL, modelABody, modelBBody } from '../helpers/requests.js';

type JsonPath = readonly (string | number)[];

/** A request whose headers are valid: sent over a shared keep-alive connection pool. */
export interface PooledCase {
  transport: 'pool';
  label: string;
  body: Buffer;
  /** Content-Type and Authorization; the pool adds the true Content-Length. */
  headers: Record<string, string>;
}

/** A request with bent headers, or a lying Content-Length: written byte for byte on its own socket. */
export interface SocketCase {
  transport: 'socket';
  label: string;
  /** The request line and header lines as sent, Content-Length included (or not). */
  head: string;
  body: Buffer;
  /** The client stops sending after the body, as one whose upload was cut short. */
  halfClose: boolean;
  /** The server may rightly still be waiting for promised bytes when the client hangs up. */
  mayStayUnanswered: boolean;
}

export type BentCase = PooledCase | SocketCase;

export interface CaseFixtures {
  /** The value of a valid `Authorization` header. */
  authorization: string;
  /** A valid input image as a data URL, small enough to keep every request cheap. */
  imageDataUrl: string;
  seed: number;
}

/** mulberry32: a small seeded generator, so the cases never depend on Math.random. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface ValidRequest {
  name: string;
  body: Record<string, unknown>;
}

/** Valid requests of both models and every kind of field; each generates one cheap image. */
function validRequests(imageDataUrl: string): ValidRequest[] {
  return [
    {
      name: 'A text-to-image',
      body: modelABody({ size: '1K', n: 1, seed: 42, watermark: false, thinking_mode: true }),
    },
    {
      name: 'A edit with palette and boxes',
      body: modelABody(
        {
          size: '1K',
          n: 1,
          seed: 7,
          color_palette: [
            { hex: '#C87828', ratio: '50.00%' },
            { hex: '#ffffff', ratio: '25.00%' },
            { hex: '#000000', ratio: '25.00%' },
          ],
          bbox_list: [[[10, 20, 100, 120]]],
        },
        [{ image: imageDataUrl }, { text: 'make it autumn' }],
      ),
    },
    {
      name: 'A sequential',
      body: modelABody({ enable_sequential: true, n: 1, size: '1K' }),
    },
    {
      name: 'B text-to-image',
      body: modelBBody({
        size: '512*512',
        n: 1,
        negative_prompt: 'blur',
        prompt_extend: false,
        watermark: true,
        seed: 1,
      }),
    },
    {
      name: 'B edit',
      body: modelBBody({ size: '512*512', n: 1 }, [
        { image: imageDataUrl },
        { text: 'paint it blue' },
      ]),
    },
  ];
}

const DEEP_NESTING = 5000;

/** Values a field is replaced by, as JSON text: some are not what JSON.stringify would write. */
const REPLACEMENTS: readonly string[] = [
  'null',
  'true',
  'false',
  '0',
  '-0',
  '-1',
  '1.5',
  '2.0',
  String(2 ** 53),
  '1e308',
  '-1e308',
  '1e400',
  '123456789012345678901234567890',
  '""',
  '" "',
  JSON.stringify('x'.repeat(6000)),
  '"\\u0000"',
  '"\\ud800"',
  '"\\udc00\\ud800"',
  JSON.stringify('🦊 画一只狐狸'),
  '"1K"',
  '"2"',
  '"true"',
  '[]',
  '{}',
  '[null]',
  '{"":null}',
  '[[[[[[[[[[1]]]]]]]]]]',
  `${'['.repeat(DEEP_NESTING)}${']'.repeat(DEEP_NESTING)}`,
];

/** Field names added where they do not belong; some are dangerous to a naive object merge. */
const UNKNOWN_NAMES: readonly string[] = [
  'unknown',
  '',
  'Model',
  '__proto__',
  'constructor',
  'prototype',
  'négatif 🦊',
  'k'.repeat(300),
  'negative_prompt',
  'enable_sequential',
];

/** Marks the spot whose JSON text is swapped for raw text after serialising. */
const RAW_VALUE = '@@raw-value@@';
const RAW_KEY = '@@raw-key@@';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function labelOf(path: JsonPath): string {
  let label = '';
  for (const step of path) label += typeof step === 'number' ? `[${step}]` : `.${step}`;
  return label === '' ? '(body)' : label.slice(1);
}

/** Every field and element below the root, parents before children; strings are leaves. */
function pathsOf(value: unknown, prefix: JsonPath = []): JsonPath[] {
  const steps: (string | number)[] = Array.isArray(value)
    ? value.map((_, index) => index)
    : isRecord(value)
      ? Object.keys(value)
      : [];
  return steps.flatMap((step) => {
    const path = [...prefix, step];
    return [path, ...pathsOf(childOf(value, step), path)];
  });
}

/** Objects (the root included) where a field can be added. */
function objectPathsOf(value: unknown): JsonPath[] {
  return [[], ...pathsOf(value)].filter((path) => isRecord(at(value, path)));
}

function childOf(value: unknown, step: string | number): unknown {
  if (Array.isArray(value) && typeof step === 'number') return value[step];
  if (isRecord(value) && typeof step === 'string') return value[step];
  return undefined;
}

function at(value: unknown, path: JsonPath): unknown {
  return path.reduce<unknown>(childOf, value);
}

/** A deep copy of `root`, and the copy's container that holds the last step of `path`. */
function copyToParent(
  root: Record<string, unknown>,
  path: JsonPath,
): { copy: Record<string, unknown>; parent: unknown; last: string | number } {
  const copy = structuredClone(root);
  const last = path.at(-1);
  if (last === undefined) throw new Error('the root has no parent');
  return { copy, parent: at(copy, path.slice(0, -1)), last };
}

function replaced(root: Record<string, unknown>, path: JsonPath, rawJson: string): string {
  const { copy, parent, last } = copyToParent(root, path);
  if (Array.isArray(parent) && typeof last === 'number') parent[last] = RAW_VALUE;
  else if (isRecord(parent) && typeof last === 'string') parent[last] = RAW_VALUE;
  return JSON.stringify(copy).replace(`"${RAW_VALUE}"`, () => rawJson);
}

function removed(root: Record<string, unknown>, path: JsonPath): string {
  const { copy, parent, last } = copyToParent(root, path);
  if (Array.isArray(parent) && typeof last === 'number') parent.splice(last, 1);
  else if (isRecord(parent) && typeof last === 'string') delete parent[last];
  return JSON.stringify(copy);
}

/** The array at `path` with its last element once more at its end. */
function grown(root: Record<string, unknown>, path: JsonPath): string {
  const copy = structuredClone(root);
  const array = at(copy, path);
  if (Array.isArray(array) && array.length > 0) array.push(structuredClone(array.at(-1)));
  return JSON.stringify(copy);
}

/** The object at `path` with one more member, written after the others: a later duplicate wins. */
function withMember(
  root: Record<string, unknown>,
  path: JsonPath,
  name: string,
  rawJson: string,
): string {
  const copy = structuredClone(root);
  const target = at(copy, path);
  if (isRecord(target)) target[RAW_KEY] = RAW_VALUE;
  return JSON.stringify(copy)
    .replace(`"${RAW_KEY}"`, () => JSON.stringify(name))
    .replace(`"${RAW_VALUE}"`, () => rawJson);
}

function pooled(label: string, body: string | Buffer, authorization: string): PooledCase {
  return {
    transport: 'pool',
    label,
    body: typeof body === 'string' ? Buffer.from(body) : body,
    headers: { authorization, 'content-type': 'application/json' },
  };
}

/** Every field replaced, removed or duplicated, arrays grown and unknown fields added. */
function fieldCases(request: ValidRequest, authorization: string): PooledCase[] {
  const { name, body } = request;
  const cases: PooledCase[] = [];
  for (const path of pathsOf(body)) {
    const field = labelOf(path);
    for (const value of REPLACEMENTS) {
      const shown = value.length > 40 ? `${value.slice(0, 20)}…(${value.length} chars)` : value;
      cases.push(
        pooled(`${name}: ${field} = ${shown}`, replaced(body, path, value), authorization),
      );
    }
    cases.push(pooled(`${name}: ${field} removed`, removed(body, path), authorization));
    const value = at(body, path);
    if (Array.isArray(value)) {
      cases.push(pooled(`${name}: ${field} grown by one`, grown(body, path), authorization));
    }
    const parentPath = path.slice(0, -1);
    const last = path.at(-1);
    if (typeof last === 'string') {
      for (const duplicate of [JSON.stringify(value), '"duplicate"']) {
        cases.push(
          pooled(
            `${name}: ${field} duplicated as ${duplicate.slice(0, 40)}`,
            withMember(body, parentPath, last, duplicate),
            authorization,
          ),
        );
      }
    }
  }
  for (const path of objectPathsOf(body)) {
    for (const unknown of UNKNOWN_NAMES) {
      cases.push(
        pooled(
          `${name}: ${labelOf(path)} with unknown field ${JSON.stringify(unknown.slice(0, 40))}`,
          withMember(body, path, unknown, '1'),
          authorization,
        ),
      );
    }
  }
  return cases;
}

/** The JSON text cut short, at fixed and at seeded points. */
function truncatedCases(
  request: ValidRequest,
  authorization: string,
  random: () => number,
): PooledCase[] {
  const text = JSON.stringify(request.body);
  const points = new Set([1, 2, text.length - 1, text.length - 2]);
  while (points.size < 14) points.add(1 + Math.floor(random() * (text.length - 1)));
  return [...points].map((point) =>
    pooled(
      `${request.name}: JSON cut after ${point} of ${text.length} chars`,
      text.slice(0, point),
      authorization,
    ),
  );
}

/** One random byte of the JSON text set to a random value: mostly broken JSON or strings. */
function flippedByteCases(
  request: ValidRequest,
  authorization: string,
  random: () => number,
): PooledCase[] {
  const bytes = Buffer.from(JSON.stringify(request.body));
  return Array.from({ length: 40 }, () => {
    const position = Math.floor(random() * bytes.length);
    const value = Math.floor(random() * 256);
    const bent = Buffer.from(bytes);
    bent[position] = value;
    return pooled(
      `${request.name}: byte ${position} of ${bytes.length} set to 0x${value.toString(16)}`,
      bent,
      authorization,
    );
  });
}

/** Bodies that are not one JSON object, or one object with something around it. */
function wholeBodyCases(request: ValidRequest, authorization: string): PooledCase[] {
  const text = JSON.stringify(request.body);
  const bodies: [string, string | Buffer][] = [
    ['the body in an array', `[${text}]`],
    ['a string', '"a red fox"'],
    ['a number', '42'],
    ['true', 'true'],
    ['null', 'null'],
    ['an empty array', '[]'],
    ['an empty object', '{}'],
    ['whitespace', '  \n\t '],
    ['a byte order mark first', `\uFEFF${text}`],
    ['trailing garbage', `${text}x`],
    ['two objects', `${text}${text}`],
    ['a NUL byte after', `${text}\u0000`],
    [
      'an invalid UTF-8 byte in a string',
      Buffer.from(text.replace('"user"', '"us\u00ffer"'), 'latin1'),
    ],
    ['a UTF-16 body', Buffer.from(text, 'utf16le')],
    ['nested objects', `${'{"a":'.repeat(DEEP_NESTING)}1${'}'.repeat(DEEP_NESTING)}`],
  ];
  return bodies.map(([what, body]) => pooled(`${request.name}: ${what}`, body, authorization));
}

type HeaderLine = readonly [string, string];

/** A change to the header lines of a valid request. */
interface HeaderBend {
  label: string;
  bend(lines: HeaderLine[]): HeaderLine[];
  /** Content-Length as sent; the true length when absent. */
  contentLength?(bodyLength: number): string | undefined;
  halfClose?: boolean;
  mayStayUnanswered?: boolean;
}

function setHeader(name: string, value: string | undefined) {
  return (lines: HeaderLine[]): HeaderLine[] => {
    const others = lines.filter(([line]) => line.toLowerCase() !== name.toLowerCase());
    return value === undefined ? others : [...others, [name, value]];
  };
}

function addHeader(name: string, value: string) {
  return (lines: HeaderLine[]): HeaderLine[] => [...lines, [name, value]];
}

function headerBends(authorization: string, random: () => number): HeaderBend[] {
  const token = authorization.slice('Bearer '.length);
  const garbage = Array.from({ length: 24 }, () =>
    String.fromCharCode(33 + Math.floor(random() * 94)),
  ).join('');
  const contentTypes: [string, string | undefined][] = [
    ['missing', undefined],
    ['empty', ''],
    ['text/plain', 'text/plain'],
    ['latin1 charset', 'application/json; charset=latin1'],
    ['utf-16 charset', 'application/json; charset=utf-16'],
    ['multipart', 'multipart/form-data; boundary=xyz'],
    ['form', 'application/x-www-form-urlencoded'],
    ['upper case', 'APPLICATION/JSON'],
    ['a near miss', 'application/jsonx'],
    ['a list', 'application/json, text/plain'],
    ['any', '*/*'],
    ['unicode', 'application/json; charset=ünï'],
  ];
  const authorizations: [string, string | undefined][] = [
    ['missing', undefined],
    ['empty', ''],
    ['"Bearer"', 'Bearer'],
    ['"Bearer "', 'Bearer '],
    ['Basic', 'Basic x'],
    ['lower-case scheme', `bearer ${token}`],
    ['token with garbage after', `${authorization}${garbage}`],
    ['token with a garbage signature', `${authorization.slice(0, -8)}${garbage.slice(0, 8)}`],
    ['garbage token', `Bearer ${garbage}`],
    ['three dots', 'Bearer ...'],
    ['non-ASCII token', `Bearer ${token}é🦊`],
    ['a 6000-char token', `Bearer ${'a'.repeat(6000)}`],
  ];
  const idempotencyKeys: [string, string][] = [
    ['empty', ''],
    ['300 chars', 'k'.repeat(300)],
    ['non-ASCII', 'ключ-🦊'],
    ['spaces', 'a key with spaces'],
    ['a tab', 'a\tkey'],
  ];
  const requestIds: [string, string][] = [
    ['spaces', 'a request id'],
    ['non-ASCII', 'запрос-🦊'],
    ['129 chars', 'r'.repeat(129)],
    ['quotes and angle brackets', '"><script>'],
    ['JSON', '{"code":"x"}'],
    ['percent signs', '%00%0d%0a'],
    ['empty', ''],
  ];
  return [
    ...contentTypes.map(([what, value]) => ({
      label: `Content-Type ${what}`,
      bend: setHeader('Content-Type', value),
    })),
    ...authorizations.map(([what, value]) => ({
      label: `Authorization ${what}`,
      bend: setHeader('Authorization', value),
    })),
    {
      label: 'Authorization twice',
      bend: addHeader('Authorization', 'Bearer other'),
    },
    ...idempotencyKeys.map(([what, value]) => ({
      label: `Idempotency-Key ${what}`,
      bend: setHeader('Idempotency-Key', value),
    })),
    {
      label: 'Idempotency-Key twice',
      bend: (lines: HeaderLine[]) => [
        ...lines,
        ['Idempotency-Key', 'one'],
        ['Idempotency-Key', 'two'],
      ],
    },
    ...requestIds.map(([what, value]) => ({
      label: `X-Request-Id ${what}`,
      bend: setHeader('X-Request-Id', value),
    })),
    {
      label: 'Content-Length shorter than the body',
      bend: (lines: HeaderLine[]) => lines,
      contentLength: (length: number) => String(Math.max(1, length - 7)),
    },
    {
      label: 'Content-Length 1',
      bend: (lines: HeaderLine[]) => lines,
      contentLength: () => '1',
    },
    {
      label: 'Content-Length 0',
      bend: (lines: HeaderLine[]) => lines,
      contentLength: () => '0',
    },
    {
      label: 'Content-Length longer than the body, upload cut short',
      bend: (lines: HeaderLine[]) => lines,
      contentLength: (length: number) => String(length + 100),
      halfClose: true,
    },
    {
      label: 'Content-Length longer than the body, client waits',
      bend: (lines: HeaderLine[]) => lines,
      contentLength: (length: number) => String(length + 100),
      mayStayUnanswered: true,
    },
    {
      label: 'Content-Length of 10 GB',
      bend: (lines: HeaderLine[]) => lines,
      contentLength: () => String(10 * 1024 ** 3),
    },
    {
      label: 'Content-Length not a number',
      bend: (lines: HeaderLine[]) => lines,
      contentLength: () => 'abc',
    },
    {
      label: 'Content-Length negative',
      bend: (lines: HeaderLine[]) => lines,
      contentLength: () => '-1',
    },
    {
      label: 'Content-Length missing',
      bend: (lines: HeaderLine[]) => lines,
      contentLength: () => undefined,
    },
    {
      label: 'two different Content-Lengths',
      bend: addHeader('Content-Length', '3'),
    },
    {
      label: 'Content-Length and Transfer-Encoding',
      bend: addHeader('Transfer-Encoding', 'chunked'),
    },
  ];
}

function headerCases(
  request: ValidRequest,
  authorization: string,
  random: () => number,
): SocketCase[] {
  const body = Buffer.from(JSON.stringify(request.body));
  return headerBends(authorization, random).map((bend) => {
    const lines = bend.bend([
      ['Host', '127.0.0.1'],
      ['Authorization', authorization],
      ['Content-Type', 'application/json'],
    ]);
    const contentLength =
      bend.contentLength === undefined ? String(body.length) : bend.contentLength(body.length);
    const all =
      contentLength === undefined ? lines : [...lines, ['Content-Length', contentLength] as const];
    return {
      transport: 'socket',
      label: `${request.name}: ${bend.label}`,
      head: `POST ${GENERATION_URL} HTTP/1.1\r\n${all.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`,
      body,
      halfClose: bend.halfClose ?? false,
      mayStayUnanswered: bend.mayStayUnanswered ?? false,
    };
  });
}

/** A few thousand bent requests, the same ones for the same fixtures. */
export function bentCases(fixtures: CaseFixtures): BentCase[] {
  const random = seededRandom(fixtures.seed);
  const { authorization } = fixtures;
  return validRequests(fixtures.imageDataUrl).flatMap((request) => [
    ...fieldCases(request, authorization),
    ...truncatedCases(request, authorization, random),
    ...flippedByteCases(request, authorization, random),
    ...wholeBodyCases(request, authorization),
    ...headerCases(request, authorization, random),
  ]);
}

/** The valid requests themselves, for the warm-up. */
export function validCases(fixtures: CaseFixtures): PooledCase[] {
  return validRequests(fixtures.imageDataUrl).map((request) =>
    pooled(`${request.name}: valid`, JSON.stringify(request.body), fixtures.authorization),
  );
}
