export const GENERATION_PATH = '/api/v1/services/aigc/multimodal-generation/generation';
/** DashScope's path for image tasks; synchronous too without `X-DashScope-Async: enable`. */
export const IMAGE_GENERATION_PATH = '/api/v1/services/aigc/image-generation/generation';
export const TASKS_PATH = '/api/v1/tasks';

/** The route under the configured prefix, and bare, so DashScope SDKs pointed at us work unchanged. */
export function generationPaths(routePrefix: string): string[] {
  return underPrefix(routePrefix, GENERATION_PATH);
}

/** Both generation endpoints, each under the prefix and bare. */
export function allGenerationPaths(routePrefix: string): string[] {
  return [...generationPaths(routePrefix), ...underPrefix(routePrefix, IMAGE_GENERATION_PATH)];
}

/** `path` under the configured prefix, and bare. */
export function underPrefix(routePrefix: string, path: string): string[] {
  return routePrefix === '' ? [path] : [`${routePrefix}${path}`, path];
}

/** The OpenAI-compatible routes' root: `baseURL: "http://HOST:PORT/v1"` in an OpenAI SDK. */
export const OPENAI_ROOT = '/v1';

/** OpenAI roots under the configured prefix, and bare, as for the DashScope route. */
export function openAiRoots(routePrefix: string): string[] {
  return routePrefix === '' ? [OPENAI_ROOT] : [`${routePrefix}${OPENAI_ROOT}`, OPENAI_ROOT];
}

export const UPLOADS_PATH = '/api/v1/uploads';

/** The upload certificate and upload route (docs/api.md §12), under the prefix and bare. */
export function uploadPaths(routePrefix: string): string[] {
  return routePrefix === '' ? [UPLOADS_PATH] : [`${routePrefix}${UPLOADS_PATH}`, UPLOADS_PATH];
}
