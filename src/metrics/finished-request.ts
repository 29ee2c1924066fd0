/** Where a request's time went, in milliseconds. */
export interface StageTimes {
  /** From arrival to the answer. */
  totalMs: number;
  /** The total less the upstream's part: the gateway's own overhead, storage included. */
  gatewayMs: number;
  /** Time spent in upstream channels; undefined when no engine ran. */
  upstreamMs: number | undefined;
  /** Time the results stage spent storing images; undefined when it stored none. */
  storageMs: number | undefined;
  queueMs: number | undefined;
}

/** How one request ended, as the metrics count it. */
export interface FinishedRequest {
  /** The matched route's pattern, such as `/images/:file`; undefined when no route matched. */
  route: string | undefined;
  method: string;
  /** The status answered, or 499 when the caller left before the answer. */
  status: number;
  /** The error code answered, or `CallerGone`; undefined for a success. */
  code: string | undefined;
  model: string | undefined;
  /** The channel that served (or was tried last), when an engine ran. */
  channel: string | undefined;
  imagesDelivered: number;
  imagesBilled: number;
  /** Known for requests the gateway accounts for (the generation routes), past authentication. */
  times: StageTimes | undefined;
}
