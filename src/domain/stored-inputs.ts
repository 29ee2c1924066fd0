/**
 * An input image read from the gateway's own storage instead of over HTTP: `found` with its
 * bytes, or `refused` with why (the inputs stage names the item in its InvalidURL error).
 */
export type StoredInputRead =
  | { kind: 'found'; bytes: Buffer }
  | { kind: 'too-large'; size: number }
  | { kind: 'refused'; problem: string };

/** Who may resolve `oss://` keys in one request (docs/api.md §12.3). */
export interface UploadAccess {
  /** The request carried `X-DashScope-OssResourceResolve: enable`. */
  resolve: boolean;
  /** The caller's token id; uploads are bound to it. Undefined: the token has none. */
  owner: string | undefined;
}

/** Input images the gateway holds itself: uploads and its own signed result URLs. */
export interface StoredInputs {
  /**
   * Reads the image behind one of the gateway's signed image URLs (a previous result), after
   * checking its signature and expiry; undefined when `url` is not one of ours.
   */
  readResultUrl(url: string, maxBytes: number): Promise<StoredInputRead | undefined>;
  /** Reads the upload `key` (of `oss://<key>`) if `owner` uploaded it and it has not expired. */
  readUpload(key: string, owner: string, maxBytes: number): Promise<StoredInputRead>;
}
