/** A BMP the decoder cannot read; the engine answers it as the caller's 400 InvalidImage. */
export class BmpDecodeError extends Error {
  constructor(problem: string) {
    super(`BMP ${problem}`);
    this.name = 'BmpDecodeError';
  }
}
