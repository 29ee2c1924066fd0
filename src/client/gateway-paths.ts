import { GENERATION_PATH, OPENAI_ROOT, TASKS_PATH, UPLOADS_PATH } from '../domain/api-paths.js';

/**
 * The gateway's routes a client calls: the bare paths, which every gateway answers whatever its
 * route prefix (docs/api.md §1.1), so a base URL with or without `/vendor` works.
 */
export const GATEWAY_PATHS = {
  generation: GENERATION_PATH,
  tasks: TASKS_PATH,
  uploads: UPLOADS_PATH,
  openAiGenerations: `${OPENAI_ROOT}/images/generations`,
  openAiEdits: `${OPENAI_ROOT}/images/edits`,
} as const;
