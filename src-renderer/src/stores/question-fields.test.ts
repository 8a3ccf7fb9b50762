import { describe, expect, it } from 'vitest';
import { answerContent, initialValues, localDateTime, questionFields } from './question-fields';

/** `ask_release` of the asking server the tests run (test/fixtures/mcp-asking-server.ts). */
const RELEASE = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Release name', minLength: 1 },
    count: { type: 'integer', title: 'How many', minimum: 1 },
  },
  required: ['name'],
};

describe("the fields of a tool server's question", () => {
  it('makes one field per property, in order, labelled by its title or else its name, required as listed', () => {
    const fields = questionFields({
      ...RELEASE,
      properties: { ...RELEASE.properties, note: { type: 'string', description: 'For the changelog.' } },
    });
    expect(fields.map((f) => [f.name, f.label, f.required, f.kind])).toEqual([
      ['name', 'Release name', true, 'text'],
      ['count', 'How many', false, 'number'],
      ['note', 'note', false, 'text'],
    ]);
    expect(fields[2]!.description).toBe('For the changelog.');
    expect(fields[1]).toMatchObject({ integer: true, minimum: 1, maximum: null, default: '' });
  });

  it('gives each string format the input a browser has for it, and keeps lengths', () => {
    const fields = questionFields({
      type: 'object',
      properties: {
        mail: { type: 'string', format: 'email' },
        site: { type: 'string', format: 'uri' },
        day: { type: 'string', format: 'date' },
        at: { type: 'string', format: 'date-time' },
        code: { type: 'string', format: 'hostname', minLength: 2, maxLength: 8 },
      },
    });
    expect(fields.map((f) => f.kind === 'text' && f.input)).toEqual(['email', 'url', 'date', 'datetime-local', 'text']);
    expect(fields[4]).toMatchObject({ minLength: 2, maxLength: 8 });
  });

  it('reads a choice from enum (with enumNames) and from oneOf, and a multi-select from an array of either', () => {
    const fields = questionFields({
      type: 'object',
      properties: {
        size: { type: 'string', enum: ['s', 'l'], enumNames: ['Small', 'Large'], default: 'l' },
        tone: { type: 'string', oneOf: [{ const: 'calm', title: 'Calm' }, { const: 'bold' }] },
        tags: { type: 'array', items: { type: 'string', enum: ['api', 'ui'] }, minItems: 1, maxItems: 2 },
        teams: { type: 'array', items: { anyOf: [{ const: 't1', title: 'Team one' }] }, default: ['t1'] },
        ok: { type: 'boolean', default: true },
      },
    });
    expect(fields).toMatchObject([
      {
        kind: 'choice',
        options: [
          { value: 's', label: 'Small' },
          { value: 'l', label: 'Large' },
        ],
        default: 'l',
      },
      {
        kind: 'choice',
        options: [
          { value: 'calm', label: 'Calm' },
          { value: 'bold', label: 'bold' },
        ],
        default: '',
      },
      { kind: 'choices', options: [{ value: 'api' }, { value: 'ui' }], minItems: 1, maxItems: 2, default: [] },
      { kind: 'choices', options: [{ value: 't1', label: 'Team one' }], default: ['t1'] },
      { kind: 'boolean', default: true },
    ]);
    expect(initialValues(fields)).toEqual({ size: 'l', tone: '', tags: [], teams: ['t1'], ok: true });
  });

  it('asks nothing of a schema without properties', () => {
    expect(questionFields(null)).toEqual([]);
    expect(questionFields({ type: 'object' })).toEqual([]);
  });

  it('shows a date-time default in local time, and sends what is typed back as an instant', () => {
    const iso = '2026-03-01T09:30:00.000Z';
    const schema = { type: 'object', properties: { at: { type: 'string', format: 'date-time', default: iso } } };
    const fields = questionFields(schema);
    expect(fields[0]!.default).toBe(localDateTime(iso));
    expect(answerContent(schema, fields, initialValues(fields)).content).toEqual({ at: iso });
  });
});

describe("the answer to a tool server's question", () => {
  const fields = questionFields(RELEASE);

  it('says which required field is empty, and sends nothing then', () => {
    expect(answerContent(RELEASE, fields, { name: '  ', count: '' })).toEqual({
      content: {},
      problems: { name: 'Required.' },
    });
  });

  it('types numbers as the schema does, leaves empty optional fields out, and checks the bounds', () => {
    expect(answerContent(RELEASE, fields, { name: 'v2.1', count: '3' })).toEqual({
      content: { name: 'v2.1', count: 3 },
      problems: {},
    });
    expect(answerContent(RELEASE, fields, { name: 'v2.1', count: '' }).content).toEqual({ name: 'v2.1' });
    // A number input's model holds a number once one is typed.
    expect(answerContent(RELEASE, fields, { name: 'v2.1', count: 4 }).content).toEqual({ name: 'v2.1', count: 4 });
    expect(answerContent(RELEASE, fields, { name: 'v2.1', count: '0' }).problems).toEqual({ count: 'At least 1.' });
    expect(answerContent(RELEASE, fields, { name: 'v2.1', count: '1.5' }).problems).toEqual({
      count: 'Enter a whole number.',
    });
  });

  it('checks the choices made and always sends a box, ticked or not', () => {
    const schema = {
      type: 'object',
      properties: {
        tags: { type: 'array', items: { enum: ['api', 'ui', 'db'] }, maxItems: 2 },
        ok: { type: 'boolean' },
        size: { type: 'string', enum: ['s', 'l'] },
      },
      required: ['size'],
    };
    const form = questionFields(schema);
    expect(answerContent(schema, form, { tags: ['api', 'ui', 'db'], ok: false, size: '' }).problems).toEqual({
      tags: 'Choose at most 2.',
      size: 'Choose one.',
    });
    expect(answerContent(schema, form, { tags: [], ok: false, size: 's' })).toEqual({
      content: { ok: false, size: 's' },
      problems: {},
    });
  });

  it("gives the server's validator the last word, each problem at its field", () => {
    const schema = { type: 'object', properties: { mail: { type: 'string', format: 'email' } } };
    expect(answerContent(schema, questionFields(schema), { mail: 'not a mail' }).problems).toEqual({
      mail: 'String does not match format "email".',
    });
  });
});
