import type { Readable } from 'node:stream';

function leftToReaders(): void {}

/**
 * An `error` event that no listener takes ends the process. Some streams fail while nobody reads
 * them yet, or any more: a request body that a refused request never read and whose caller then
 * went away, an image opened to be read after another one. This listener keeps such a failure from
 * ending the process; the stream is still destroyed with the error, so whoever reads it later (an
 * async iterator, a pipe) sees it.
 */
export function leaveErrorsToReaders(stream: Readable): void {
  stream.on('error', leftToReaders);
}

/** Reads a stream that nobody wants to its end and drops its bytes, whatever its end. */
export function discard(stream: Readable): void {
  leaveErrorsToReaders(stream);
  stream.resume();
}
