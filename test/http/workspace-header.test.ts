import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { BACKENDS } from '../helpers/database-backends.js';
import { generationHead, rawExchange } from '../helpers/raw-http.js';
import { GENERATION_URL, modelBBody } from '../helpers/requests.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const BODY = JSON.stringify(modelBBody({ size: '512*512' }));

async function runningGateway(t: TestContext, targetFor: (typeof BACKENDS)[number][1]) {
  const database = await targetFor(t);
  if (database === undefined) return undefined;
  const gateway = await startTestGateway({ database });
  t.after(() => gateway.close());
  const port = Number(new URL(await gateway.listen()).port);
  return { gateway, port, authorization: await gateway.bearer() };
}

/** The ledger row of the request `requestId`, once written. */
async function rowOf(gateway: TestGateway, requestId: string) {
  await gateway.admission.ledger.flush();
  const rows = await gateway.admission.usage.list({}, 100);
  const row = rows.find((entry) => entry.requestId === requestId);
  assert.ok(row, `no ledger row for ${requestId}`);
  return row;
}

for (const [backend, targetFor] of BACKENDS) {
  describe(`X-DashScope-WorkSpace on ${backend}`, () => {
    it('is recorded in the ledger row with the DashScope front door; absent or empty, none is', async (t) => {
      const running = await runningGateway(t, targetFor);
      if (running === undefined) return;
      const { gateway, port, authorization } = running;
      const cases: [string, Record<string, string>, string | undefined][] = [
        ['ws-named', { 'X-DashScope-WorkSpace': 'llm-3zkz2 team/a' }, 'llm-3zkz2 team/a'],
        ['ws-longest', { 'X-DashScope-WorkSpace': 'w'.repeat(64) }, 'w'.repeat(64)],
        ['ws-absent', {}, undefined],
        ['ws-empty', { 'X-DashScope-WorkSpace': '' }, undefined],
      ];
      for (const [requestId, headers, recorded] of cases) {
        const answer = await rawExchange(
          port,
          generationHead(GENERATION_URL, authorization, Buffer.byteLength(BODY), {
            'X-Request-Id': requestId,
            ...headers,
          }),
          { body: BODY },
        );
        assert.equal(answer.status, 200, `${requestId}: ${answer.body}`);
        const row = await rowOf(gateway, requestId);
        assert.equal(row.workspace, recorded, requestId);
        assert.equal(row.frontDoor, 'dashscope');
        assert.equal(row.imagesBilled, 1);
      }
    });

    it('refuses a malformed workspace with 400 naming the header, before the body and unbilled', async (t) => {
      const running = await runningGateway(t, targetFor);
      if (running === undefined) return;
      const { gateway, port, authorization } = running;
      const cases: [string, string][] = [
        ['ws-too-long', `X-DashScope-WorkSpace: ${'w'.repeat(65)}`],
        ['ws-not-ascii', 'X-DashScope-WorkSpace: caf\u00e9'],
        ['ws-twice', 'X-DashScope-WorkSpace: one\r\nx-dashscope-workspace: two'],
      ];
      for (const [requestId, header] of cases) {
        // The body is never sent: the refusal comes from the head alone.
        const head = generationHead(GENERATION_URL, authorization, Buffer.byteLength(BODY), {
          'X-Request-Id': requestId,
        }).replace(/\r\n\r\n$/, `\r\n${header}\r\n\r\n`);
        const answer = await rawExchange(port, head, { waitForCloseMs: 3000 });
        assert.equal(answer.status, 400, requestId);
        assert.deepEqual(JSON.parse(answer.body), {
          code: 'InvalidParameter',
          message:
            'X-DashScope-WorkSpace: must be one header of at most 64 printable ASCII characters',
          request_id: requestId,
        });
        assert.ok(
          answer.closedByServer,
          `${requestId}: the unsent body is waited for a second at most`,
        );
        const row = await rowOf(gateway, requestId);
        assert.equal(row.status, 400);
        assert.equal(row.errorCode, 'InvalidParameter');
        assert.equal(row.workspace, undefined);
        assert.equal(row.imagesBilled, 0);
      }
    });
  });
}
