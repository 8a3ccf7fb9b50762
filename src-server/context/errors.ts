/** Why a run's project path cannot be read; a run that fails on it shows `ProjectPathError: <message>`. */
export class ProjectPathError extends Error {
  override name = 'ProjectPathError';
}
