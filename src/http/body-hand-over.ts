import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { CallerGone } from '../errors/caller-gone.js';
import type { UnbilledGeneration } from '../generation/generation-service.js';
import type { GenerationOutcome } from '../ledger/generation-outcome.js';

/**
 * True once every byte of the answer was accepted by its connection (the response's `finish`),
 * false when the connection closed first. Not `writableFinished`: it also reads true once the
 * socket that took the answer was destroyed before confirming the write, and then no `finish`
 * comes. Asked before the answer is sent.
 */
function handedOver(response: ServerResponse): Promise<boolean> {
  if (response.closed || response.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    const finished = () => {
      response.off('close', closed);
      resolve(true);
    };
    const closed = () => {
      response.off('finish', finished);
      resolve(false);
    };
    response.once('finish', finished);
    response.once('close', closed);
  });
}

/**
 * The end of an answer that carries images' bytes, read from `images`: once it is over they are
 * closed, and its images are billed if it was handed over whole; a caller gone before that is
 * billed nothing. A bill that fails after the hand-over cannot take the images back: they stay
 * delivered unbilled, as the outcome says, and a warning tells. A replay (no `unbilled`) was
 * billed by the request it repeats. Call it before the answer is sent. Never rejects.
 */
export async function endOfBodyAnswer(
  reply: FastifyReply,
  images: readonly Readable[],
  unbilled: UnbilledGeneration,
): Promise<GenerationOutcome>;
export async function endOfBodyAnswer(
  reply: FastifyReply,
  images: readonly Readable[],
  unbilled: undefined,
): Promise<undefined>;
export async function endOfBodyAnswer(
  reply: FastifyReply,
  images: readonly Readable[],
  unbilled: UnbilledGeneration | undefined,
): Promise<GenerationOutcome | undefined> {
  const whole = await handedOver(reply.raw);
  // Even in the middle of an image whose bytes stopped coming.
  for (const image of images) image.destroy();
  if (unbilled === undefined) return undefined;
  if (!whole) return unbilled.release(new CallerGone());
  const outcome = await unbilled.billHandedOver();
  if (outcome.code === 'DeliveredUnbilled')
    reply.log.warn(
      'an answer was handed over and its bill failed: its images were delivered unbilled',
    );
  return outcome;
}
