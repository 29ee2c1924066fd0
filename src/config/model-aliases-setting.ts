import { Type } from '@sinclair/typebox';
import { DEFAULT_MODEL_ALIASES, type ModelAliases } from '../domain/model-aliases.js';
import { isModelId, MODEL_IDS, type ModelId } from '../domain/models.js';
import { compileSchemaChecker } from '../validate/schema-check.js';
import { isMapping } from './mapping.js';
import type { SettingParser } from './setting-types.js';

const MODEL_LIST = MODEL_IDS.join(' or ');

const AliasMap = Type.Record(
  Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}$' }),
  Type.Unsafe<ModelId>({
    type: 'string',
    enum: [...MODEL_IDS],
    'x-error': { type: `must be ${MODEL_LIST}`, enum: `must be ${MODEL_LIST}` },
  }),
  {
    additionalProperties: false,
    'x-error': { type: 'must be a mapping of alias to model id' },
  },
);

const checkAliasMap = compileSchemaChecker(AliasMap, {
  allProblems: true,
  unknownMember:
    'is not an alias name: up to 100 letters, digits and ". _ : / -", starting with a letter or digit',
});

/**
 * `model_aliases`, a mapping of alias to model id in the config file, added to (and overriding)
 * the built-in aliases. An alias that is itself a model id would hide that model, so it is refused.
 */
export function modelAliasesSetting(): SettingParser<ModelAliases> {
  return (raw) => {
    const checked = checkAliasMap(raw);
    const problems = checked.ok
      ? []
      : checked.problems.map((problem) =>
          problem.path === '' ? problem.text : `${JSON.stringify(problem.path)} ${problem.text}`,
        );
    for (const alias of isMapping(raw) ? Object.keys(raw) : [])
      if (isModelId(alias))
        problems.push(`${JSON.stringify(alias)} is a model id, so it cannot be an alias`);
    if (!checked.ok || problems.length > 0) return { ok: false, problem: problems.join('; ') };
    return {
      ok: true,
      value: new Map([...DEFAULT_MODEL_ALIASES, ...Object.entries(checked.value)]),
    };
  };
}
