import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GENERATION_URL } from '../helpers/requests.js';
import { type PersistentSend, sendWholeBodyAnyway } from '../helpers/persistent-sender.js';
import {
  startTokenedGatewayProcess,
  type TokenedGatewayProcess,
} from '../helpers/tokened-gateway-process.js';

const MIB = 1024 * 1024;
/** Callers at once, and rounds of them: 200 callers per kind of early answer. */
const CALLERS = 8;
const ROUNDS = 25;

function headOf(lines: string[]): string {
  return `${lines.join('\r\n')}\r\n`;
}

/** The head of a JSON POST to `url` with `authorization`, and any more header lines. */
function jsonPostHead(url: string, authorization: string, ...more: string[]): string {
  return headOf([
    `POST ${url} HTTP/1.1`,
    'Host: 127.0.0.1',
    `Authorization: ${authorization}`,
    'Content-Type: application/json',
    ...more,
  ]);
}

/** What one kind of early answer is sent, and the statuses its callers may see. */
interface EarlyAnswer {
  name: string;
  send: (gateway: TokenedGatewayProcess) => PersistentSend;
  statuses: number[];
}

const BODY = Buffer.alloc(MIB, 0x61);

const EARLY_ANSWERS: EarlyAnswer[] = [
  {
    name: '401: no valid token',
    send: () => ({
      head: jsonPostHead(GENERATION_URL, 'Bearer not-a-token'),
      body: BODY,
      framing: 'length',
    }),
    statuses: [401],
  },
  {
    name: '413: declared over the body limit',
    send: (gateway) => ({
      head: jsonPostHead('/v1/images/generations', gateway.authorization),
      body: Buffer.alloc(2 * MIB, 0x61),
      framing: 'length',
    }),
    statuses: [413],
  },
  {
    name: '415: an upload that is not a form',
    send: () => ({
      head: headOf([
        'POST /vendor/api/v1/uploads HTTP/1.1',
        'Host: 127.0.0.1',
        'Content-Type: text/plain',
      ]),
      body: BODY,
      framing: 'length',
    }),
    statuses: [415],
  },
  {
    name: '400: an edit that is not multipart, chunked',
    send: (gateway) => ({
      head: jsonPostHead('/v1/images/edits', gateway.authorization),
      body: BODY,
      framing: 'chunked',
    }),
    statuses: [400],
  },
  {
    name: '400: chunks the HTTP parser refuses',
    send: (gateway) => ({
      head: jsonPostHead(GENERATION_URL, gateway.authorization, 'Transfer-Encoding: chunked'),
      body: Buffer.concat([Buffer.from('zz\r\n'), BODY]),
      framing: 'as-is',
    }),
    statuses: [400],
  },
  {
    // The budget holds one body of the limit: the others of a round are refused before theirs.
    name: '503: over the in-flight body budget',
    send: (gateway) => ({
      head: jsonPostHead(GENERATION_URL, gateway.authorization),
      body: BODY,
      framing: 'length',
    }),
    // The one admitted is read whole, and is not JSON.
    statuses: [503, 400],
  },
];

describe('an answer sent before the body was read reaches callers that keep sending', () => {
  let gateway: TokenedGatewayProcess;
  before(async () => {
    gateway = await startTokenedGatewayProcess({
      IMAGEGATE_MAX_BODY_BYTES: String(MIB + 1024),
      IMAGEGATE_MAX_INFLIGHT_BODY_BYTES: String(MIB + 1024),
    });
  });
  after(() => gateway.stop());

  for (const early of EARLY_ANSWERS)
    it(`${early.name}: every caller reads the whole answer`, async () => {
      const seen = new Map<string, number>();
      for (let round = 0; round < ROUNDS; round++) {
        const answers = await Promise.all(
          Array.from({ length: CALLERS }, () =>
            sendWholeBodyAnyway(gateway.port, early.send(gateway)),
          ),
        );
        for (const answer of answers) {
          const outcome =
            answer.whole && early.statuses.includes(answer.status)
              ? `${answer.status}`
              : `${answer.status} ${answer.whole ? 'whole' : 'cut'} (${answer.ending}) ${answer.body}`;
          seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
        }
      }
      const unexpected = [...seen].filter(([outcome]) => !/^\d{3}$/.test(outcome));
      assert.deepEqual(unexpected, [], `of ${CALLERS * ROUNDS} callers`);
      assert.ok(seen.has(String(early.statuses[0])), [...seen.keys()].join(', '));
      assert.equal(gateway.child.exitCode, null, gateway.stderr());
    });
});
