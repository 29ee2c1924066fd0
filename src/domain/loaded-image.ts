export type ImageFormat = 'jpeg' | 'png' | 'bmp' | 'webp';

/** An input image whose bytes are in memory and whose header has been checked. */
export interface LoadedImage {
  /** JSON path of the content item, for error messages. */
  path: string;
  format: ImageFormat;
  width: number;
  height: number;
  bytes: Buffer;
}
