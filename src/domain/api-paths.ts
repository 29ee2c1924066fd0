export const GENERATION_PATH = '/api/v1/services/aigc/multimodal-generation/generation';

/** The route under the configured prefix, and bare, so DashScope SDKs pointed at us work unchanged. */
export function generationPaths(routePrefix: string): string[] {
  return routePrefix === ''
    ? [GENERATION_PATH]
    : [`${routePrefix}${GENERATION_PATH}`, GENERATION_PATH];
}
