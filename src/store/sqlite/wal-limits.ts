/**
 * SQLite's own autocheckpoint size, in pages of the write-ahead log: where the inline checkpoint
 * runs, and where the background one starts the log over.
 */
export const AUTOCHECKPOINT_PAGES = 1000;

/**
 * A log file that a burst (or checkpoints that could not run) grew past this is cut back to it by
 * the first commit after the log starts over; below it, the file is kept and written over. A log
 * this long that cannot start over is held by something, and is reported.
 */
export const WAL_FILE_LIMIT_BYTES = 64 * 1024 * 1024;
