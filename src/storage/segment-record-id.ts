import type { SegmentRecord } from './segment-appender.js';

const OFFSET_DIGITS = 7;
const LENGTH_DIGITS = 5;
/** 36^5 - 1 bytes; a record is never larger (see DiskBlobStore). */
export const MAX_SEGMENT_RECORD_BYTES = 36 ** LENGTH_DIGITS - 1;
/** 36^7 - 1: more than any segment reaches (it is closed past its limit, a few GiB at most). */
const MAX_OFFSET = 36 ** OFFSET_DIGITS - 1;
/**
 * `<tag>_<offset>_<length>`, offset and length in base 36 of fixed width: 26 characters, so it
 * is never mistaken for a file's id, which has 24.
 */
const RECORD_ID_PATTERN = /^([A-Za-z0-9]{12})_([0-9a-z]{7})_([0-9a-z]{5})$/;

/** The id under which a record is known: where it lies, in the URL-safe alphabet of ids. */
export function segmentRecordId(record: SegmentRecord): string {
  if (record.offset > MAX_OFFSET || record.length > MAX_SEGMENT_RECORD_BYTES)
    throw new RangeError(`a segment record at ${record.offset} of ${record.length} bytes`);
  return `${record.tag}_${record.offset.toString(36).padStart(OFFSET_DIGITS, '0')}_${record.length
    .toString(36)
    .padStart(LENGTH_DIGITS, '0')}`;
}

/** The record an id names, or undefined when the id is not a segment record's. */
export function parseSegmentRecordId(id: string): SegmentRecord | undefined {
  const match = RECORD_ID_PATTERN.exec(id);
  if (match === null) return undefined;
  return {
    tag: match[1] as string,
    offset: parseInt(match[2] as string, 36),
    length: parseInt(match[3] as string, 36),
  };
}
