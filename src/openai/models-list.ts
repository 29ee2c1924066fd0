import { aliasesOf, type ModelAliases } from '../domain/model-aliases.js';
import { MODEL_IDS, type ModelId } from '../domain/models.js';

/** One entry of OpenAI's models list. */
export interface OpenAiModel {
  id: string;
  object: 'model';
  created: number;
  owned_by: 'imagegate';
}

export interface OpenAiModelList {
  object: 'list';
  data: OpenAiModel[];
}

/** A fixed date (2025-01-01) rather than the process start, so every node answers alike. */
const MODELS_CREATED = 1_735_689_600;

/** The ids a caller may name: every model id and its aliases, filtered to what the token may use. */
export function modelIdsFor(
  allowed: readonly ModelId[] | undefined,
  aliases: ModelAliases,
): string[] {
  return MODEL_IDS.filter((id) => allowed === undefined || allowed.includes(id)).flatMap((id) => [
    id,
    ...aliasesOf(id, aliases),
  ]);
}

export function modelEntry(id: string): OpenAiModel {
  return { id, object: 'model', created: MODELS_CREATED, owned_by: 'imagegate' };
}

export function modelList(ids: readonly string[]): OpenAiModelList {
  return { object: 'list', data: ids.map(modelEntry) };
}
