import { createHmac } from 'node:crypto';

/** Separate keys for separate purposes, all derived from the one operator secret. */
export interface DerivedKeys {
  tokenSigning: Uint8Array;
  imageUrlSigning: Uint8Array;
  /** Upload certificates (policies) and the owner tags in upload keys. */
  uploadSigning: Uint8Array;
}

export function deriveKeys(secret: string): DerivedKeys {
  const derive = (purpose: string) =>
    new Uint8Array(createHmac('sha256', secret).update(`imagegate/${purpose}/v1`).digest());
  return {
    tokenSigning: derive('token-signing'),
    imageUrlSigning: derive('image-url-signing'),
    uploadSigning: derive('upload-signing'),
  };
}
