/** A YAML mapping or JSON object, as the config file holds settings and channel entries. */
export type Mapping = Record<string, unknown>;

export function isMapping(value: unknown): value is Mapping {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
