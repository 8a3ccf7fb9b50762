/**
 * Who did something, in people's words. The API names its built-in callers by their login names: `api-token` for
 * whoever holds the API token (the per-launch token, `SVC_API_TOKEN`, or a personal token it made) and `anonymous`
 * for everyone while sign-in is off; the studio says what they are instead.
 */
const BUILT_IN_NAMES: Record<string, string> = {
  'api-token': 'the API token',
  anonymous: 'the anonymous administrator',
};

export const personName = (name: string): string => BUILT_IN_NAMES[name] ?? name;

/** "Ada", "Ada and Ben", "Ada, Ben and the API token". */
export function peopleList(names: readonly string[]): string {
  const people = names.map(personName);
  return people.length <= 1 ? (people[0] ?? '') : `${people.slice(0, -1).join(', ')} and ${people.at(-1)}`;
}
