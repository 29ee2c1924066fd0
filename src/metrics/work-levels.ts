/**
 * What the metrics read of a bounded pool of work at scrape time (URL fetches, local render
 * jobs): how many hold a place now and how many wait for one.
 */
export interface WorkLevels {
  running: number;
  waiting: number;
}

export const NO_WORK: WorkLevels = { running: 0, waiting: 0 };
