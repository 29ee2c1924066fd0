import type { InputImage } from '../domain/generation-request.js';
import type { LoadedImage } from '../domain/loaded-image.js';

/**
 * Loads the bytes of input images (data URLs decoded once, http(s) URLs fetched concurrently
 * behind the address guard), sniffs their format and checks format, size and dimensions.
 * Throws GatewayError InvalidImage or InvalidURL naming the item's path.
 */
export interface InputLoader {
  load(images: readonly InputImage[], signal: AbortSignal): Promise<LoadedImage[]>;
}
