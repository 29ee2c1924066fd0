import type { InputImage } from '../domain/generation-request.js';
import type { LoadedImage } from '../domain/loaded-image.js';
import type { UploadAccess } from '../domain/stored-inputs.js';
import type { Cancellation } from '../support/cancellation.js';

/** A request without `X-DashScope-OssResourceResolve: enable`: no `oss://` key resolves. */
export const NO_UPLOAD_ACCESS: UploadAccess = { resolve: false, owner: undefined };

/**
 * Loads input images (data URLs checked, their bytes decoded only when used; files uploaded with
 * the request as they are; http(s) URLs fetched concurrently behind the address guard; our own
 * result URLs and the caller's uploads read from storage), sniffs their format and checks format,
 * size and dimensions.
 * Throws GatewayError InvalidImage or InvalidURL naming the item's path.
 */
export interface InputLoader {
  load(
    images: readonly InputImage[],
    signal: Cancellation,
    uploads?: UploadAccess,
  ): Promise<LoadedImage[]>;
}
