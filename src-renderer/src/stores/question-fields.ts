import type { AnswerQuestionBody } from '@contracts/tool-questions';
import { argumentProblems } from '@contracts/tool-arguments';

/**
 * The form a tool server's question asks to be filled in (MCP elicitation, docs/approvals.md#questions-from-tool-
 * servers): its `requested_schema` is a flat JSON Schema object whose properties are strings (with a length and a
 * format), numbers, booleans, a choice of strings, or a list of such choices. Each becomes one field of the form, in
 * the schema's order; what a person types is turned back into the answer the schema describes, checked first here
 * with what a person can fix, then with the validator the server checks the answer with.
 */

export interface FieldOption {
  value: string;
  label: string;
}

interface FieldBase {
  name: string;
  /** The property's title, else its name. */
  label: string;
  description: string | null;
  required: boolean;
}

/** An input's type per string format; a format the browser has no input for is typed as text. */
const INPUT_OF_FORMAT: Record<string, TextField['input']> = {
  email: 'email',
  uri: 'url',
  date: 'date',
  'date-time': 'datetime-local',
};

export type TextField = FieldBase & {
  kind: 'text';
  input: 'text' | 'email' | 'url' | 'date' | 'datetime-local';
  minLength: number | null;
  maxLength: number | null;
  default: string;
};
export type NumberField = FieldBase & {
  kind: 'number';
  integer: boolean;
  minimum: number | null;
  maximum: number | null;
  default: string;
};
export type BooleanField = FieldBase & { kind: 'boolean'; default: boolean };
export type ChoiceField = FieldBase & { kind: 'choice'; options: FieldOption[]; default: string };
export type ChoicesField = FieldBase & {
  kind: 'choices';
  options: FieldOption[];
  minItems: number | null;
  maxItems: number | null;
  default: string[];
};
export type QuestionField = TextField | NumberField | BooleanField | ChoiceField | ChoicesField;

/**
 * What the form holds for each field, by name: text as typed, a box ticked or not, the options chosen. A number input
 * holds a number once one is typed (Vue's v-model casts it), and an empty string again when cleared.
 */
export type FieldValues = Record<string, string | number | boolean | string[]>;

/** The fields of an accepted answer, as the server takes them. */
type AnswerContent = NonNullable<AnswerQuestionBody['content']>;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown): string | null => (typeof value === 'string' && value.trim() ? value : null);
const count = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

/**
 * The options of a choice: `enum` (labelled by `enumNames` where given, the older form) or `oneOf`/`anyOf` of
 * `{const, title}`; null when the property offers none.
 */
function optionsOf(property: Json): FieldOption[] | null {
  if (Array.isArray(property.enum)) {
    const names = Array.isArray(property.enumNames) ? property.enumNames : [];
    return property.enum.map((value, i) => ({ value: String(value), label: text(names[i]) ?? String(value) }));
  }
  const titled = Array.isArray(property.oneOf) ? property.oneOf : Array.isArray(property.anyOf) ? property.anyOf : null;
  if (!titled) return null;
  return titled.filter(isObject).map((option) => ({
    value: String(option.const),
    label: text(option.title) ?? String(option.const),
  }));
}

/** "2026-03-01T09:30:00Z" as a `datetime-local` input shows it, in the person's own time zone. */
export function localDateTime(iso: string): string {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return (
    `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}` +
    `T${pad(at.getHours())}:${pad(at.getMinutes())}`
  );
}

function fieldOf(name: string, property: Json, required: boolean): QuestionField {
  const base: FieldBase = {
    name,
    label: text(property.title) ?? name,
    description: text(property.description),
    required,
  };
  const fallback = property.default;
  if (property.type === 'array') {
    const items = isObject(property.items) ? property.items : {};
    return {
      ...base,
      kind: 'choices',
      options: optionsOf(items) ?? [],
      minItems: count(property.minItems),
      maxItems: count(property.maxItems),
      default: Array.isArray(fallback) ? fallback.map(String) : [],
    };
  }
  const options = optionsOf(property);
  if (options) return { ...base, kind: 'choice', options, default: typeof fallback === 'string' ? fallback : '' };
  if (property.type === 'boolean') return { ...base, kind: 'boolean', default: fallback === true };
  if (property.type === 'number' || property.type === 'integer')
    return {
      ...base,
      kind: 'number',
      integer: property.type === 'integer',
      minimum: count(property.minimum),
      maximum: count(property.maximum),
      default: count(fallback) === null ? '' : String(fallback),
    };
  const input = INPUT_OF_FORMAT[String(property.format)] ?? 'text';
  const typed = typeof fallback === 'string' ? fallback : '';
  return {
    ...base,
    kind: 'text',
    input,
    minLength: count(property.minLength),
    maxLength: count(property.maxLength),
    default: input === 'datetime-local' && typed ? localDateTime(typed) : typed,
  };
}

/** The fields a question's schema asks for, in its order; none for a schema that is not an object's. */
export function questionFields(schema: Record<string, unknown> | null): QuestionField[] {
  if (!schema || !isObject(schema.properties)) return [];
  const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
  return Object.entries(schema.properties).map(([name, property]) =>
    fieldOf(name, isObject(property) ? property : {}, required.has(name)),
  );
}

/** The form as it opens: each field's default, else empty (a box not ticked, nothing chosen). */
export function initialValues(fields: readonly QuestionField[]): FieldValues {
  return Object.fromEntries(
    fields.map((field) => [field.name, Array.isArray(field.default) ? [...field.default] : field.default]),
  );
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** One field's value as the answer carries it, or what is wrong with it; `undefined`: left out (an empty field). */
function valueOf(
  field: QuestionField,
  raw: FieldValues[string] | undefined,
): { value?: AnswerContent[string]; problem?: string } {
  switch (field.kind) {
    case 'boolean':
      return { value: raw === true };
    case 'choices': {
      const chosen = Array.isArray(raw) ? raw : [];
      if (field.required && chosen.length === 0) return { problem: 'Choose at least one.' };
      if (field.minItems !== null && chosen.length < field.minItems)
        return { problem: `Choose at least ${field.minItems}.` };
      if (field.maxItems !== null && chosen.length > field.maxItems)
        return { problem: `Choose at most ${field.maxItems}.` };
      return chosen.length || field.required ? { value: chosen } : {};
    }
    default:
      break;
  }
  const typed = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw : '';
  if (!typed.trim()) return field.required ? { problem: field.kind === 'choice' ? 'Choose one.' : 'Required.' } : {};
  if (field.kind === 'choice') return { value: typed };
  if (field.kind === 'number') {
    const number = Number(typed);
    if (!Number.isFinite(number)) return { problem: 'Enter a number.' };
    if (field.integer && !Number.isInteger(number)) return { problem: 'Enter a whole number.' };
    if (field.minimum !== null && number < field.minimum) return { problem: `At least ${field.minimum}.` };
    if (field.maximum !== null && number > field.maximum) return { problem: `At most ${field.maximum}.` };
    return { value: number };
  }
  if (field.minLength !== null && typed.length < field.minLength)
    return { problem: `At least ${plural(field.minLength, 'character')}.` };
  if (field.maxLength !== null && typed.length > field.maxLength)
    return { problem: `At most ${plural(field.maxLength, 'character')}.` };
  if (field.input === 'datetime-local') {
    const at = new Date(typed);
    return Number.isNaN(at.getTime()) ? { problem: 'Enter a date and time.' } : { value: at.toISOString() };
  }
  return { value: typed };
}

/**
 * The answer the form makes: the fields filled in, typed as the schema types them (empty optional fields left out),
 * or, per field, what keeps it from being sent. A problem the schema's validator finds that no field owns is kept
 * under `''`.
 */
export function answerContent(
  schema: Record<string, unknown> | null,
  fields: readonly QuestionField[],
  values: FieldValues,
): { content: AnswerContent; problems: Record<string, string> } {
  const content: AnswerContent = {};
  const problems: Record<string, string> = {};
  for (const field of fields) {
    const { value, problem } = valueOf(field, values[field.name]);
    if (problem) problems[field.name] = problem;
    else if (value !== undefined) content[field.name] = value;
  }
  if (Object.keys(problems).length || !schema) return { content, problems };
  for (const line of argumentProblems(schema, content)) {
    const [, name = '', message = line] = /^\/([^/:]*)[^:]*: (.*)$/.exec(line) ?? [];
    const owner = fields.some((field) => field.name === name) ? name : '';
    problems[owner] ??= message;
  }
  return { content, problems };
}
