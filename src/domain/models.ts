export const MODEL_A = 'gen-2.7-image-pro';
export const MODEL_B = 'txt-image-2.0-pro';
export const MODEL_IDS = [MODEL_A, MODEL_B] as const;
export type ModelId = (typeof MODEL_IDS)[number];

export function isModelId(value: unknown): value is ModelId {
  return value === MODEL_A || value === MODEL_B;
}
