import assert from 'node:assert/strict';
import { constants, mkdtemp, readdir, readFile, readlink, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SegmentAppender, segmentFileName } from '../../src/storage/segment-appender.js';

describe('SegmentAppender', () => {
  let root: string;
  before(async () => {
    // Resolved, as /proc/self/fd shows the paths of open files.
    root = await realpath(await mkdtemp(path.join(tmpdir(), 'imagegate-appender-')));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  function appender(maxSegmentBytes = 1024 * 1024): SegmentAppender {
    return new SegmentAppender(root, { maxSegmentBytes, recheckAfterMs: 1000, now: Date.now });
  }

  it('lays the records of a burst end to end, in the order they were appended', async () => {
    const segments = appender();
    try {
      const records = await Promise.all(
        Array.from({ length: 50 }, (_, index) =>
          segments.append('burst', Buffer.alloc(10 + index, index)),
        ),
      );
      const [first] = records;
      assert.ok(first);
      assert.ok(records.every((record) => record.tag === first.tag));
      assert.equal(first.offset, 0);
      for (let index = 1; index < records.length; index += 1) {
        const previous = records[index - 1];
        assert.ok(previous);
        assert.equal(records[index]?.offset, previous.offset + previous.length);
      }
      const file = await readFile(path.join(root, 'burst', segmentFileName(first.tag)));
      for (const [index, record] of records.entries())
        assert.deepEqual(
          file.subarray(record.offset, record.offset + record.length),
          Buffer.alloc(10 + index, index),
        );
    } finally {
      await segments.close();
    }
  });

  it('writes each segment through a descriptor opened with O_DSYNC, so a write returns durable', async (t) => {
    const durable = (constants as { O_DSYNC?: number }).O_DSYNC;
    if (durable === undefined || process.platform !== 'linux') {
      t.skip('reads the descriptor flags from /proc: Linux only');
      return;
    }
    const segments = appender();
    try {
      const { tag } = await segments.append('flags', Buffer.from('durable'));
      const file = path.join(root, 'flags', segmentFileName(tag));
      const descriptors = await readdir('/proc/self/fd');
      const links = await Promise.all(
        descriptors.map(async (fd) => ({
          fd,
          target: await readlink(`/proc/self/fd/${fd}`).catch(() => ''),
        })),
      );
      const open = links.find(({ target }) => target === file);
      assert.ok(open, 'the segment stays open for the next records');
      const info = await readFile(`/proc/self/fdinfo/${open.fd}`, 'utf8');
      const flags = Number.parseInt(/^flags:\s+([0-7]+)$/m.exec(info)?.[1] ?? '', 8);
      assert.equal(flags & durable, durable, `flags ${flags.toString(8)} lack O_DSYNC`);
    } finally {
      await segments.close();
    }
  });

  it('opens a new segment once one passes its size limit', async () => {
    const segments = appender(1000);
    try {
      const records = [];
      for (let index = 0; index < 5; index += 1)
        records.push(await segments.append('rotating', Buffer.alloc(600, index)));
      // 600 bytes fit under 1000; the second record passes it and closes the segment.
      assert.equal(new Set(records.map((record) => record.tag)).size, 3);
      assert.equal((await readdir(path.join(root, 'rotating'))).length, 3);
      assert.deepEqual(
        records.map((record) => record.offset),
        [0, 600, 0, 600, 0],
      );
    } finally {
      await segments.close();
    }
  });

  it('writes to several folders at once, and keeps each folder’s records in its own segment', async () => {
    const segments = appender();
    try {
      const folders = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'];
      const records = await Promise.all(
        folders.map((folder) => segments.append(folder, Buffer.from(folder))),
      );
      // Again after more folders than are kept open: the earliest ones start new segments.
      const again = await Promise.all(
        folders.map((folder) => segments.append(folder, Buffer.from(`${folder} again`))),
      );
      for (const [index, folder] of folders.entries()) {
        for (const [record, bytes] of [
          [records[index], folder],
          [again[index], `${folder} again`],
        ] as const) {
          assert.ok(record);
          const file = await readFile(path.join(root, folder, segmentFileName(record.tag)));
          assert.equal(
            file.subarray(record.offset, record.offset + record.length).toString(),
            bytes,
          );
        }
      }
    } finally {
      await segments.close();
    }
  });

  it('refuses records once closed', async () => {
    const segments = appender();
    await segments.append('closing', Buffer.from('before'));
    await segments.close();
    await assert.rejects(segments.append('closing', Buffer.from('after')), /closed/);
  });

  it('fails records queued before a close, opening no segment for them', async () => {
    const segments = appender();
    // The group runs on a later turn, after close has begun.
    const queued = segments.append('queued', Buffer.from('late'));
    await segments.close();
    await assert.rejects(queued, /closed/);
    assert.deepEqual(await readdir(path.join(root, 'queued')).catch(() => []), []);
  });
});
