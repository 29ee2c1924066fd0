import { type Static, type TObject, type TPartial, Type } from '@sinclair/typebox';
import {
  type Checked,
  compileSchemaChecker,
  type SchemaChecker,
  type SchemaCheckerOptions,
  type SchemaProblem,
} from '../validate/schema-check.js';
import { HTTP_BASE_URL_FORMAT, isHttpBaseUrl } from './channel-schemas.js';
import { isMapping, type Mapping } from './mapping.js';

export type Failure = { ok: false; problems: SchemaProblem[] };

export interface EntryFields<S extends TObject> {
  /** The fields the entry gives, empty ones left out. */
  given: Mapping;
  checked: Checked<Static<S>>;
  /** The fields that passed, which the rules relating fields read even when others failed. */
  sound: Partial<Static<S>>;
}

const OPTIONS: SchemaCheckerOptions = {
  allProblems: true,
  unknownMember: 'is an unknown setting',
  formats: { [HTTP_BASE_URL_FORMAT]: isHttpBaseUrl },
};

/**
 * One schema of a `channels` entry, compiled once. A field left empty in YAML (`priority:`)
 * counts as absent; an empty field the schema does not know is still reported. An entry's
 * problems are listed in the order of the schema's fields, whichever rule found them.
 */
export class ChannelEntryCheck<S extends TObject> {
  private readonly whole: SchemaChecker<S>;
  private readonly fields: SchemaChecker<TPartial<S>>;
  private readonly fieldOrder: readonly string[];

  constructor(private readonly schema: S) {
    this.whole = compileSchemaChecker(schema, OPTIONS);
    this.fields = compileSchemaChecker(Type.Partial(schema), OPTIONS);
    this.fieldOrder = Object.keys(schema.properties);
  }

  check(entry: Mapping): EntryFields<S> {
    const given = this.withoutEmptyFields(entry);
    const checked = this.whole(given);
    if (checked.ok) return { given, checked, sound: checked.value };
    const failed = new Set(checked.problems.map((problem) => fieldOf(problem.path)));
    const sound = this.fields(
      Object.fromEntries(Object.entries(given).filter(([field]) => !failed.has(field))),
    );
    return { given, checked, sound: sound.ok ? sound.value : {} };
  }

  /** The problems of an entry that cannot pass, such as one without a known type. */
  problemsOf(entry: unknown): Failure {
    return this.failure(this.whole(isMapping(entry) ? this.withoutEmptyFields(entry) : entry));
  }

  /** Every problem `found` holds, in the order of the entry's fields. */
  failure(...found: (Checked<unknown> | SchemaProblem[])[]): Failure {
    const problems = found.flatMap((result) =>
      Array.isArray(result) ? result : result.ok ? [] : result.problems,
    );
    return { ok: false, problems: problems.sort((a, b) => this.rank(a) - this.rank(b)) };
  }

  private rank(problem: SchemaProblem): number {
    const index = this.fieldOrder.indexOf(fieldOf(problem.path));
    return index === -1 ? this.fieldOrder.length : index;
  }

  private withoutEmptyFields(entry: Mapping): Mapping {
    return Object.fromEntries(
      Object.entries(entry).filter(
        ([field, value]) => value !== null || !Object.hasOwn(this.schema.properties, field),
      ),
    );
  }
}

/** `sizes[0]` -> `sizes`: the entry's field a problem's path starts in. */
function fieldOf(path: string): string {
  return path.split(/[.[]/, 1)[0] ?? path;
}
