export type ImageFormat = 'jpeg' | 'png' | 'bmp' | 'webp';

/** What an input image's checked header says, and where the image is in the request. */
export interface ImageFacts {
  /** JSON path of the content item, for error messages. */
  path: string;
  format: ImageFormat;
  width: number;
  height: number;
}

/**
 * An input image whose header has been checked. Its bytes are produced on first use: an image
 * that came as a data URL and is forwarded as one (DashScope) is never decoded whole.
 */
export interface LoadedImage extends ImageFacts {
  /** The image's bytes; the same Buffer on every call. */
  bytes(): Buffer;
}
