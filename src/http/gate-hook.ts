import type { FastifyInstance } from 'fastify';
import type { RequestGate } from '../admission/admission.js';

/**
 * Rate and concurrency limits in `onRequest`, after authentication and before the body is read:
 * a caller over its limits is refused without uploading anything. A concurrency slot is held
 * until the connection's answer is over, whatever its end.
 */
export function gateRequests(scope: FastifyInstance, gate: RequestGate): void {
  scope.addHook('onRequest', async (request, reply) => {
    const { principal, account } = request;
    if (principal === undefined || account === undefined) return;
    const pass = await gate.pass(principal, account);
    reply.raw.once('close', () => void pass.release());
  });
}
