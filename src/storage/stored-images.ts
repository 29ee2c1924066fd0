import type { Readable } from 'node:stream';
import type { BlobStore } from './blob-store.js';
import { objectKeyOf } from './object-keys.js';
import type { ImageUrlSigner } from './signed-url.js';

/** Reads generated images back from storage by the signed URLs the results stage handed out. */
export interface StoredImages {
  /**
   * The image's bytes as a stream (the caller consumes or destroys it), or undefined when the URL
   * is not a valid signed URL of ours or the image is gone.
   */
  open(url: string): Promise<Readable | undefined>;
}

/** Checks the URL as the image route would, then streams the object from the blob store. */
export function storedImages(blobs: BlobStore, urls: ImageUrlSigner): StoredImages {
  return {
    async open(url) {
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        return undefined;
      }
      const file = parsed.pathname.slice(parsed.pathname.lastIndexOf('/') + 1);
      const checked = urls.check(
        file,
        parsed.searchParams.get('expires') ?? undefined,
        parsed.searchParams.get('signature') ?? undefined,
      );
      if (!checked.ok) return undefined;
      const blob = await blobs.get(objectKeyOf(checked.image.id, checked.image.expiresAt));
      return blob?.stream;
    },
  };
}
