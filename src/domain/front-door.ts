/**
 * The protocol a request came in by, as the usage ledger records it. Every generation route is a
 * front door; the DashScope routes are the first, and the default of a request's accounting.
 */
export const DASHSCOPE_FRONT_DOOR = 'dashscope';
/** A DashScope request sent with `X-DashScope-Async: enable`, run as a task. */
export const DASHSCOPE_TASK_FRONT_DOOR = 'dashscope-task';
/** The OpenAI-compatible image routes. */
export const OPENAI_FRONT_DOOR = 'openai';
