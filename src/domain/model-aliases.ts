import { isModelId, MODEL_A, MODEL_B, type ModelId } from './models.js';

/** Other names callers may give a model: alias -> model id. */
export type ModelAliases = ReadonlyMap<string, ModelId>;

/** The names the models are published under upstream, accepted without configuration. */
export const DEFAULT_MODEL_ALIASES: ModelAliases = new Map<string, ModelId>([
  ['wan2.7-image-pro', MODEL_A],
  ['qwen-image-2.0-pro', MODEL_B],
]);

/** The model `name` denotes, by its id or an alias; undefined for anything else. */
export function resolveModel(name: unknown, aliases: ModelAliases): ModelId | undefined {
  if (isModelId(name)) return name;
  return typeof name === 'string' ? aliases.get(name) : undefined;
}

/** The aliases of `model`, in the order they were given. */
export function aliasesOf(model: ModelId, aliases: ModelAliases): string[] {
  return [...aliases].filter(([, target]) => target === model).map(([alias]) => alias);
}
