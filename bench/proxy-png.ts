import { crc32, deflateSync } from 'node:zlib';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * An opaque RGB PNG of one grey, built by hand so that the fake upstream needs nothing but node.
 * `stored` keeps the pixels uncompressed, so the file's size follows from its dimensions.
 */
export function greyPng(width: number, height: number, stored = false): Buffer {
  const row = Buffer.alloc(1 + width * 3, 0x80);
  row[0] = 0; // filter type "none"
  const pixels = Buffer.concat(Array.from({ length: height }, () => row));
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit truecolour, no interlace
  return Buffer.concat([
    SIGNATURE,
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(pixels, stored ? { level: 0 } : {})),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** The largest such PNG of the given width that is at most `maxBytes` long. */
export function largestGreyPng(width: number, maxBytes: number): Buffer {
  let height = Math.floor(maxBytes / (1 + width * 3));
  for (;;) {
    const png = greyPng(width, height, true);
    if (png.length <= maxBytes) return png;
    height -= 1;
  }
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typed));
  return Buffer.concat([length, typed, crc]);
}
